/**
 * `gpu-sessions data` over a REAL OpenSSH sshd (user gs26data): files with planted defect rates in each record
 * shape come out with their shares within a few points and the verdicts as defined; a 500 MB file is judged in
 * seconds on the node (only the report comes back); broken lines are counted; a binary file, a file that is not
 * JSONL, a missing file and a pipe each get their reason; discovery finds the generation client's open file,
 * what progress.json names and completions/ folders.
 */
import assert from 'node:assert/strict';
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { RecordShape, plantedLines } from '../helpers/dataRows';
import { SimNode, startSimNode, testUser } from '../helpers/simnode';

const USER = testUser('gs26data');

interface FileJson {
  path: string;
  format: string;
  rows: number;
  rowsExact: boolean;
  sampled: number;
  parseErrors: number;
  shares: { empty: number; thinkingOnly: number; truncated: number; topResponse: number; repetitive: number };
  topResponse: { text: string; share: number } | null;
  verdict: string;
  reasons: string[];
  error: string | null;
  foundBy: string | null;
}
interface ReportJson {
  node: string;
  files: FileJson[];
  verdict: string;
  elapsedMs: number;
  peakRssKiB: number | null;
  skipped: Array<{ path: string; why: string }>;
}

const near = (got: number, want: number, what: string, tol = 0.035) =>
  assert.ok(Math.abs(got - want) <= tol, `${what}: ${(got * 100).toFixed(1)} % (planted ${(want * 100).toFixed(1)} %)`);

describe('gpu-sessions data over a real OpenSSH sshd', function () {
  this.timeout(180_000);
  let sim: SimNode;
  const args = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];
  const d = () => path.join(sim.home, 'gen');
  const put = (name: string, lines: string[] | string) => {
    const p = path.join(d(), name);
    writeFileSync(p, Array.isArray(lines) ? lines.join('') : lines);
    execFileSync('chown', [`${USER}:${USER}`, p]);
    return p;
  };
  const run = async (extra: string[], timeoutMs = 120_000) => {
    const r = await cli([...args(), 'data', 'simnode', ...extra, '--json'], { timeoutMs });
    assert.ok(r.code === 0 || r.code === 7, `exit ${r.code}: ${r.stderr}`);
    return { code: r.code, report: JSON.parse(r.stdout) as ReportJson, stderr: r.stderr };
  };

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: USER, startServers: false, gpuCount: 1 });
    mkdirSync(d(), { recursive: true });
    execFileSync('chown', [`${USER}:${USER}`, d()]);
  });
  after(async () => {
    await sim?.stop();
  });

  const shapes: RecordShape[] = ['openai-chat', 'openai-text', 'sglang-generate', 'chat-messages', 'flat'];
  for (const [k, shape] of shapes.entries()) {
    it(`${shape}: planted shares come out within a few points, verdict degenerate (exit 7)`, async () => {
      const planted = { empty: 0.25, thinkingOnly: 0.15, top: 0.1, repetitive: 0.08, truncated: 0.3 };
      const p = put(`${shape}.jsonl`, plantedLines(shape, 20_000, planted, 11 + k));
      const { code, report } = await run([p]);
      assert.equal(code, 7);
      assert.equal(report.verdict, 'degenerate');
      const f = report.files[0];
      assert.equal(f.path, p);
      assert.equal(f.format, shape);
      assert.equal(f.rows, 20_000);
      assert.equal(f.rowsExact, true);
      assert.equal(f.sampled, 2000);
      near(f.shares.empty, planted.empty, 'empty');
      near(f.shares.thinkingOnly, planted.thinkingOnly, 'thinkingOnly');
      near(f.shares.topResponse, planted.top, 'topResponse');
      near(f.shares.repetitive, planted.repetitive, 'repetitive');
      near(f.shares.truncated, planted.truncated, 'truncated');
      assert.deepEqual(f.topResponse?.text, 'OK.');
      assert.equal(f.verdict, 'degenerate');
      assert.match(f.reasons.join('\n'), /of the answers are empty/);
    });
  }

  it('verdicts as defined: clean is ok, 8 % same answer is suspect, 25 % same answer is degenerate, 60 % cut is suspect', async () => {
    const clean = put('clean.jsonl', plantedLines('openai-chat', 3000, { truncated: 0.1 }, 3));
    const some = put('some.jsonl', plantedLines('flat', 3000, { top: 0.08 }, 4));
    const many = put('many.jsonl', plantedLines('flat', 3000, { top: 0.25 }, 5));
    const cut = put('cut.jsonl', plantedLines('sglang-generate', 3000, { truncated: 0.6 }, 6));
    const { code, report } = await run([clean, some, many, cut]);
    assert.equal(code, 7);
    assert.deepEqual(
      report.files.map((f) => [path.basename(f.path), f.verdict]),
      [
        ['clean.jsonl', 'ok'],
        ['some.jsonl', 'suspect'],
        ['many.jsonl', 'degenerate'],
        ['cut.jsonl', 'suspect'],
      ],
    );
    assert.match(report.files[2].reasons[0], /of the answers are the same `OK\.` — look before you train on it/);
    assert.match(report.files[3].reasons.join(' '), /cut at the length limit/);
    // exit 0 when nothing is degenerate, and the text output is a table
    const r = await cli([...args(), 'data', 'simnode', clean, some]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /VERDICT\s+ROWS\s+EMPTY%/);
    assert.match(r.stdout, /suspect\s+3,000/);
  });

  it('under 50 sampled rows a 40 % empty file is suspect, not degenerate', async () => {
    const p = put('few.jsonl', plantedLines('flat', 30, { empty: 0.4 }, 8));
    const { code, report } = await run([p]);
    assert.equal(code, 0);
    assert.equal(report.files[0].verdict, 'suspect');
    assert.match(report.files[0].reasons.join(' '), /too few to call it degenerate/);
  });

  it('broken JSON lines are counted (parseErrors), and a half-written last line is not an error', async () => {
    const lines = plantedLines('openai-chat', 4000, { broken: 0.1 }, 9);
    const p = put('broken.jsonl', lines.join('') + '{"choices": [{"message": {"content": "half wri');
    const { report } = await run([p]);
    const f = report.files[0];
    near(f.parseErrors / f.sampled, 0.1, 'parse errors');
    assert.equal(f.verdict, 'suspect');
    assert.match(f.reasons.join(' '), /not valid JSON rows/);
    assert.match(f.reasons.join(' '), /last line is being written/);
    assert.equal(f.rows, 4000);
  });

  it('bad input gets a per-file reason, never a crash or a hang: binary, not JSONL, missing, a pipe, a folder without JSONL', async () => {
    const bin = put('weights.jsonl', Buffer.concat([Buffer.from('{"a":1}\n'), Buffer.alloc(4096, 0)]).toString('latin1'));
    const csv = put('table.jsonl', 'a,b,c\n1,2,3\n4,5,6\n');
    const fifo = path.join(d(), 'pipe.jsonl');
    execFileSync('mkfifo', [fifo]);
    execFileSync('chown', [`${USER}:${USER}`, fifo]);
    const empty = path.join(d(), 'emptydir');
    mkdirSync(empty);
    const t0 = Date.now();
    const { code, report } = await run([bin, csv, path.join(d(), 'gone.jsonl'), fifo, empty], 60_000);
    assert.ok(Date.now() - t0 < 30_000, 'no hang');
    assert.equal(code, 0);
    const why = Object.fromEntries(report.files.map((f) => [path.basename(f.path), f.error]));
    assert.match(why['weights.jsonl']!, /binary/);
    assert.match(why['table.jsonl']!, /not JSONL/);
    assert.match(why['gone.jsonl']!, /no such file/);
    assert.match(why['pipe.jsonl']!, /not a regular file/);
    assert.match(why['emptydir']!, /no \.jsonl file/);
    for (const f of report.files) assert.equal(f.verdict, 'suspect');
  });

  it('a file deleted while it is read is judged from what was read, or reported gone', async () => {
    const p = put('vanishing.jsonl', plantedLines('flat', 50_000, {}, 10));
    const pending = run([p]);
    setTimeout(() => sim.sshd.ssh(`rm -f '${p}'`), 300);
    const { report } = await pending;
    const f = report.files[0];
    if (f.error) assert.match(f.error, /no such file/);
    else assert.equal(f.verdict, 'ok');
  });

  it('--response-field and --prompt-field override the detected shape', async () => {
    const lines = Array.from(
      { length: 200 },
      (_, i) => JSON.stringify({ q: `question ${i}`, out: { gen: i % 2 ? '' : `answer ${i} is fine` } }) + '\n',
    );
    const p = put('custom.jsonl', lines);
    const plain = await run([p]);
    assert.match(plain.report.files[0].error ?? '', /no answers found/);
    const { report } = await run([p, '--response-field', '/out/gen', '--prompt-field', '/q']);
    near(report.files[0].shares.empty, 0.5, 'empty', 0.01);
    assert.equal(report.files[0].verdict, 'degenerate');
    const bad = await cli([...args(), 'data', 'simnode', p, '--response-field', 'out.gen']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /JSON pointer/);
  });

  it('salvage records the data verdict of each output file in the manifest and SALVAGE.md, and the verdict stays safe', async () => {
    const dest = mkdtempSync(path.join(os.tmpdir(), 'gs26-salvage-'));
    try {
      const r = await cli([...args(), 'salvage', 'simnode', '--dest', dest, '--yes', '--json', '--roots', '~/gen'], { timeoutMs: 150_000 });
      assert.equal(r.code, 0, r.stdout.slice(-2000) + r.stderr);
      const m = JSON.parse(r.stdout) as {
        verdict: string;
        dest: string;
        data: { verdict: string; files: Array<{ path: string; verdict: string; reasons: string[] }> };
      };
      assert.equal(m.verdict, 'safe');
      const many = m.data.files.find((f) => f.path.endsWith('/many.jsonl'))!;
      assert.equal(many.verdict, 'degenerate');
      assert.equal(m.data.verdict, 'degenerate');
      const md = readFileSync(path.join(m.dest, 'SALVAGE.md'), 'utf8');
      assert.match(md, /## ✅ Safe to shut down/);
      assert.match(md, /## Data quality of the generation output/);
      assert.match(md, /of the answers are the same .*OK\..* look before you train on it/);
      const manifest = JSON.parse(readFileSync(path.join(m.dest, 'salvage-manifest.json'), 'utf8')) as { data: { files: unknown[] } };
      assert.ok(manifest.data.files.length >= 5);
    } finally {
      rmSync(dest, { recursive: true, force: true });
    }
  });

  it('a 500 MB file is judged in seconds on the node, in bounded memory; only the report comes back', async function () {
    this.timeout(300_000);
    const p = path.join(d(), 'big.jsonl');
    const fd = openSync(p, 'w');
    let bytes = 0;
    let i = 0;
    while (bytes < 500 * 1024 * 1024) {
      const chunk = plantedLines('openai-chat', 2000, { top: 0.3 }, 100 + i, i * 2000).join('');
      writeSync(fd, chunk);
      bytes += Buffer.byteLength(chunk);
      i++;
    }
    closeSync(fd);
    execFileSync('chown', [`${USER}:${USER}`, p]);
    const t0 = Date.now();
    const r = await cli([...args(), 'data', 'simnode', p, '--json'], { timeoutMs: 120_000 });
    const wall = Date.now() - t0;
    assert.equal(r.code, 7, r.stderr);
    const report = JSON.parse(r.stdout) as ReportJson;
    const f = report.files[0];
    console.log(
      `      500 MB (${bytes} bytes, ${i * 2000} rows): judged in ${wall} ms wall (${report.elapsedMs} ms on the node), ` +
        `peak RSS ${report.peakRssKiB} KiB, ${r.stdout.length} bytes came back`,
    );
    assert.equal(f.rows, i * 2000);
    near(f.shares.topResponse, 0.3, 'topResponse');
    assert.ok(wall < 30_000, `judged in ${wall} ms`);
    assert.ok(r.stdout.length < 20_000, 'only the report comes back');
    if (report.peakRssKiB !== null) assert.ok(report.peakRssKiB < 256 * 1024, `peak RSS ${report.peakRssKiB} KiB`);
    sim.sshd.ssh(`rm -f '${p}'`);
  });
});
