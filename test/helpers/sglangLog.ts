/** SGLang log lines as the server prints them, for tests that feed a live tracker or state machine. */

/**
 * A `Decode batch` stat line at wall-clock time `t` (HH:MM:SS) with the running requests, throughput and queue,
 * in the 2026 shape (metrics_reporter.py: `cuda graph` before the throughput, no trailing ", " after
 * `#queue-req`).
 */
export const decode = (t: string, run: number, gen: number, queue = 0, extra = '') =>
  `[2026-03-01 ${t}] Decode batch, #running-req: ${run}, #token: 9000, token usage: 0.40,${extra} cuda graph: True, gen throughput (token/s): ${gen.toFixed(2)}, #queue-req: ${queue}`;
