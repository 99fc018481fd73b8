/** The parse-log command (cli/cmdParseLog): --json records, the default listing, --summary, and unreadable files. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';

describe('parse-log (cmdParseLog)', () => {
  const LOG = [
    '[2026-04-05 20:02:50] Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16',
    '[2026-04-05 20:02:51] The server is fired up and ready to roll!',
    '[2026-04-05 20:02:52 DP0 TP0] Decode batch, #running-req: 46, #token: 34901, token usage: 0.19, accept len: 2.50, cuda graph: False, gen throughput (token/s): 1447.08, #queue-req: 0, ',
    '[2026-04-05 20:02:53 DP1 TP1] Decode batch, #running-req: 40, #token: 30000, token usage: 0.18, accept len: 2.90, cuda graph: True, gen throughput (token/s): 1000.00, #queue-req: 2, ',
    '[2026-04-05 20:02:54 DP0 TP0] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53',
    '[2026-04-05 20:02:55 DP0 TP0] Decode batch, #running-req: 47, #token: 35000, token usage: 0.20, accept len: 2.70, cuda graph: False, gen throughput (token/s): 1552.92, #queue-req: 1, fwd occupancy: 87.50%',
    'torch.OutOfMemoryError: CUDA out of memory.',
  ].join('\n');

  async function run(opts: { json: boolean; summary: boolean }, files: string[] = [], stdin?: string) {
    const { cmdParseLog } = await import('../../../src/cli/cmdParseLog');
    let out = '';
    let err = '';
    const input = new PassThrough();
    if (stdin !== undefined) input.end(stdin);
    const rc = await cmdParseLog(files, opts, { out: (s) => (out += s), err: (s) => (err += s), stdin: input });
    return { rc, out, err };
  }

  it('--json: one object per stat line, identical to JSON.stringify({...toJsonRecord(stat), file, lineNo}); error lines with errorClass', async () => {
    const { toJsonRecord, parseStatLine } = await import('../../../src/core/sglang/logLines');
    const { statJsonLine } = await import('../../../src/cli/cmdParseLog');
    const r = await run({ json: true, summary: false }, [], LOG);
    assert.equal(r.rc, 0);
    const all = r.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.equal(all.length, 5);
    assert.deepEqual(all[4], {
      kind: 'error',
      time: null,
      rank: '',
      ranks: {},
      errorClass: 'oom',
      message: 'torch.OutOfMemoryError: CUDA out of memory.',
      file: null,
      lineNo: 7,
    });
    const objs = all.slice(0, 4);
    assert.deepEqual(
      objs.map((o) => [o.kind, o.rank, o.genThroughput, o.lineNo]),
      [
        ['decode', 'DP0 TP0', 1447.08, 3],
        ['decode', 'DP1 TP1', 1000, 4],
        ['prefill', 'DP0 TP0', null, 5],
        ['decode', 'DP0 TP0', 1552.92, 6],
      ],
    );
    for (const k of [
      'kind',
      'time',
      'ranks',
      'genThroughput',
      'inputThroughput',
      'runningReqs',
      'queueReqs',
      'tokenUsage',
      'acceptLen',
      'acceptRate',
      'cudaGraph',
      'extra',
    ]) {
      assert.ok(k in objs[0], k);
    }
    assert.deepEqual(objs[3].extra, { 'fwd occupancy': 87.5 });
    assert.equal(objs[0].file, null);
    for (const line of LOG.split('\n')) {
      const st = parseStatLine(line);
      if (st) assert.equal(statJsonLine(st, 'f "x".log', 7), JSON.stringify({ ...toJsonRecord(st), file: 'f "x".log', lineNo: 7 }));
    }
  });

  it('default: every line with its kind; --summary: per rank, errors, readiness; --summary --json: one object', async () => {
    const d = await run({ json: false, summary: false }, [], LOG + '\n');
    assert.deepEqual(
      d.out
        .trim()
        .split('\n')
        .map((l) => l.split(/\s+/)[0]),
      ['startup', 'ready', 'decode', 'decode', 'prefill', 'decode', 'error'],
    );
    const s = await run({ json: false, summary: true }, [], LOG);
    assert.match(s.out, /^\(stdin\): 7 lines/);
    assert.match(s.out, /ready: yes · errors: 1/);
    assert.match(s.out, /DP0 TP0\s+3\s+2\s+1\s+1,552\.9\s+1,500\.0\s+1,552\.9\s+2\.60\s+47\s+1/);
    assert.match(s.out, /DP1 TP1\s+1\s+1\s+0\s+1,000\.0/);
    const j = await run({ json: true, summary: true }, [], LOG);
    const o = JSON.parse(j.out);
    assert.equal(o.files.length, 1);
    assert.equal(o.files[0].ready, true);
    assert.equal(o.files[0].errors, 1);
    assert.deepEqual(
      o.files[0].ranks.map((r: { rank: string; meanGenThroughput: number }) => [r.rank, r.meanGenThroughput]),
      [
        ['DP0 TP0', 1500],
        ['DP1 TP1', 1000],
      ],
    );
  });

  it('reads files, reports an unreadable one (exit 1) and goes on', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-parselog-'));
    try {
      const f = path.join(dir, 'a.log');
      writeFileSync(f, LOG);
      const r = await run({ json: true, summary: false }, [path.join(dir, 'missing.log'), f]);
      assert.equal(r.rc, 1);
      assert.match(r.err, /cannot read .*missing\.log/);
      assert.equal(r.out.trim().split('\n').length, 5);
      assert.equal(JSON.parse(r.out.split('\n')[0]).file, f);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
