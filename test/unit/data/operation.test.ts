/** The data check as a described operation: the script over stdin, its parser on a real output (golden), its definitions run by python3. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { dataOperation, dataScript, parseDataOutput } from '../../../src/core/data/operation';
import { buildReport, DEFAULT_THRESHOLDS } from '../../../src/core/data/verdict';
import { sampleMarkdown } from '../../../src/core/data/summary';
import { runOperation } from '../../../src/core/remote/operation';
import { LocalTransport } from '../../../src/core/ssh/transport';
import { GpuSessionsError } from '../../../src/core/util/errors';
import { execResult } from '../../helpers/fakeTransport';

const FIX = path.resolve(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'data');
const SIM_BIN = path.resolve(__dirname, '..', '..', '..', '..', 'src', 'sim', 'bin');

describe('data operation (core/data/operation)', () => {
  it('golden: the node script output of an SGLang /generate file, a binary file and a missing one', () => {
    const text = readFileSync(path.join(FIX, 'sglang-generate.out'), 'utf8');
    const out = parseDataOutput(text, 'GSfixture');
    assert.equal(out.complete, true);
    assert.equal(out.peakRssKiB, 19456);
    const r = buildReport('n1', out.files, out.skipped, DEFAULT_THRESHOLDS, out.elapsedMs);
    const [gen, bin, gone] = r.files;
    assert.equal(gen.format, 'sglang-generate');
    assert.equal(gen.rows, 120);
    assert.equal(gen.rowsExact, true);
    assert.equal(gen.sampled, 120);
    assert.equal(gen.parseErrors, 0);
    assert.deepEqual(gen.topResponse, { text: 'OK.', share: 40 / 120 });
    assert.equal(gen.shares.truncated, 12 / 120);
    assert.equal(gen.shares.empty, 0);
    assert.deepEqual(gen.completionTokens, { p10: 6, p50: 40, p90: 40, max: 40 });
    assert.equal(gen.verdict, 'degenerate');
    assert.match(gen.reasons[0], /^33 % of the answers are the same `OK\.` — look before you train on it$/);
    assert.ok(gen.reasons.includes('the last line is being written (not counted)'));
    assert.match(bin.error!, /binary/);
    assert.equal(bin.verdict, 'suspect');
    assert.match(gone.error!, /no such file/);
    assert.equal(r.verdict, 'degenerate');
  });

  it('a cut-off run (no end record) is an error, and a node without python3 says so', () => {
    const op = dataOperation('n1', { paths: ['/x.jsonl'] });
    const text = readFileSync(path.join(FIX, 'sglang-generate.out'), 'utf8');
    assert.throws(
      () => op.parse(execResult(text)),
      (e: GpuSessionsError) => e.code === 'remote-incomplete',
    );
    assert.throws(
      () => op.parse(execResult('', { code: 127, stderr: Buffer.from('sh: 1: python3: not found\n') })),
      /python3 is not on n1/,
    );
  });

  it('the command line is fixed: paths travel inside the script, base64-encoded', () => {
    const evil = "/tmp/x'; rm -rf ~; '.jsonl";
    const op = dataOperation('n1', { paths: [evil] });
    assert.equal(op.command, 'python3 -');
    assert.ok(!String(op.stdin).includes('rm -rf'));
    const b64 = /^CFG_B64 = "([A-Za-z0-9+/=]+)"\n/.exec(dataScript({ paths: [evil] }, 'N'))![1];
    assert.deepEqual(JSON.parse(Buffer.from(b64, 'base64').toString()).paths, [evil]);
  });

  describe('the definitions, run by python3 on this machine', () => {
    let dir: string;
    before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-data-'))));
    after(() => rmSync(dir, { recursive: true, force: true }));
    const judge = async (rows: unknown[], extra = {}) => {
      const p = path.join(dir, `f${Math.random().toString(36).slice(2)}.jsonl`);
      writeFileSync(p, rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r)) + '\n').join(''));
      const r = await runOperation(new LocalTransport(), dataOperation('local', { paths: [p], ...extra }));
      return r.files[0];
    };

    it('answer = response without its <think> block, trimmed; thinking-only when reasoning is there', async () => {
      const f = await judge([
        { text: '<think>I ponder</think>\n\n' }, // thinking only
        { text: 'I ponder</think>  ' }, // the template opened the block: thinking only
        { text: '<think>never closed' }, // cut off while thinking: thinking only
        { text: '<think></think>\n\nOK.' }, // an empty think block, then OK.
        { text: '   ' }, // empty, no reasoning
        { response: '', reasoning_content: 'thought' }, // flat with reasoning_content
        { text: 'a real answer' },
        { text: 'a real answer' },
      ]);
      assert.equal(f.format, 'flat');
      assert.equal(f.judged, 8);
      assert.equal(f.shares.empty, 5 / 8);
      assert.equal(f.shares.thinkingOnly, 4 / 8);
      assert.deepEqual(f.topResponse, { text: 'a real answer', share: 2 / 8 });
    });

    it('linear in its input: rows of 40,000 "<think>" (a degenerate model) are judged at once (issue 39, D1)', async () => {
      const started = Date.now();
      const f = await judge([
        { text: '<think>'.repeat(40_000) },
        { text: '<think>'.repeat(40_000) + 'x</think>y' },
        { text: 'a</think>'.repeat(20_000) },
        { text: 'ok' },
      ]);
      // the old `<think>.*?</think>` regex took ~100 s a row here; the budget of a whole run is 110 s
      assert.ok(Date.now() - started < 20_000, `took ${Date.now() - started} ms`);
      assert.equal(f.judged, 4);
      assert.equal(f.shares.thinkingOnly, 1 / 4, 'only the never-closed block is thinking alone; the others leave an answer');
    });

    it('repetitive: 30 % of the words inside 10-word runs that occur more than once', async () => {
      const ten = 'one two three four five six seven eight nine ten';
      const fresh = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
      const f = await judge([
        { output: `${ten} ${ten} ${fresh(46)}` }, // 20 of 66 words = 30 %: repetitive
        { output: `${ten} ${ten} ${fresh(50)}` }, // 20 of 70 = 29 %: not
        { output: `${fresh(9)} ${fresh(9)}` }, // 9-word runs: not
      ]);
      assert.equal(f.shares.repetitive, 1 / 3);
    });

    it('finish_reason length is truncated; usage.completion_tokens are read; a JSON array line is a parse error', async () => {
      const chat = (content: string, fin: string) => ({
        choices: [{ message: { content }, finish_reason: fin }],
        usage: { completion_tokens: 7 },
      });
      const f = await judge([chat('a', 'length'), chat('b', 'stop'), chat('c', 'length'), '[1, 2]', 'not json']);
      assert.equal(f.format, 'openai-chat');
      assert.equal(f.sampled, 5);
      assert.equal(f.parseErrors, 2);
      assert.equal(f.shares.truncated, 2 / 3);
      assert.deepEqual(f.completionTokens, { p10: 7, p50: 7, p90: 7, max: 7 });
    });

    it('Open Sample: 15 rows of the sample kept as they are, besides the answers that stood out (issue 43)', async () => {
      const f = await judge(Array.from({ length: 40 }, (_, i) => ({ prompt: `p${i}`, answer: i % 4 ? `answer ${i}` : '' })));
      assert.equal(f.examples.rows?.length, 15);
      assert.deepEqual(f.examples.rows?.[1], { prompt: 'p1', answer: 'answer 1' });
      const page = sampleMarkdown('n1', '/out/x.jsonl', f);
      assert.match(page, /^## Sampled rows \(15 of 40 judged\)$/m);
      assert.equal(page.match(/^prompt: /gm)?.length, 15 + 1 + 3, '15 sampled, the top answer, 3 empty ones');
    });

    it("the demo's sim-fault data-degenerate writes the client's next batch, judged degenerate (issue 43)", () => {
      const home = path.join(dir, 'home');
      mkdirSync(path.join(home, 'completions'), { recursive: true });
      writeFileSync(path.join(home, 'completions', 'batch_000000.jsonl'), '{}\n');
      const out = execFileSync('python3', [path.join(SIM_BIN, 'sim-fault'), 'data-degenerate', '0.85'], {
        env: { ...process.env, HOME: home },
        encoding: 'utf8',
      });
      const batch = path.join(home, 'completions', 'batch_000001.jsonl');
      assert.equal(out.trim(), `sim-fault: the client wrote ${batch}`);
      return runOperation(new LocalTransport(), dataOperation('local', { paths: [batch] })).then((r) => {
        const f = r.files[0];
        assert.equal(f.judged, 100);
        assert.equal(f.verdict, 'degenerate', f.reasons.join('; '));
        assert.deepEqual(f.topResponse, { text: 'OK.', share: 85 / 100 });
        assert.equal(f.examples.rows?.length, 15);
      });
    });

    it('--sample bounds what is read: the last N rows and N spread through the file', async () => {
      const rows = Array.from({ length: 5000 }, (_, i) => ({ answer: `row ${i}` }));
      const f = await judge(rows, { sample: 100 });
      assert.equal(f.rows, 5000);
      assert.ok(f.sampled > 150 && f.sampled <= 200, `sampled ${f.sampled}`);
    });
  });
});
