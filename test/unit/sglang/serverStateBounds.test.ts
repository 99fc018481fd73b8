/** Issue 40 item 8: what a server's state machine keeps per line stays bounded however many lines arrive. */
import assert from 'node:assert/strict';
import { ServerStateMachine } from '../../../src/core/sglang/serverState';

const healthy = { alive: true, pid: 10, health: { health: 'healthy', detail: 'HTTP 200', durationMs: 30 } };
const decode = (tags: string) =>
  `[2026-03-01 10:00:00 ${tags}] Decode batch, #running-req: 1, #token: 90, token usage: 0.40, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0`;
const prefill = (tags: string) =>
  `[2026-07-21 08:04:40 ${tags}] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 0, token usage: 0.00, ` +
  `#running-req: 0, #queue-req: 0, #pending-token: 0, #bootstrap-req: 0, #inflight-req: 1, cuda graph: False, ` +
  `input throughput (token/s): 100.00, est. prefill TFLOPS/s (per GPU): 9.90, fwd occupancy: nan%`;

describe('ServerStateMachine: bounded per-rank state (issue 40 item 8)', () => {
  it('many thousand lines from one rank keep one entry; endless rank labels keep at most 1024, the newest', () => {
    const m = new ServerStateMachine(30000);
    m.observe(healthy, 0);
    const sizes = () => {
      const x = m as unknown as { ranks: Map<string, unknown>; prefillRanks: Map<string, unknown> };
      return [x.ranks.size, x.prefillRanks.size];
    };
    for (let i = 0; i < 5000; i++) m.feedLine(decode('DP0 TP0'), 1000 + i);
    for (let i = 0; i < 5000; i++) m.feedLine(prefill('DP0 TP0'), 1000 + i);
    assert.deepEqual(sizes(), [1, 1]);
    for (let i = 0; i < 5000; i++) {
      m.feedLine(decode(`DP${i} TP0`), 10_000 + i);
      m.feedLine(prefill(`DP${i} TP0`), 10_000 + i);
    }
    assert.deepEqual(sizes(), [1024, 1024]);
    assert.equal(m.figures(15_000).runningReqs, 1024, 'the 1024 most recent ranks count');
  });
});
