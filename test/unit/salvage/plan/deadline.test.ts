/** The deadline-aware transfer order of salvage (core/flows/salvage: byValuePerByte, planAgainstDeadline). */
import assert from 'node:assert/strict';
import {
  BATCH_BYTES,
  BATCH_FILES,
  SalvageItem,
  byValuePerByte,
  planAgainstDeadline,
  planBatches,
} from '../../../../src/core/flows/salvage';

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

  it('plans tar batches: even, a multiple of the streams, within the file and byte bounds, order kept', () => {
    const files = (n: number, size = 8192) => Array.from({ length: n }, (_, i) => ({ i, size }));
    const check = (bs: Array<Array<{ i: number; size: number }>>, all: Array<{ i: number }>) => {
      assert.deepEqual(
        bs.flat().map((f) => f.i),
        all.map((f) => f.i),
      );
      for (const b of bs) {
        assert.ok(b.length <= BATCH_FILES);
        assert.ok(b.length === 1 || b.reduce((a, f) => a + f.size, 0) <= BATCH_BYTES);
      }
    };
    const a = files(5000);
    const bs = planBatches(a, 3);
    check(bs, a);
    assert.equal(bs.length % 3, 0);
    assert.ok(Math.max(...bs.map((b) => b.length)) - Math.min(...bs.map((b) => b.length)) <= 1, 'even batches');
    assert.equal(planBatches(a, 4).length, 4);
    assert.equal(planBatches(files(2 * BATCH_FILES + 1), 1).length, 3);
    // Few files: fewer streams, never empty batches.
    assert.equal(planBatches(files(30), 4).length, 1);
    assert.equal(planBatches(files(120), 4).length, 2);
    assert.deepEqual(planBatches([], 3), []);
    // The byte bound cuts too: 40 files of 4 MiB.
    const big = files(40, 4 * 1024 * 1024);
    check(planBatches(big, 3), big);
  });
});
