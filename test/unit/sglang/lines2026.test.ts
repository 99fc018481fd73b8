/** Issue 40: 2026 lines classified (CUDA-graph capture is startup; the py-spy diagnostics go with the hang they accompany). */
import assert from 'node:assert/strict';
import { classifyLine, lineHeader, parseStatLine } from '../../../src/core/sglang/logLines';
import { metricsSummary, parseMetrics } from '../../../src/core/sglang/endpoints';
import { ServerStateMachine } from '../../../src/core/sglang/serverState';

describe('2026 log lines (issue 40)', () => {
  it('Capture target … CUDA graph begin/end are startup lines', () => {
    for (const l of [
      '[2026-06-20 10:00:01 TP0] Capture target decode CUDA graph begin. backend=full, num_tokens_per_req=1, bs=[1, 2, 4, 8], avail mem=134.61 GB',
      '[2026-06-20 10:00:09 TP0] Capture target prefill CUDA graph end. elapsed=8.12 s',
      '[2026-06-20 10:00:12 TP0] Capture target verify CUDA graph begin. backend=full, num_tokens_per_req=4, bs=[1, 2], avail mem=120.02 GB',
    ])
      assert.equal(classifyLine(l).kind, 'startup', l);
  });

  it('the 2026 py-spy diagnostics are errors of class hang, not noise', () => {
    for (const l of [
      '[2026-06-20 10:05:00 TP0] Pyspy failed (py-spy dump --native --pid 4242). Error: Permission denied (os error 13)',
      '[2026-06-20 10:05:00 TP0] All pyspy dump attempts failed for PID 4242.',
    ]) {
      const c = classifyLine(l);
      assert.equal(c.kind, 'error', l);
      assert.equal(c.errorClass, 'hang', l);
      assert.equal(c.failure?.fatal, false, l);
    }
  });

  const DECODE =
    'Decode batch, #running-req: 3, #token: 900, token usage: 0.10, cuda graph: True, gen throughput (token/s): 250.00, #queue-req: 2';

  it('a JSON formatter line (SGLANG_LOGGING_CONFIG_PATH) has its time and every figure, its last one included', () => {
    const st = parseStatLine(JSON.stringify({ asctime: '2026-04-15 17:13:10', levelname: 'INFO', name: 'sglang', message: DECODE }))!;
    assert.equal(st.kind, 'decode');
    assert.equal(st.time, '2026-04-15 17:13:10');
    assert.equal(st.queueReqs, 2, 'not the value `2"}`');
    assert.equal(st.genThroughput, 250);
    const err = JSON.stringify({
      timestamp: '2026-04-15T17:13:11.250Z',
      level: 'ERROR',
      message: 'torch.OutOfMemoryError: CUDA out of memory.',
    });
    assert.equal(classifyLine(err).kind, 'error');
    assert.equal(lineHeader(err).time, '2026-04-15 17:13:11.250');
    // JSON that is not a log record stays what it was
    assert.equal(classifyLine('{"not": "a record"}').kind, 'other');
  });

  it("sglang-diffusion's [MM-DD HH:MM:SS] prefix gives the line its time", () => {
    assert.equal(parseStatLine(`[04-15 17:13:10] ${DECODE}`)!.time, '04-15 17:13:10');
    assert.equal(lineHeader('[04-15 17:13:10 TP1] Load weight end.').rank, 'TP1');
  });

  it('sglang:num_retracted_requests_total rising is KV pressure (the 2026 counter that replaces the gauge)', () => {
    const expo = (n: number) =>
      `# TYPE sglang:num_retracted_requests_total counter\nsglang:num_retracted_requests_total{model_name="m",tp_rank="0"} ${n}\n`;
    assert.equal(metricsSummary(parseMetrics(expo(7))).retractedTotal, 7);
    const m = new ServerStateMachine(30000);
    const obs = (n: number) => ({
      alive: true,
      pid: 1,
      health: { health: 'healthy' as const, detail: '' },
      metrics: metricsSummary(parseMetrics(expo(n))),
    });
    m.observe(obs(7), 1000);
    assert.equal(m.conditions(1000).value.kv, 'ok', 'a count since start is not pressure now');
    m.observe(obs(7), 2000);
    assert.equal(m.conditions(2000).value.kv, 'ok');
    m.observe(obs(9), 3000);
    assert.equal(m.conditions(3000).value.kv, 'kv-pressure');
  });

  it('a counter rise that the log already showed keeps the time of its last retraction line (the condition clears on time)', () => {
    const expo = (n: number) =>
      `# TYPE sglang:num_retracted_requests_total counter\nsglang:num_retracted_requests_total{model_name="m",tp_rank="0"} ${n}\n`;
    const obs = (n: number) => ({
      alive: true,
      pid: 1,
      health: { health: 'healthy' as const, detail: '' },
      metrics: metricsSummary(parseMetrics(expo(n))),
    });
    const retract =
      '[2026-09-13 16:06:07] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_tokens_gained: 1920, #new_token_ratio: 0.7000 -> 1.0000';
    const m = new ServerStateMachine(30000, { kvClearMs: 4000 });
    m.observe(obs(10), 0);
    m.feedLine(retract, 1000);
    m.observe(obs(13), 4000);
    m.feedLine(retract, 5000); // the last retraction: the pressure ends here
    m.observe(obs(16), 8000); // the same retractions, seen one poll later
    assert.equal(m.conditions(8000).value.kv, 'kv-pressure');
    assert.equal(m.conditions(9100).value.kv, 'ok', 'clears kvClearMs after the last line, not after the poll');
    // without a line since the previous poll (a server at --log-level warning), a rise is dated at the poll
    const w = new ServerStateMachine(30000, { kvClearMs: 4000 });
    w.observe(obs(10), 0);
    w.observe(obs(13), 4000);
    assert.equal(w.conditions(7900).value.kv, 'kv-pressure');
    assert.equal(w.conditions(8100).value.kv, 'ok');
  });
});
