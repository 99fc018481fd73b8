/** Issue 40: 2026 lines classified (CUDA-graph capture is startup; the py-spy diagnostics go with the hang they accompany). */
import assert from 'node:assert/strict';
import { classifyLine } from '../../../src/core/sglang/logLines';

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
});
