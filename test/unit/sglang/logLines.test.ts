import assert from 'node:assert/strict';
import {
  classifyLine,
  parseStatLine,
  toJsonRecord,
  rankLabel,
  stripAnsi,
  LogSummarizer,
  LineSplitter,
  isRestartLine,
  isTruncatedLine,
  StatRecord,
  FailureClass,
  classifyFailure,
  isKvPressureStat,
  lineHeader,
} from '../../../src/core/sglang/logLines';

function stat(line: string): StatRecord {
  const s = parseStatLine(line);
  assert.ok(s, `expected a stat line: ${line}`);
  return s;
}

describe('logstats: reference examples (verbatim)', () => {
  it('2024 HH:MM:SS TP0 decode line', () => {
    const s = stat(
      '[04:40:55 TP0] Decode batch. #running-req: 2, #token: 4078, token usage: 0.00, gen throughput (token/s): 447.31, #queue-req: 0',
    );
    assert.equal(s.kind, 'decode');
    assert.equal(s.time, '04:40:55');
    assert.deepEqual(s.ranks, { tp: 0 });
    assert.equal(s.runningReqs, 2);
    assert.equal(s.numTokens, 4078);
    assert.equal(s.tokenUsage, 0);
    assert.equal(s.genThroughput, 447.31);
    assert.equal(s.queueReqs, 0);
    assert.equal(s.cudaGraph, null);
    assert.equal(s.acceptLen, null);
    assert.deepEqual(s.extra, {});
  });

  it('2025 dated TP0 decode line', () => {
    const s = stat(
      '[2025-02-27 04:46:39 TP0] Decode batch. #running-req: 8, #token: 62531, token usage: 0.12, gen throughput (token/s): 186.64, #queue-req: 0',
    );
    assert.equal(s.time, '2025-02-27 04:46:39');
    assert.equal(s.genThroughput, 186.64);
    assert.equal(s.tokenUsage, 0.12);
  });

  it('DP0 TP0 speculative decode line with cuda graph', () => {
    const s = stat(
      '[2025-05-31 18:31:21 DP0 TP0] Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, accept len: 2.90, cuda graph: True, gen throughput (token/s): 171.01, #queue-req: 0',
    );
    assert.deepEqual(s.ranks, { dp: 0, tp: 0 });
    assert.equal(s.acceptLen, 2.9);
    assert.equal(s.cudaGraph, true);
    assert.equal(s.genThroughput, 171.01);
    assert.equal(s.time, '2025-05-31 18:31:21');
  });

  it('Nov 2025 comma form with trailing ", " and no ranks', () => {
    const s = stat(
      '[2025-11-11 04:06:27] Decode batch, #running-req: 46, #token: 34901, token usage: 0.19, cuda graph: False, gen throughput (token/s): 1447.08, #queue-req: 0, ',
    );
    assert.deepEqual(s.ranks, {});
    assert.equal(s.cudaGraph, false);
    assert.equal(s.genThroughput, 1447.08);
    assert.equal(s.queueReqs, 0);
    assert.deepEqual(s.extra, {});
  });

  it('2026 prefill line', () => {
    const s = stat(
      '[2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53',
    );
    assert.equal(s.kind, 'prefill');
    assert.equal(s.newSeq, 1);
    assert.equal(s.newTokens, 158);
    assert.equal(s.cachedTokens, 0);
    assert.equal(s.tokenUsage, 0.08);
    assert.equal(s.runningReqs, 31);
    assert.equal(s.queueReqs, 0);
    assert.equal(s.cudaGraph, true);
    assert.equal(s.inputThroughput, 559.53);
    assert.equal(s.genThroughput, null);
  });
});

describe('logstats: variants across versions', () => {
  it('2024 prefill with cache hit rate (printed percent kept as number)', () => {
    const s = stat(
      '[2024-11-29 10:28:29 TP0] Prefill batch. #new-seq: 2, #new-token: 2048, #cached-token: 888, cache hit rate: 55.00%, token usage: 0.11, #running-req: 69, #queue-req: 130',
    );
    assert.equal(s.cacheHitRate, 55);
    assert.equal(s.queueReqs, 130);
    assert.equal(s.runningReqs, 69);
  });

  it('SGLANG_LOG_MS timestamps are kept exactly', () => {
    const s = stat(
      '[2025-05-31 18:31:21.123 DP1 TP1] Decode batch, #running-req: 3, #token: 100, token usage: 0.01, cuda graph: True, gen throughput (token/s): 99.50, #queue-req: 2, ',
    );
    assert.equal(s.time, '2025-05-31 18:31:21.123');
    assert.deepEqual(s.ranks, { dp: 1, tp: 1 });
  });

  it('rank tags in any order and combination', () => {
    const cases: Array<[string, Record<string, number>]> = [
      ['DP3 PP1 ATTN_CP2 MOE_DP1 TP5 EP7', { dp: 3, pp: 1, attn_cp: 2, moe_dp: 1, tp: 5, ep: 7 }],
      ['TP2 PP0', { tp: 2, pp: 0 }],
      ['PP1 TP0', { pp: 1, tp: 0 }],
      ['TP0 EP0', { tp: 0, ep: 0 }],
      ['EP3 TP3 DP3', { ep: 3, tp: 3, dp: 3 }],
      ['MOE_DP0 ATTN_CP1', { moe_dp: 0, attn_cp: 1 }],
      ['DP12 TP96', { dp: 12, tp: 96 }],
    ];
    for (const [tags, ranks] of cases) {
      const s = stat(
        `[2026-01-02 03:04:05 ${tags}] Decode batch, #running-req: 1, #token: 5, token usage: 0.00, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0, `,
      );
      assert.deepEqual(s.ranks, ranks, tags);
      assert.equal(s.time, '2026-01-02 03:04:05');
    }
    assert.equal(rankLabel({ tp: 5, ep: 7, dp: 3, pp: 1, moe_dp: 1, attn_cp: 2 }), 'DP3 PP1 ATTN_CP2 MOE_DP1 TP5 EP7');
    assert.equal(rankLabel({}), '');
  });

  it('hybrid SWA memory keys: tokenUsage = the fullest pool (as SGLang computes its pressure), others in extra', () => {
    const s = stat(
      '[2025-12-01 10:00:00 TP0] Decode batch, #running-req: 4, #full token: 1200, full token usage: 0.05, #swa token: 800, swa token usage: 0.30, cuda graph: True, gen throughput (token/s): 321.00, #queue-req: 0, ',
    );
    assert.equal(s.tokenUsage, 0.3);
    assert.equal(s.numTokens, 1200);
    assert.deepEqual(s.extra, { '#swa token': 800, 'swa token usage': 0.3 });
  });

  it('hybrid mamba keys on npu graph', () => {
    const s = stat(
      '[2026-07-04 04:31:24 TP0] Decode batch, #running-req: 12, #full token: 43008, full token usage: 0.14, mamba num: 24, mamba usage: 0.20, npu graph: False, gen throughput (token/s): 812.40, #queue-req: 97',
    );
    assert.equal(s.tokenUsage, 0.2);
    assert.equal(s.cudaGraph, false);
    assert.deepEqual(s.extra, { 'mamba num': 24, 'mamba usage': 0.2 });
  });

  it('real 2026 npu prefill with mamba usage and #pending-token', () => {
    const s = stat(
      '[2026-07-04 04:31:24 TP0] Prefill batch, #new-seq: 12, #new-token: 43008, #cached-token: 0, full token usage: 0.14, mamba usage: 0.20, #running-req: 1, #queue-req: 97, #pending-token: 109585, npu graph: False, input throughput (token/s): 15734.14',
    );
    assert.equal(s.kind, 'prefill');
    assert.equal(s.inputThroughput, 15734.14);
    assert.equal(s.tokenUsage, 0.2);
    assert.equal(s.cudaGraph, false);
    assert.deepEqual(s.extra, { 'mamba usage': 0.2, '#pending-token': 109585 });
  });

  it('spec decoding, PD-disaggregation decode keys, cpu graph, fwd occupancy, est. fields', () => {
    const s = stat(
      '[2026-03-01 12:00:00 DP2 TP2 EP2] Decode batch, #running-req: 64, #token: 90000, token usage: 0.40, accept len: 3.21, accept rate: 0.74, pre-allocated usage: 0.02, #prealloc-req: 3, #transfer-req: 1, #retracted-req: 0, cpu graph: True, gen throughput (token/s): 2048.50, #queue-req: 5, est. decode TFLOPS/s (per GPU): 12.34, est. read BW (GB/s per GPU): 2100.00, est. write BW (GB/s per GPU): 3.10, fwd occupancy: 87.50%',
    );
    assert.equal(s.acceptLen, 3.21);
    assert.equal(s.acceptRate, 0.74);
    assert.equal(s.cudaGraph, true);
    assert.equal(s.queueReqs, 5);
    assert.deepEqual(s.ranks, { dp: 2, tp: 2, ep: 2 });
    assert.deepEqual(s.extra, {
      'pre-allocated usage': 0.02,
      '#prealloc-req': 3,
      '#transfer-req': 1,
      '#retracted-req': 0,
      'est. decode TFLOPS/s (per GPU)': 12.34,
      'est. read BW (GB/s per GPU)': 2100,
      'est. write BW (GB/s per GPU)': 3.1,
      'fwd occupancy': 87.5,
    });
  });

  it('disaggregated prefill with #bootstrap-req / #inflight-req and fwd occupancy: nan%', () => {
    const s = stat(
      '[2026-07-21 08:04:41 TP0 EP0] Prefill batch, #new-seq: 1, #new-token: 64, #cached-token: 10048, token usage: 0.00, #running-req: 0, #queue-req: 0, #pending-token: 0, #bootstrap-req: 0, #inflight-req: 1, cuda graph: False, input throughput (token/s): 178.18, est. prefill TFLOPS/s (per GPU): 9.90, fwd occupancy: nan%',
    );
    assert.equal(s.inputThroughput, 178.18);
    assert.equal(s.extra['fwd occupancy'], 'nan%');
    assert.equal(s.extra['#inflight-req'], 1);
    assert.equal(s.extra['#bootstrap-req'], 0);
    assert.deepEqual(s.ranks, { tp: 0, ep: 0 });
    assert.doesNotThrow(() => JSON.stringify(toJsonRecord(s)));
  });

  it('"Decode batch [123]," / "Prefill batch [7]." iteration brackets', () => {
    const d = stat(
      '[2026-02-02 01:02:03 TP0] Decode batch [123], #running-req: 5, #token: 10, token usage: 0.00, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 0',
    );
    assert.equal(d.kind, 'decode');
    assert.equal(d.genThroughput, 50);
    assert.deepEqual(d.ranks, { tp: 0 });
    const p = stat(
      '[2025-09-09 09:09:09] Prefill batch [7]. #new-seq: 1, #new-token: 3, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, ',
    );
    assert.equal(p.kind, 'prefill');
    assert.equal(p.newTokens, 3);
    assert.equal(p.time, '2025-09-09 09:09:09');
  });

  it('collector timestamp, Ray prefix and ANSI codes are ignored', () => {
    const inner =
      '[2025-05-31 18:31:21 DP0 TP0] Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, gen throughput (token/s): 171.01, #queue-req: 0';
    const variants = [
      `[2025-05-31 18:31:22] ${inner}`,
      `(SGLangEngine pid=4242) ${inner}`,
      `(SGLangEngine pid=4242, ip=10.0.0.3) [2025-05-31 18:31:22] ${inner}`,
      `\x1b[36m(SGLangEngine pid=4242)\x1b[0m ${inner}`,
      `\x1b[32m[2025-05-31 18:31:21 DP0 TP0]\x1b[0m Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, gen throughput (token/s): 171.01, #queue-req: 0`,
      `2025-05-31T18:31:21.123456789Z ${inner}`,
      `  0%|          | 0/100 [00:00<?, ?it/s]${inner}`,
    ];
    for (const v of variants) {
      const s = stat(v);
      assert.equal(s.time, '2025-05-31 18:31:21', v);
      assert.deepEqual(s.ranks, { dp: 0, tp: 0 }, v);
      assert.equal(s.genThroughput, 171.01, v);
      const c = classifyLine(v);
      assert.equal(c.kind, 'decode');
      assert.ok(c.message.startsWith('Decode batch.'), c.message);
    }
    assert.equal(stripAnsi('\x1b[1;31mred\x1b[0m'), 'red');
  });

  it('2024 "[gpu=0] Decode batch." and early-2024 bare / "new fill batch" lines', () => {
    const g = stat('[gpu=0] Decode batch. #running-req: 1, #token: 90, token usage: 0.00, gen throughput (token/s): 40.65, #queue-req: 0');
    assert.deepEqual(g.ranks, { gpu: 0 });
    assert.equal(g.time, null);
    assert.equal(g.genThroughput, 40.65);
    const b = stat('#running-req: 1, #token: 90, token usage: 0.00, gen throughput (token/s): 40.65, #queue-req: 0');
    assert.equal(b.kind, 'decode');
    assert.equal(b.genThroughput, 40.65);
    assert.deepEqual(b.ranks, {});
    const f = stat(
      'new fill batch. #seq: 1. #cached_token: 330. #new_token: 2172. #remaining_req: 57. #running_req: 9. tree_cache_hit_rate: 69.16%.',
    );
    assert.equal(f.kind, 'prefill');
    assert.equal(f.newSeq, 1);
    assert.equal(f.cachedTokens, 330);
    assert.equal(f.newTokens, 2172);
    assert.equal(f.queueReqs, 57);
    assert.equal(f.runningReqs, 9);
    assert.equal(f.cacheHitRate, 69.16);
  });

  it('unknown keys are kept verbatim and typed', () => {
    const s = stat(
      '[2026-01-01 00:00:00] Decode batch, #running-req: 1, some new flag: True, weird thing: abc, ratio: 0.5, pct: 12.5%, cuda graph: False, gen throughput (token/s): 1.00, #queue-req: 0',
    );
    assert.deepEqual(s.extra, { 'some new flag': true, 'weird thing': 'abc', ratio: 0.5, pct: 12.5 });
  });

  it('non-numeric values of known keys become null and are kept in extra', () => {
    const s = stat('[2026-01-01 00:00:00] Decode batch, #running-req: 1, gen throughput (token/s): nan, #queue-req: 0');
    assert.equal(s.genThroughput, null);
    assert.equal(s.extra['gen throughput (token/s)'], 'nan');
  });

  it('a truncated stat line keeps what was printed', () => {
    const s = stat('[2025-02-27 04:46:39 TP0] Decode batch. #running-req: 8, #token: 62531, token usage: 0.12, gen throughp');
    assert.equal(s.runningReqs, 8);
    assert.equal(s.tokenUsage, 0.12);
    assert.equal(s.genThroughput, null);
    assert.equal(parseStatLine('[2025-02-27 04:46:39 TP0] Decode batch. #runn'), null);
    assert.equal(classifyLine('[2025-02-27 04:46:39 TP0] Decode batch. #runn').kind, 'other');
    assert.equal(parseStatLine('[2025-02-27 04:46:39 TP0] Deco'), null);
  });

  it('toJsonRecord produces the CLI contract object', () => {
    const s = stat(
      '[2025-05-31 18:31:21 DP0 TP0] Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, accept len: 2.90, cuda graph: True, gen throughput (token/s): 171.01, #queue-req: 0',
    );
    const j = toJsonRecord(s);
    assert.deepEqual(JSON.parse(JSON.stringify(j)), {
      kind: 'decode',
      time: '2025-05-31 18:31:21',
      rank: 'DP0 TP0',
      ranks: { dp: 0, tp: 0 },
      genThroughput: 171.01,
      inputThroughput: null,
      runningReqs: 8,
      queueReqs: 0,
      tokenUsage: 0.13,
      acceptLen: 2.9,
      acceptRate: null,
      cudaGraph: true,
      numTokens: 37217,
      newSeq: null,
      newTokens: null,
      cachedTokens: null,
      cacheHitRate: null,
      extra: {},
    });
  });
});

describe('logstats: classification', () => {
  const cases: Array<[string, string]> = [
    ['[2025-08-11 21:13:51] INFO:     10.0.0.2:55254 - "POST /v1/chat/completions HTTP/1.1" 200 OK', 'access'],
    ['[2026-04-05 20:02:51] INFO:     127.0.0.1:40052 - "POST /v1/chat/completions HTTP/1.1" 200 OK', 'access'],
    ['INFO:     127.0.0.1:40052 - "GET /health HTTP/1.1" 503 Service Unavailable', 'access'],
    ['[2025-08-11 21:13:51] INFO:     10.0.0.2:55254 - "POST /generate HTTP/1.1" 500 Internal Server Error', 'access'],
    ['[2025-05-31 18:20:00] The server is fired up and ready to roll!', 'ready'],
    ['Traceback (most recent call last):', 'traceback'],
    ['[2025-05-31 18:31:21 TP0] Scheduler hit an exception: Traceback (most recent call last):', 'error'],
    ['torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB', 'error'],
    ['RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, unhandled system error', 'error'],
    ['[2025-05-31 18:31:21 TP3] RuntimeError: CUDA error: an illegal memory access was encountered', 'error'],
    ['ValueError: max_total_num_tokens is too small', 'error'],
    ['AssertionError', 'error'],
    ['node01:1234:5678 [0] NCCL WARN Call to ibv_create_qp failed', 'error'],
    ['2025-05-31 18:31:21 [ERROR] something broke', 'error'],
    ['ERROR:    Exception in ASGI application', 'error'],
    ['[2025-05-31 18:31:21] Received sigquit from a child process. It usually means the child failed.', 'error'],
    ['Exception in thread Thread-3 (_watch):', 'error'],
    ['[rank0]: ValueError: bad shape', 'error'],
    ['torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970', 'error'],
    ["[2025-05-31 18:31:21 TP0] Failed to load: KeyError: 'model.layers.0'", 'error'],
    ['Killed', 'error'],
    ['[2025-05-31 18:31:21] WARNING: import error: no module named foo', 'other'],
    ['[2025-05-31 18:10:00 TP0] Load weight begin. avail mem=78.50 GB', 'startup'],
    ['Loading safetensors checkpoint shards:  50% Completed | 1/2 [00:01<00:01,  1.00s/it]', 'startup'],
    [
      '[2025-05-31 18:11:00 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.20 GB, mem usage=15.30 GB.',
      'startup',
    ],
    ['[2025-05-31 18:11:01 TP0] KV Cache is allocated. #tokens: 400000, K size: 24.00 GB, V size: 24.00 GB', 'startup'],
    ['[2025-05-31 18:11:02 TP0] Capture cuda graph begin. This can take up to several minutes. avail mem=14.00 GB', 'startup'],
    ['[2025-05-31 18:11:30 TP0] Capture cuda graph end. Time elapsed: 28.00 s. mem usage=1.20 GB. avail mem=12.80 GB.', 'startup'],
    [
      '[2025-05-31 18:11:31 TP0] max_total_num_tokens=400000, chunked_prefill_size=8192, max_prefill_tokens=16384, max_running_requests=4096, context_len=131072',
      'startup',
    ],
    ['[2025-05-31 18:11:32] INFO:     Started server process [12345]', 'startup'],
    ['[2025-05-31 18:11:32] INFO:     Waiting for application startup.', 'startup'],
    ['[2025-05-31 18:11:32] INFO:     Application startup complete.', 'startup'],
    ['[2025-05-31 18:11:32] INFO:     Uvicorn running on http://127.0.0.1:30000 (Press CTRL+C to quit)', 'startup'],
    ['  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 130, in event_loop', 'other'],
    ['[2025-05-31 18:31:21] Ignore import error when loading sglang.srt.models.foo', 'other'],
    ['', 'other'],
    ['random words here', 'other'],
  ];
  for (const [line, kind] of cases) {
    it(`${kind}: ${line.slice(0, 70)}`, () => {
      assert.equal(classifyLine(line).kind, kind);
    });
  }

  it('message drops the SGLang header', () => {
    assert.equal(
      classifyLine('[2025-05-31 18:11:32] INFO:     Application startup complete.').message,
      'INFO:     Application startup complete.',
    );
    assert.equal(classifyLine('(Eng pid=7) [2025-05-31 18:31:21 TP0] ValueError: x').message, 'ValueError: x');
  });

  it('never throws on garbage, binary or non-string input', () => {
    let seed = 12345;
    const rnd = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const alphabet = '[]():,. #%-_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz\x1b\t\r"\'\\Decode batch Prefill batch';
    for (let i = 0; i < 3000; i++) {
      let l = '';
      const n = Math.floor(rnd() * 200);
      for (let k = 0; k < n; k++) l += alphabet[Math.floor(rnd() * alphabet.length)];
      const c = classifyLine(l);
      assert.ok(typeof c.kind === 'string');
      if (c.stat) assert.doesNotThrow(() => JSON.stringify(toJsonRecord(c.stat!)));
    }
    assert.equal(classifyLine(undefined as unknown as string).kind, 'other');
    assert.equal(parseStatLine(null as unknown as string), null);
    assert.equal(classifyLine('Decode batch. ').kind, 'other');
    assert.equal(classifyLine('[2025-01-01 00:00:00 TP0] Decode batch, , , , :, : ,').kind, 'other');
  });

  it('a huge hostile line returns quickly', () => {
    const chunk = 'Decode batch, a, b: , [[[[ ((( pid= \x1b[ 9999 ';
    const big = chunk.repeat(Math.ceil((20 * 1024 * 1024) / chunk.length));
    const t0 = Date.now();
    classifyLine(big);
    parseStatLine(big);
    const noSep = 'x'.repeat(20 * 1024 * 1024);
    classifyLine(noSep);
    const commas = 'Decode batch, ' + ', '.repeat(5 * 1024 * 1024);
    classifyLine(commas);
    const dt = Date.now() - t0;
    assert.ok(dt < 3000, `took ${dt} ms`);
  });
});

describe('logstats: LogSummarizer', () => {
  it('summarises per rank, counts errors/tracebacks, readiness and last error', () => {
    const sum = new LogSummarizer();
    const lines = [
      '[2025-05-31 18:11:32] INFO:     Started server process [12345]',
      '[2025-05-31 18:11:31 DP0 TP0] Load weight end. type=X',
      '[2025-05-31 18:20:00] The server is fired up and ready to roll!',
      '[2025-05-31 18:31:21 DP0 TP0] Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, accept len: 2.90, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0',
      '[2025-05-31 18:31:21 DP1 TP1] Decode batch. #running-req: 4, #token: 100, token usage: 0.13, accept len: 3.10, cuda graph: True, gen throughput (token/s): 50.00, #queue-req: 1',
      '[2025-05-31 18:31:22 DP0 TP0] Prefill batch. #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 9, #queue-req: 2, ',
      '[2025-05-31 18:31:25 DP0 TP0] Decode batch. #running-req: 9, #token: 37300, token usage: 0.13, accept len: 2.10, cuda graph: True, gen throughput (token/s): 300.00, #queue-req: 3',
      '[2025-05-31 18:31:26] INFO:     127.0.0.1:40052 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
      'Traceback (most recent call last):',
      '  File "x.py", line 1, in <module>',
      'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.',
    ];
    for (const l of lines) sum.add(l);
    const s = sum.summary();
    assert.equal(s.totalLines, lines.length);
    assert.equal(s.errors, 1);
    assert.equal(s.tracebacks, 1);
    assert.equal(s.ready, true);
    assert.equal(s.lastError, 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.');
    assert.equal(s.ranks.length, 2);
    const [r0, r1] = s.ranks;
    assert.equal(r0.rank, 'DP0 TP0');
    assert.equal(r0.lines, 3);
    assert.equal(r0.decodeLines, 2);
    assert.equal(r0.prefillLines, 1);
    assert.equal(r0.lastGenThroughput, 300);
    assert.equal(r0.meanGenThroughput, 200);
    assert.equal(r0.maxGenThroughput, 300);
    assert.equal(r0.meanAcceptLen, 2.5);
    assert.equal(r0.lastTime, '2025-05-31 18:31:25');
    assert.equal(r0.lastRunningReqs, 9);
    assert.equal(r0.lastQueueReqs, 3);
    assert.equal(r1.rank, 'DP1 TP1');
    assert.equal(r1.lastGenThroughput, 50);
    assert.equal(s.kinds.access, 1);
    assert.equal(s.kinds.startup, 2);
  });

  it('ranks sort numerically and a restart resets readiness', () => {
    const sum = new LogSummarizer();
    for (const dp of [10, 2, 0]) {
      sum.add(`[2025-05-31 18:31:21 DP${dp} TP${dp}] Decode batch, #running-req: 1, gen throughput (token/s): 1.00, #queue-req: 0`);
    }
    sum.add('[2025-05-31 18:20:00] The server is fired up and ready to roll!');
    sum.add('[2025-05-31 18:40:00] INFO:     Started server process [999]');
    const s = sum.summary();
    assert.deepEqual(
      s.ranks.map((r) => r.rank),
      ['DP0 TP0', 'DP2 TP2', 'DP10 TP10'],
    );
    assert.equal(s.ready, false);
  });

  it('addChunk / end split a stream and match line-by-line results', () => {
    const text =
      '[04:40:55 TP0] Decode batch. #running-req: 2, #token: 4078, token usage: 0.00, gen throughput (token/s): 447.31, #queue-req: 0\r\n' +
      '[04:40:56 TP0] Decode batch. #running-req: 1, #token: 3902, token usage: 0.00, gen throughput (token/s): 333.97, #queue-req: 0\n' +
      '[04:40:57 TP0] Decode batch. #running-req: 1, #token: 3942, token usage: 0.00, gen throughput (token/s): 238.27, #queue-req: 0';
    const sum = new LogSummarizer();
    const buf = Buffer.from(text);
    for (let i = 0; i < buf.length; i += 7) sum.addChunk(buf.subarray(i, i + 7));
    sum.end();
    const s = sum.summary();
    assert.equal(s.totalLines, 3);
    assert.equal(s.ranks[0].rank, 'TP0');
    assert.equal(s.ranks[0].lastGenThroughput, 238.27);
    assert.equal(s.ranks[0].maxGenThroughput, 447.31);
    assert.equal(s.ranks[0].lastTime, '04:40:57');
  });
});

describe('logstats: LineSplitter', () => {
  it('splits \\n and \\r\\n, keeps a partial line until flush', () => {
    const sp = new LineSplitter();
    assert.deepEqual(sp.push('a\r\nb\nc'), ['a', 'b']);
    assert.deepEqual(sp.push('d\n\n'), ['cd', '']);
    assert.deepEqual(sp.push('tail'), []);
    assert.deepEqual(sp.flush(), ['tail']);
    assert.deepEqual(sp.flush(), []);
  });

  it('reassembles UTF-8 split across Buffer chunks and handles string/Buffer mixing', () => {
    const sp = new LineSplitter();
    const b = Buffer.from('héllo — ✓\n');
    const out: string[] = [];
    for (let i = 0; i < b.length; i++) out.push(...sp.push(b.subarray(i, i + 1)));
    assert.deepEqual(out, ['héllo — ✓']);
    assert.deepEqual(sp.push('ab'), []);
    assert.deepEqual(sp.push(Buffer.from('cd\n')), ['abcd']);
    assert.deepEqual(sp.push(Buffer.from('ef')), []);
    assert.deepEqual(sp.push('gh\n'), ['efgh']);
  });

  it('truncates a 10 MB line to maxLineBytes without buffering it', () => {
    const sp = new LineSplitter({ maxLineBytes: 1024 * 1024 });
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    const out: string[] = [];
    out.push(...sp.push('[2025-01-01 00:00:00] start\n'));
    for (let i = 0; i < 160; i++) out.push(...sp.push(chunk)); // 10 MiB without newline
    out.push(...sp.push(Buffer.from('zzz\nnext line\n')));
    assert.equal(out.length, 3);
    assert.equal(out[0], '[2025-01-01 00:00:00] start');
    assert.ok(isTruncatedLine(out[1]));
    assert.ok(out[1].startsWith('a'.repeat(1024 * 1024)));
    assert.ok(out[1].length < 1024 * 1024 + 100);
    assert.ok(out[1].includes(String(10 * 1024 * 1024 + 3 - 1024 * 1024)), out[1].slice(-60));
    assert.equal(out[2], 'next line');
    assert.equal(sp.truncatedLines, 1);
    assert.equal(isTruncatedLine(out[2]), false);
  });

  it('truncates long string lines too and does not cut a UTF-8 sequence', () => {
    const sp = new LineSplitter({ maxLineBytes: 10 });
    const out = sp.push('0123456789ABCDEF\nok\n');
    assert.equal(out.length, 2);
    assert.ok(out[0].startsWith('0123456789 '));
    assert.ok(isTruncatedLine(out[0]));
    assert.equal(out[1], 'ok');
    const sb = new LineSplitter({ maxLineBytes: 4 });
    const o2 = sb.push(Buffer.from('aaa✓✓\n')); // ✓ is 3 bytes: only "aaa" fits in 4 bytes
    assert.ok(o2[0].startsWith('aaa '), JSON.stringify(o2[0]));
    assert.ok(o2[0].endsWith(' 6 more bytes]'), JSON.stringify(o2[0]));
    assert.ok(!o2[0].includes('\ufffd'));
    const sc = new LineSplitter({ maxLineBytes: 4 });
    sc.push(Buffer.from('aa'));
    const o3 = sc.push(Buffer.from('✓b\n'));
    assert.ok(o3[0].startsWith('aa '), JSON.stringify(o3[0]));
    assert.ok(o3[0].endsWith(' 4 more bytes]'), JSON.stringify(o3[0]));
    const sf = new LineSplitter({ maxLineBytes: 4 });
    sf.push('abcdefgh');
    const f = sf.flush();
    assert.equal(f.length, 1);
    assert.ok(isTruncatedLine(f[0]));
  });
});

describe('logstats: 2024 mixed-chunk prefill and list values', () => {
  it('"Prefill batch(mixed #running-req: N)." form', () => {
    const s = parseStatLine(
      '[2024-09-01 10:00:00 TP0] Prefill batch(mixed #running-req: 3). #new-seq: 1, #new-token: 100, #cached-token: 20, cache hit rate: 16.67%, #queue-req: 4',
    );
    assert.ok(s);
    assert.equal(s.kind, 'prefill');
    assert.equal(s.runningReqs, 3);
    assert.equal(s.newTokens, 100);
    assert.equal(s.cacheHitRate, 16.67);
    assert.equal(s.queueReqs, 4);
  });

  it('list values keep their inner ", "', () => {
    const s = parseStatLine(
      '[2025-06-01 10:00:00 TP0] Decode batch. #running-req: 12, #token: 10, token usage: 0.01, #running-req per DP: [3, 4, 5], gen throughput (token/s): 10.00, #queue-req: 0, ',
    );
    assert.ok(s);
    assert.equal(s.extra['#running-req per DP'], '[3, 4, 5]');
    assert.equal(s.genThroughput, 10);
    assert.equal(s.queueReqs, 0);
  });
});

describe('isRestartLine (the one restart detector)', () => {
  it('is a "Started server process" startup line and nothing else', () => {
    assert.equal(isRestartLine(classifyLine('[2026-01-01 00:05:00] INFO:     Started server process [1234]')), true);
    assert.equal(isRestartLine(classifyLine('[2026-01-01 00:05:00] The server is fired up and ready to roll!')), false);
    assert.equal(isRestartLine(classifyLine('[2026-01-01 00:05:00] Load weight end. type=Qwen3ForCausalLM')), false);
  });
});

/**
 * Failure classes of SGLang log lines (messages as SGLang prints them, from shared/reference/sglang-failures.md),
 * the custom `[time][file:line][LEVEL]: ` format, PP/EP/ATTN_CP rank tags and hybrid/HiSparse pool usage.
 */
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

  it("HiSparse pools: token usage is the GPU pool (the host pool is not part of SGLang's max); #gpu token fills #token", () => {
    // pool_stats_observer.py: get_max_pool_usage() leaves the host (cpu) pool out
    const s = parseStatLine(
      '[2026-06-01 10:00:00 TP0] Decode batch, #running-req: 9, #gpu-token: 100, gpu token usage: 0.31, cpu token usage: 0.62, gen throughput (token/s): 100.00, #queue-req: 0, ',
    )!;
    assert.equal(s.tokenUsage, 0.31);
    assert.equal(s.numTokens, 100);
    assert.equal(s.extra['cpu token usage'], 0.62);
    const full =
      '[2026-06-01 10:00:00 TP0] Decode batch, #running-req: 9, #gpu token: 7, gpu token usage: 0.30, #cpu token: 9, cpu token usage: 1.00, cuda graph: True, gen throughput (token/s): 100.00, #queue-req: 0';
    assert.equal(parseStatLine(full)!.numTokens, 7);
    assert.equal(isKvPressureStat(parseStatLine(full)!), false, 'a full host tier is not KV pressure');
  });

  it('2026 main-process format "[time] INFO file.py:NNN: " keeps the time; its ServerArgs line is startup', () => {
    // docs notebooks 2026-02/03: "[2026-03-21 12:19:50] INFO server_args.py:2232: Attention backend not specified. ..."
    const st = parseStatLine(
      '[2026-03-21 12:19:50] INFO scheduler.py:640: Decode batch, #running-req: 3, #token: 100, token usage: 0.01, cuda graph: True, gen throughput (token/s): 12.00, #queue-req: 0',
    )!;
    assert.equal(st.time, '2026-03-21 12:19:50');
    assert.equal(st.genThroughput, 12);
    const sa = classifyLine(
      '[2026-02-13 09:29:37] INFO engine.py:156: server_args=ServerArgs(model_path="/m/GPU is lost", watchdog_timeout=300)',
    );
    assert.equal(sa.kind, 'startup');
    assert.equal(
      classifyLine('[2026-03-21 12:19:50] INFO server_args.py:2232: Attention backend not specified. Use fa3 backend by default.').kind,
      'other',
    );
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
    assert.deepEqual(s.errorClasses, { crash: 0, oom: 0, 'kv-pressure': 0, hang: 0, nccl: 0, gpu: 0, 'pd-transfer': 0, ...expected });
    assert.equal(s.errors, CASES.length + 1);
  });
});
