/** Issue 40: a PD prefill node's Prefill lines feed its state; PP stages' running requests count once. */
import assert from 'node:assert/strict';
import { ServerStateMachine } from '../../../src/core/sglang/serverState';

const healthy = { alive: true, pid: 10, health: { health: 'healthy', detail: 'HTTP 200', durationMs: 30 } };
// a 2026 PD prefill node's line (test/fixtures/log/variants.log)
const prefill = (t: string, newTok: number, tps: number, queue = 0) =>
  `[2026-07-21 08:04:${t} TP0 EP0] Prefill batch, #new-seq: 1, #new-token: ${newTok}, #cached-token: 10048, token usage: 0.00, ` +
  `#running-req: 0, #queue-req: ${queue}, #pending-token: 0, #bootstrap-req: 0, #inflight-req: 1, cuda graph: False, ` +
  `input throughput (token/s): ${tps.toFixed(2)}, est. prefill TFLOPS/s (per GPU): 9.90, fwd occupancy: nan%`;

describe('ServerStateMachine: PD prefill nodes and PP stages (issue 40)', () => {
  it('a busy prefill node (only Prefill lines) is serving with its input throughput, idle once quiet', () => {
    const m = new ServerStateMachine(30000);
    m.observe(healthy, 0);
    assert.equal(m.verdict(0).reason, 'ready, no requests yet');
    for (let i = 0; i < 5; i++) m.feedLine(prefill(String(40 + i), 64, 178.18), 1000 * (i + 1));
    const v = m.verdict(5500);
    assert.equal(v.state, 'serving');
    assert.match(v.reason, /prefill 178 input tok\/s · 1 in flight · 0 queued/);
    assert.equal(m.verdict(5000 + 60_000).state, 'idle');
  });

  it('a prefill node with a queue and no prefill line for long is stalled', () => {
    const m = new ServerStateMachine(30000, { silentMinMs: 3000 });
    m.observe(healthy, 0);
    m.feedLine(prefill('40', 64, 178.18, 5), 1000);
    assert.equal(m.verdict(1500).state, 'serving');
    assert.equal(m.verdict(9000).state, 'stalled');
  });

  it('under PP each stage prints the batch: 8 running, not 16', () => {
    const m = new ServerStateMachine(30000);
    m.observe(healthy, 0);
    const line = (tags: string) =>
      `[2026-03-01 10:00:00 ${tags}] Decode batch, #running-req: 8, #token: 9000, token usage: 0.40, cuda graph: True, gen throughput (token/s): 900.00, #queue-req: 0`;
    m.feedLine(line('PP0 TP0'), 1000);
    m.feedLine(line('PP1 TP4'), 1000);
    const v = m.verdict(1500);
    assert.equal(v.state, 'serving');
    assert.match(v.reason, /^900 tok\/s · 8 running · 0 queued$/);
  });
});
