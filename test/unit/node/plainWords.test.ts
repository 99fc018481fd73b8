import * as assert from 'node:assert/strict';
import { isErrorState, plainState } from '../../../src/core/node/plainWords';

describe('plainWords: the guard states as people read them', () => {
  it('no internal names: "crashed (crash)", "gpu-lost (gpu)", "deadline-near" are gone', () => {
    assert.equal(plainState('crashed', 'crash'), 'crashed');
    assert.equal(plainState('crashed', 'oom'), 'crashed: out of GPU memory');
    assert.equal(plainState('crashed', 'nccl'), 'crashed: NCCL (GPU communication) error');
    assert.equal(plainState('gpu-lost', 'gpu'), 'GPU lost');
    assert.equal(plainState('deadline-near', undefined, 'the rental ended 1 min ago'), 'rental ended');
    assert.equal(plainState('deadline-near', undefined, 'the rental ends in 20 min'), 'rental ends soon');
    assert.equal(plainState('rental-ended', undefined, 'the rental ended 1 min ago'), 'rental ended');
    assert.equal(plainState('job-overrun', undefined, ''), 'the job ends after the rental');
    assert.equal(plainState('stalled', 'hang'), 'hung (no progress)');
    for (const s of ['gpu-lost', 'rank-lost', 'deadline-near', 'kv-pressure', 'dp-imbalance', 'accept-drop', 'disk-full'])
      assert.notEqual(plainState(s, null, ''), s, s);
  });

  it('error severity for crash, OOM, NCCL and a lost GPU; warning for the rest', () => {
    assert.ok(isErrorState('crashed', 'crash'));
    assert.ok(isErrorState('crashed', 'oom'));
    assert.ok(isErrorState('crashed', 'nccl'));
    assert.ok(isErrorState('gpu-lost', 'gpu'));
    assert.ok(isErrorState('rank-lost', 'crash'), 'a multi-node server that lost a rank has failed');
    assert.ok(!isErrorState('stalled', 'hang'));
    assert.ok(!isErrorState('kv-pressure', 'kv-pressure'));
    assert.ok(!isErrorState('deadline-near'));
  });
});
