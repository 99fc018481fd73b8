/**
 * Failure classes of SGLang log lines (messages as SGLang prints them, from shared/reference/sglang-failures.md),
 * the custom `[time][file:line][LEVEL]: ` format, PP/EP/ATTN_CP rank tags and hybrid/HiSparse pool usage.
 */
import assert from 'node:assert/strict';
import {
  FailureClass,
  LogSummarizer,
  classifyFailure,
  classifyLine,
  isKvPressureStat,
  lineHeader,
  parseStatLine,
} from '../../../src/core/sglang/logLines';

const CASES: Array<[string, FailureClass]> = [
  ['[2026-03-01 10:00:00] Scheduler hit an exception: Traceback (most recent call last):', 'crash'],
  ['[2026-03-01 10:00:00] DetokenizerManager hit an exception: Traceback (most recent call last):', 'crash'],
  ['[2026-03-01 10:00:00] TokenizerManager hit an exception', 'crash'],
  ['[2026-03-01 10:00:00] Received sigquit from a child process. It usually means the child failed.', 'crash'],
  ['[2025-03-01 10:00:00] Received sigquit from a child proces. It usually means the child failed.', 'crash'],
  ['[2026-03-01 10:00:00] Child process unexpectedly failed with an exit code 1. pid=4242', 'crash'],
  ['[2026-03-01 10:00:00 DP1 TP1] Rank 1 scheduler is dead', 'crash'],
  ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 178.36 GiB', 'oom'],
  ['RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.', 'oom'],
  ['RuntimeError: CUDA error: out of memory', 'oom'],
  ['[2026-03-01 10:00:00 TP0] KV cache pool is full. Retract requests. #retracted_reqs: 3, #new_token_ratio: 0.7 -> 1.0', 'kv-pressure'],
  ['[2026-03-01 10:00:00 TP0] Decode out of memory happened. #retracted_reqs: 1', 'kv-pressure'],
  ['AssertionError: No space left for only one request', 'kv-pressure'],
  ['[2026-03-01 10:00:00] Watchdog timeout (self.watchdog_timeout=300)', 'hang'],
  ['[2026-05-01 10:00:00 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, soft=False)'.replace('watchdog', 'Watchdog'), 'hang'],
  ['[2026-03-01 10:00:00] Pyspy failed to dump PID 4242. Error: permission denied', 'hang'],
  ["[2026-03-01 10:00:00] Health check failed. Server couldn't get a response from detokenizer for last 20 seconds.", 'hang'],
  ['RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)', 'nccl'],
  [
    '[rank3]:[E301 10:00:00.000 ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600046 milliseconds before timing out.',
    'nccl',
  ],
  ["terminate called after throwing an instance of 'c10::DistBackendError'", 'nccl'],
  ['node-1:4242:4300 [3] NCCL WARN Cuda failure', 'nccl'],
  ['RuntimeError: CUDA error: an illegal memory access was encountered', 'gpu'],
  ['RuntimeError: Found no NVIDIA driver on your system.', 'gpu'],
  ['Unable to determine the device handle for GPU0000:61:00.0: Unknown Error', 'gpu'],
  ['Failed to initialize NVML: Driver/library version mismatch', 'gpu'],
];

describe('failure classes of log lines', () => {
  for (const [line, cls] of CASES) {
    it(`${cls}: ${line.slice(0, 70)}`, () => {
      const c = classifyLine(line);
      assert.equal(c.kind, 'error');
      assert.equal(c.errorClass, cls);
    });
  }

  it('a generic exception is an error of no class; warnings and startup lines are not failures', () => {
    const v = classifyLine('ValueError: bad request');
    assert.equal(v.kind, 'error');
    assert.equal(v.errorClass, null);
    for (const l of [
      '[2026-03-01 10:00:00] WARNING: torch.distributed deprecation notice: use the new API',
      '[2026-03-01 10:00:00] server_args=ServerArgs(model_path="/m/GPU is lost", watchdog_timeout=300)',
      '[2026-03-01 10:00:00] INFO:     127.0.0.1:4000 - "GET /health HTTP/1.1" 200 OK',
    ]) {
      const c = classifyLine(l);
      assert.notEqual(c.kind, 'error', l);
      assert.equal(c.errorClass, undefined);
    }
    assert.equal(classifyFailure(''), null);
  });

  it('a bare traceback line stays a traceback; the exception line after it carries the class', () => {
    assert.equal(classifyLine('Traceback (most recent call last):').kind, 'traceback');
    assert.equal(classifyLine('torch.OutOfMemoryError: CUDA out of memory.').errorClass, 'oom');
  });

  it('stat lines with retractions or a full pool are kv-pressure; a normal one is not', () => {
    const full =
      '[2026-03-01 10:00:00 TP0] Decode batch, #running-req: 90, #token: 99000, token usage: 1.00, #retracted-req: 4, gen throughput (token/s): 120.00, #queue-req: 40, ';
    const ok =
      '[2026-03-01 10:00:00 TP0] Decode batch, #running-req: 9, #token: 9000, token usage: 0.41, gen throughput (token/s): 1200.00, #queue-req: 0, ';
    assert.equal(classifyLine(full).errorClass, 'kv-pressure');
    assert.equal(classifyLine(ok).errorClass, undefined);
    assert.equal(isKvPressureStat(parseStatLine(full)!), true);
    const hybrid =
      '[2026-03-01 10:00:00] Decode batch, #running-req: 9, #full token: 100, full token usage: 0.20, #swa token: 8, swa token usage: 1.00, gen throughput (token/s): 100.00, #queue-req: 3, ';
    assert.equal(parseStatLine(hybrid)!.tokenUsage, 1);
    assert.equal(classifyLine(hybrid).errorClass, 'kv-pressure');
  });

  it('HiSparse pools: token usage is the maximum of the GPU and CPU pools', () => {
    const s = parseStatLine(
      '[2026-06-01 10:00:00 TP0] Decode batch, #running-req: 9, #gpu-token: 100, gpu token usage: 0.31, cpu token usage: 0.62, gen throughput (token/s): 100.00, #queue-req: 0, ',
    )!;
    assert.equal(s.tokenUsage, 0.62);
  });

  it('custom logging format [time][file:line][LEVEL]: keeps time and message', () => {
    const st = parseStatLine(
      '[2026-04-15 17:13:10][scheduler_metrics_mixin.py:424][INFO]: Decode batch, #running-req: 31, #token: 4000, token usage: 0.08, gen throughput (token/s): 559.53, #queue-req: 0, ',
    )!;
    assert.equal(st.time, '2026-04-15 17:13:10');
    assert.equal(st.genThroughput, 559.53);
    const e = classifyLine(
      '[2026-04-15 17:13:10][scheduler.py:2817][ERROR]: Scheduler hit an exception: Traceback (most recent call last):',
    );
    assert.equal(e.kind, 'error');
    assert.equal(e.errorClass, 'crash');
    const r = classifyLine('[2026-04-15 17:13:10][http_server.py:1300][INFO]: The server is fired up and ready to roll!');
    assert.equal(r.kind, 'ready');
    assert.equal(r.message, 'The server is fired up and ready to roll!');
    assert.equal(lineHeader('[2026-04-15 17:13:10][a.py:1][WARNING]: KV cache pool is full.').time, '2026-04-15 17:13:10');
  });

  it('PP, EP and ATTN_CP rank tags in every order', () => {
    assert.deepEqual(
      parseStatLine('[2026-01-01 00:00:00 DP0 PP1] Decode batch, #running-req: 1, gen throughput (token/s): 1.00, ')!.ranks,
      { dp: 0, pp: 1 },
    );
    assert.deepEqual(
      parseStatLine('[2026-01-01 00:00:00 TP0 EP0] Decode batch, #running-req: 1, gen throughput (token/s): 1.00, ')!.ranks,
      { tp: 0, ep: 0 },
    );
    const s = parseStatLine('[2026-01-01 00:00:00 DP1 ATTN_CP2 TP1 EP1] Decode batch, #running-req: 1, gen throughput (token/s): 1.00, ')!;
    assert.deepEqual(s.ranks, { dp: 1, attn_cp: 2, tp: 1, ep: 1 });
    assert.equal(s.rank, 'DP1 ATTN_CP2 TP1 EP1');
    assert.equal(lineHeader('[2026-01-01 00:00:00 PP1 TP3] Rank 3 scheduler is dead').rank, 'PP1 TP3');
  });

  it('the summary counts error lines per class', () => {
    const sum = new LogSummarizer();
    for (const [line] of CASES) sum.add(line);
    sum.add('ValueError: nothing special');
    const s = sum.summary();
    const expected: Record<string, number> = {};
    for (const [, c] of CASES) expected[c] = (expected[c] ?? 0) + 1;
    assert.deepEqual(s.errorClasses, { crash: 0, oom: 0, 'kv-pressure': 0, hang: 0, nccl: 0, gpu: 0, ...expected });
    assert.equal(s.errors, CASES.length + 1);
  });
});
