/** The deadline-aware transfer order of salvage (core/salvage/salvage: byValuePerByte, planAgainstDeadline). */
import assert from 'node:assert/strict';
import { SalvageItem, byValuePerByte, planAgainstDeadline } from '../../../src/core/salvage/salvage';

const item = (remotePath: string, kind: string, step: string, size: number) => ({ remotePath, kind, step, size }) as unknown as SalvageItem;

describe('deadline-aware salvage order (issue 17, item 4)', () => {
  it('value per byte: progress, scripts and configs, logs, then bulk data; smaller first within a class', () => {
    const items = [
      item('/w/completions/batch_2.jsonl', 'data', 'data', 9_000_000),
      item('/w/server.log', 'log', 'logs', 50_000),
      item('/w/completions/batch_1.jsonl', 'data', 'data', 2_000_000),
      item('/w/run.sh', 'script', 'scripts', 900),
      item('/w/progress.json', 'progress', 'logs', 300),
      item('/w/config.yaml', 'config', 'configs', 400),
      item('/w/big.log', 'log', 'logs', 5_000_000),
    ];
    assert.deepEqual(
      items.sort(byValuePerByte).map((i) => i.remotePath.split('/').pop()),
      ['progress.json', 'config.yaml', 'run.sh', 'server.log', 'big.log', 'batch_1.jsonl', 'batch_2.jsonl'],
    );
  });

  const now = Date.parse('2026-12-01T12:00:00Z');
  const at = new Date(now + 100_000); // 100 s left
  const data = [item('/d/a', 'data', 'data', 40e6), item('/d/b', 'data', 'data', 50e6), item('/d/c', 'data', 'data', 30e6)];

  it('at the measured rate: what would still travel when the rental ends is named, in transfer order', () => {
    const p = planAgainstDeadline(data, at, now, 1e6); // 1 MB/s: 100 MB fit, the third file ends at 120 s
    assert.equal(p.secondsLeft, 100);
    assert.equal(p.remainingBytes, 120e6);
    assert.equal(p.etaS, 120);
    assert.equal(p.fits, false);
    assert.deepEqual(
      p.wontMakeIt.map((w) => w.remotePath),
      ['/d/c'],
    );
    const fast = planAgainstDeadline(data, at, now, 2e6);
    assert.equal(fast.fits, true);
    assert.deepEqual(fast.wontMakeIt, []);
  });

  it('an unknown rate says so; a rental already over names everything left', () => {
    const unknown = planAgainstDeadline(data, at, now, null);
    assert.equal(unknown.fits, null);
    assert.equal(unknown.etaS, null);
    const over = planAgainstDeadline(data, new Date(now - 1000), now, 5e6);
    assert.equal(over.fits, false);
    assert.equal(over.wontMakeIt.length, 3);
  });
});
