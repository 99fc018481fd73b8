import assert from 'node:assert/strict';
import { PhaseTimer, formatTimings } from '../../../../src/core/salvage/report/timings';

describe('salvage timings (PhaseTimer)', () => {
  it('adds the pipeline figures (idle, writerIdle) and the process CPU time beside the phases', () => {
    let now = 0;
    const t = new PhaseTimer(0, () => now);
    t.start('transfer');
    now = 1000;
    t.stop('transfer');
    t.note('idle', 120.4);
    t.note('idle', 80);
    t.note('writerIdle', 300);
    const r = t.result();
    assert.equal(r.transfer, 1000);
    assert.equal(r.idle, 200);
    assert.equal(r.writerIdle, 300);
    assert.ok(Number.isInteger(r.cpu) && r.cpu! > 0);
    assert.match(formatTimings(r), /transfer 1000 · .* · idle 200 · writerIdle 300 · cpu \d+ ms$/);
  });

  it('leaves the pipeline figures out when nothing was transferred', () => {
    const r = new PhaseTimer(0, () => 5).result();
    assert.equal(r.idle, undefined);
    assert.equal(r.writerIdle, undefined);
  });
});
