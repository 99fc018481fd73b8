import assert from 'node:assert/strict';
import { RANK_STALE_MS, StatsTracker, formatLoad, sumFreshRanks } from '../../../src/core/sglang/liveStats';
import type { StatRecord } from '../../../src/core/sglang/logLines';

describe('liveStats: StatsTracker', () => {
  const dec = (ts: string, rank: string, gen: number, run = 32, accept?: number) =>
    `[2026-01-01 ${ts}${rank ? ' ' + rank : ''}] Decode batch, #running-req: ${run}, #token: 90000, token usage: 0.40, ${accept !== undefined ? `accept len: ${accept.toFixed(2)}, ` : ''}cuda graph: True, gen throughput (token/s): ${gen.toFixed(2)}, #queue-req: 1, `;

  it('node throughput is the sum over files and DP ranks of the latest decode line (not an average)', () => {
    let now = 1_000_000;
    const st = new StatsTracker({ now: () => now });
    st.feed('gpu0.log', dec('00:00:01', '', 1000));
    st.feed('gpu0.log', dec('00:00:02', '', 1987.4, 32, 2.71)); // latest wins
    st.feed('gpu1.log', dec('00:00:01', 'DP0 TP0', 500, 10));
    st.feed('gpu1.log', dec('00:00:01', 'DP1 TP1', 700, 12));
    st.feed(
      'gpu1.log',
      '[2026-01-01 00:00:01 DP1 TP1] Prefill batch, #new-seq: 1, #new-token: 10, #cached-token: 0, token usage: 0.1, #running-req: 3, #queue-req: 0, ',
    );
    const tot = st.total();
    assert.equal(Math.round(tot.genThroughput * 100) / 100, 1987.4 + 500 + 700);
    assert.equal(tot.runningReqs, 32 + 10 + 12);
    assert.equal(tot.queueReqs, 3);
    assert.equal(tot.servers, 2);
    assert.equal(st.stats('gpu1.log')!.ranks.size, 2);
    assert.equal(st.describe('gpu0.log'), '1,987 tok/s · 32 run · 1 queue · accept 2.71');
    assert.equal(st.describe('gpu1.log'), '1,200 tok/s · 22 run · 2 queue · 2 ranks');
    // staleness: gpu1 keeps printing, gpu0 falls silent
    now += 100_000;
    st.feed('gpu1.log', dec('00:01:41', 'DP0 TP0', 600, 10));
    now += 30_000;
    const t2 = st.total();
    assert.equal(t2.genThroughput, 600, 'gpu0 (130 s old) and DP1 (130 s old) are stale; DP0 (30 s old) counts');
    assert.equal(t2.servers, 1);
    assert.equal(st.describe('gpu0.log'), 'idle · no decode line for 2 min');
  });

  it('tracks readiness, errors and restarts', () => {
    const st = new StatsTracker();
    assert.equal(st.describe('x'), 'no lines yet');
    st.feed('x', '[2026-01-01 00:00:00] The server is fired up and ready to roll!');
    st.feed('x', dec('00:00:01', '', 100));
    st.feed('x', 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.');
    const s = st.stats('x')!;
    assert.equal(s.ready, true);
    assert.equal(s.errors, 1);
    assert.match(s.lastError!, /OutOfMemoryError/);
    assert.match(st.describe('x'), /100 tok\/s · 32 run · 1 queue · 1 error$/);
    st.feed('x', '[2026-01-01 00:05:00] INFO:     Started server process [1234]');
    assert.equal(st.stats('x')!.ready, false);
    assert.equal(st.total().genThroughput, 0, 'a restarted server no longer counts its old figures');
  });
});

describe('liveStats: sumFreshRanks (the one per-rank total)', () => {
  const stat = (gen: number | null, run: number | null, queue: number | null, acceptLen: number | null = null) =>
    ({ genThroughput: gen, runningReqs: run, queueReqs: queue, acceptLen }) as unknown as StatRecord;

  it('sums the latest record of every fresh rank; a rank silent longer than the limit counts 0', () => {
    const now = 1_000_000;
    const t = sumFreshRanks(
      [
        { stat: stat(1000, 30, 1, 2.5), at: now - 1000 },
        { stat: stat(500, 10, null, 3.5), at: now - RANK_STALE_MS }, // exactly at the limit: still counts
        { stat: stat(700, 12, 2), at: now - RANK_STALE_MS - 1 }, // stale
        { stat: stat(null, null, null), at: now },
      ],
      now,
    );
    assert.deepEqual(t, { genThroughput: 1500, runningReqs: 40, queueReqs: 1, ranks: 3, acceptSum: 6, acceptN: 2 });
    assert.equal(sumFreshRanks([{ stat: stat(1, 1, 1), at: 0 }], 10, 5).ranks, 0, 'a custom limit');
  });

  it('StatsTracker.serverTotal is that sum for one file', () => {
    const now = 5_000_000;
    const st = new StatsTracker({ now: () => now });
    assert.equal(st.serverTotal('none').genThroughput, 0);
    st.feed(
      'a.log',
      '[2026-01-01 00:00:01 DP0 TP0] Decode batch, #running-req: 4, #token: 1, token usage: 0.01, gen throughput (token/s): 10.00, #queue-req: 1, ',
    );
    st.feed(
      'a.log',
      '[2026-01-01 00:00:01 DP1 TP1] Decode batch, #running-req: 6, #token: 1, token usage: 0.01, gen throughput (token/s): 20.00, #queue-req: 0, ',
    );
    const t = st.serverTotal('a.log');
    assert.deepEqual([t.genThroughput, t.runningReqs, t.queueReqs, t.ranks], [30, 10, 1, 2]);
  });
});

describe('liveStats: formatLoad (the one "tok/s · run · queue" text)', () => {
  it('rounds, groups thousands, and adds the accept length only when there is one', () => {
    assert.equal(formatLoad(1987.4, 32, 0, 2.714), '1,987 tok/s · 32 run · 0 queue · accept 2.71');
    assert.equal(formatLoad(12345.6, 1024, 3, null), '12,346 tok/s · 1,024 run · 3 queue');
  });
});

describe('liveStats: PP stages of one replica count once (the safe reading, UNVERIFIED in real logs)', () => {
  const rec = (ranks: Record<string, number>, gen: number, run: number): StatRecord => ({
    kind: 'decode',
    time: null,
    ranks,
    genThroughput: gen,
    inputThroughput: null,
    runningReqs: run,
    queueReqs: 0,
    tokenUsage: 0.3,
    acceptLen: null,
    acceptRate: null,
    cudaGraph: true,
    numTokens: null,
    newSeq: null,
    newTokens: null,
    cachedTokens: null,
    cacheHitRate: null,
    extra: {},
  });
  it('PP0 TP0 100 + PP1 TP4 100 is 100 tok/s, not 200; two DP replicas still add up', () => {
    const now = 1000;
    const pp = sumFreshRanks(
      [
        { stat: rec({ pp: 0, tp: 0 }, 100, 8), at: now },
        { stat: rec({ pp: 1, tp: 4 }, 100, 8), at: now },
      ],
      now,
    );
    assert.equal(pp.genThroughput, 100);
    assert.equal(pp.runningReqs, 8);
    const dp = sumFreshRanks(
      [
        { stat: rec({ dp: 0, pp: 0, tp: 0 }, 100, 8), at: now },
        { stat: rec({ dp: 1, pp: 0, tp: 0 }, 150, 9), at: now },
      ],
      now,
    );
    assert.equal(dp.genThroughput, 250);
    assert.equal(dp.runningReqs, 17);
  });
});
