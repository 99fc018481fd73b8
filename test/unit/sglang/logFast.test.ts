/**
 * The byte-level fast path of `parse-log --summary` agrees exactly with the full parser: record by record on
 * every line it takes, and whole summaries on the fixtures (the log lines of the parser's own tests and the
 * reference notes) and on generated logs with every kind of deviation, whatever the chunking.
 */
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import { FastLogSummarizer, FastStatParser } from '../../../src/core/sglang/logFast';
import { LogSummarizer, classifyLine, parseStatLine } from '../../../src/core/sglang/logLines';

/** What LogSummarizer reads from a record (the fast path fills exactly these). */
const SUMMARY_FIELDS = ['kind', 'time', 'ranks', 'rank', 'runningReqs', 'queueReqs', 'tokenUsage', 'acceptLen', 'genThroughput'] as const;

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');

/** Log lines quoted in the parser's tests and in the reference notes. */
function fixtureLines(): string[] {
  const out: string[] = [];
  const dir = path.join(ROOT, 'test', 'unit', 'sglang');
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.ts'))
    .map((f) => path.join(dir, f));
  const ref = path.join(ROOT, '..', 'shared', 'reference', 'sglang-and-nvidia-smi.md');
  for (const f of [...files, ref]) {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch {
      continue;
    }
    for (const m of text.matchAll(/'((?:[^'\\\n]|\\.){20,})'|`([^`$\\]{20,})`/g)) {
      const s = (m[1] ?? m[2]).replace(/\\n/g, '\n').replace(/\\'/g, "'").replace(/\\x1b/g, '\x1b');
      for (const l of s.split('\n')) if (l.length >= 20) out.push(l);
    }
    if (f.endsWith('.md')) for (const l of text.split('\n')) if (l.includes('batch')) out.push(l);
  }
  return out;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** A log of canonical stat lines and every deviation the fast path must leave to the full parser. */
function generatedLog(n: number, seed: number): string {
  const r = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const L: string[] = [];
  for (let i = 0; i < n; i++) {
    const ts = `2026-04-05 20:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}${pick(['', '', '.123', ',5'])}`;
    const tags = pick(['', ' DP0 TP0', ` DP${i % 8} TP0`, ' TP3', ' DP1 PP1 TP2 EP3', ' EP1 DP2', ' DP01', ' XX1', ' DP1 DP2', ' dp0']);
    const gen = pick(['1400.00', '0.00', '12', '1234567.891', '7.5', 'nan', '1e3', '-3.0']);
    const dec = `[${ts}${tags}] Decode batch, #running-req: ${i % 40}, #token: 34901, token usage: ${pick(['0.19', '0.99', '0.995', '1.00'])}, accept len: ${(2.5 + (i % 10) / 20).toFixed(2)}, accept rate: 0.71, cuda graph: ${pick(['True', 'False', 'Maybe'])}, gen throughput (token/s): ${gen}, #queue-req: ${i % 3}, `;
    const pre = `[${ts}${tags}] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53`;
    const k = r();
    if (k < 0.45) L.push(dec);
    else if (k < 0.55) L.push(pre);
    else if (k < 0.6) L.push(`\x1b[32m${dec}\x1b[0m`);
    else if (k < 0.63) L.push(dec + '\r');
    else if (k < 0.66) L.push(dec.replace('#queue-req', '#retracted-req: 2, #queue-req'));
    else if (k < 0.68) L.push(dec.replace('#running-req: ', '#running-req: [1, 2], x: '));
    else if (k < 0.7) L.push(dec.replace('Decode batch,', 'Decode batch.'));
    else if (k < 0.72) L.push(`[2026-04-05 20:00:00] ${dec}`);
    else if (k < 0.74) L.push(dec.replace('accept len', 'accept len: 3.00, accept len'));
    else if (k < 0.76) L.push(dec + ' ünïcødé');
    else if (k < 0.78) L.push(dec.replace(', #queue', ',  #queue'));
    else if (k < 0.8) L.push(`[${ts}] INFO:     127.0.0.1:40052 - "POST /v1/chat/completions HTTP/1.1" 200 OK`);
    else if (k < 0.82) L.push(`[${ts}${tags}] The server is fired up and ready to roll!`);
    else if (k < 0.83) L.push(`[${ts}] Started server process [1234]`);
    else if (k < 0.85) L.push(`[${ts}${tags}] Scheduler hit an exception: torch.OutOfMemoryError: CUDA out of memory.`);
    else if (k < 0.86) L.push('Traceback (most recent call last):');
    else if (k < 0.87) L.push(dec + 'x'.repeat(5000));
    else if (k < 0.875) L.push(dec + 'y'.repeat(70_000));
    else if (k < 0.88) L.push('');
    else if (k < 0.9) L.push(`[${ts}${tags}] Decode batch, #running-req: 3, mamba usage: 1.00, gen throughput (token/s): 10.00`);
    else L.push(dec.replace(', #queue-req: 0, ', ''));
  }
  return L.join('\n') + (r() < 0.5 ? '\n' : '');
}

function fullSummary(buf: Buffer, maxLineBytes?: number) {
  const s = new LogSummarizer({ maxLineBytes });
  s.addChunk(buf);
  s.end();
  return s.summary();
}

/** reuse: every chunk is copied into ONE buffer that is overwritten with junk after addChunk (as parse-log reads files). */
function fastSummary(buf: Buffer, chunk: (i: number) => number, maxLineBytes?: number, reuse = false) {
  const s = new FastLogSummarizer({ maxLineBytes });
  const shared = Buffer.alloc(reuse ? buf.length : 0);
  for (let pos = 0, i = 0; pos < buf.length; i++) {
    const n = Math.max(1, chunk(i));
    const piece = buf.subarray(pos, pos + n);
    if (reuse) {
      const c = shared.subarray(0, piece.copy(shared));
      s.addChunk(c);
      c.fill('[2026-04-05 20:00:00 DP9] Decode batch, #running-req: 9, \n\xff');
    } else s.addChunk(piece);
    pos += n;
  }
  s.end();
  return { summary: s.summary(), fastLines: s.fastLines };
}

describe('parse-log fast path (logFast.ts) agrees with the full parser', () => {
  it('record by record: every line it takes gives the summary fields exactly as parseStatLine does', () => {
    const lines = [...fixtureLines(), ...generatedLog(3000, 7).split('\n')];
    const p = new FastStatParser();
    let taken = 0;
    for (const l of lines) {
      const b = Buffer.from(l + '\n');
      const st = p.parse(b, 0, b.length - 1);
      if (!st) continue;
      taken++;
      const full = parseStatLine(l)!;
      assert.ok(full, l);
      for (const k of SUMMARY_FIELDS) assert.deepEqual(st[k], full[k], `${k}: ${l}`);
      const c = classifyLine(l);
      assert.equal(c.kind, st.kind, l);
      assert.equal(c.errorClass, undefined, l);
    }
    assert.ok(taken > 300, `fast path took ${taken} lines`);
  });

  it('whole summaries on the fixtures', () => {
    const buf = Buffer.from(fixtureLines().join('\n') + '\n');
    const a = fullSummary(buf);
    assert.deepEqual(fastSummary(buf, () => 4096).summary, a);
    assert.deepEqual(fastSummary(buf, () => 1).summary, a);
  });

  for (const seed of [1, 2, 3, 4]) {
    it(`whole summaries on a generated log (seed ${seed}), whatever the chunking`, () => {
      const buf = Buffer.from(generatedLog(2500, seed));
      const a = fullSummary(buf);
      const r = rng(seed * 31);
      for (const chunk of [() => 1 << 20, () => 64 * 1024, () => 1 + Math.floor(r() * 300), () => 7]) {
        const f = fastSummary(buf, chunk, undefined, seed % 2 === 0);
        assert.deepEqual(f.summary, a);
        assert.ok(f.fastLines > 200, `fast lines ${f.fastLines}`);
      }
      // a small line limit: truncation is the full splitter's
      assert.deepEqual(fastSummary(buf, () => 8192, 1000).summary, fullSummary(buf, 1000));
    });
  }

  it('a string chunk, a partial last line and an over-long line in pieces', () => {
    const s = generatedLog(500, 9);
    const full = fullSummary(Buffer.from(s + 'x'.repeat(3 * 1024 * 1024) + '\n[2026-04-05 20:00:00] Decode batch, #running-req: 1'));
    const f = new FastLogSummarizer();
    f.addChunk(s.slice(0, 1000));
    f.addChunk(Buffer.from(s.slice(1000)));
    for (let i = 0; i < 3; i++) f.addChunk(Buffer.alloc(1024 * 1024, 'x'));
    f.addChunk(Buffer.from('\n[2026-04-05 20:00:00] Decode batch, #running-req: 1'));
    f.end();
    assert.deepEqual(f.summary(), full);
  });

  // The learned line shapes (a line of a shape seen before is taken in one pass): a line that matches a learned
  // shape in all but one byte must still be judged exactly as the full parser judges it.
  const canonical = (i: number) => {
    const ts = `2026-04-05 20:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}`;
    return i % 5 === 0
      ? `[${ts} DP${i % 8} TP0] Prefill batch, #new-seq: 1, #new-token: ${150 + i}, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53`
      : `[${ts} DP${i % 8} TP0] Decode batch, #running-req: ${30 + (i % 7)}, #token: 34901, token usage: 0.${10 + (i % 89)}, accept len: ${(2.5 + (i % 10) / 20).toFixed(2)}, accept rate: 0.71, cuda graph: ${i % 3 ? 'True' : 'False'}, gen throughput (token/s): ${(1400 + (i % 200)).toFixed(2)}, #queue-req: ${i % 4}, `;
  };
  const HOSTILE = ['0', '9', '.', ',', ' ', ':', '\r', '\n', '\0', '\xff', 'e', '-', 'x', ']', '[', 'é'];

  it('single-byte mutations of learned shapes, whatever the chunking', () => {
    const r = rng(77);
    const L: string[] = [];
    for (let i = 0; i < 4000; i++) {
      let l = canonical(i);
      if (i > 20 && r() < 0.5) {
        const at = Math.floor(r() * (l.length + 1));
        const k = r();
        const c = HOSTILE[Math.floor(r() * HOSTILE.length)];
        l = k < 0.4 ? l.slice(0, at) + c + l.slice(at + 1) : k < 0.7 ? l.slice(0, at) + c + l.slice(at) : l.slice(0, at) + l.slice(at + 1);
      }
      L.push(l);
    }
    const buf = Buffer.from(L.join('\n') + '\n', 'latin1');
    const a = fullSummary(buf);
    for (const chunk of [() => 1 << 20, () => 1 + Math.floor(r() * 500), () => 3]) {
      for (const reuse of [false, true]) {
        const f = fastSummary(buf, chunk, undefined, reuse);
        assert.deepEqual(f.summary, a);
        assert.ok(f.fastLines > 1500, `fast lines ${f.fastLines}`);
      }
    }
  });

  it('numbers at the edges of what the fast path reads, KV pressure and CRLF in a learned shape', () => {
    const base = canonical(1);
    const vary = (v: string) => base.replace('#running-req: 31', `#running-req: ${v}`);
    const lines = [
      base,
      base,
      vary('123456789012345'), // 15 digits: taken
      vary('1234567890123456'), // 16 digits: the full parser
      vary('1.2.3'),
      vary('.'),
      vary('.5'),
      vary('5.'),
      vary(''),
      vary('00031'),
      vary('3 1'),
      base.replace('token usage: 0.11', 'token usage: 0.995'),
      base.replace('token usage: 0.11', 'token usage: 1.00'),
      base.replace('token usage: 0.11', 'token usage: 0.9949'),
      base + '\r',
      base + '\r\n' + base,
      base.slice(0, -2),
      base.slice(0, -1),
      base + ',',
      base.replace('DP1 TP0', 'DP1 TP0 DP1'),
      base.replace('DP1 TP0', 'DP1234567 TP0'),
      base.replace(':01 DP1', ':01.5 DP1'),
      base.replace(':01 DP1', ':61 DP1'),
      base.replace('2026-04-05', '2026-04-5 '),
      canonical(61), // a new minute
      canonical(3600 * 24 + 5),
    ];
    const buf = Buffer.from(lines.join('\n') + '\n');
    const a = fullSummary(buf);
    for (const n of [1 << 20, 1, 2, 17, 199, 200, 201, 202]) assert.deepEqual(fastSummary(buf, () => n).summary, a, `chunks of ${n}`);
  });

  it('a line longer than maxLineBytes is left to the full splitter, which cuts it', () => {
    // the same shapes with numbers of 1 to 12 digits: lengths vary around each limit
    const lines = Array.from({ length: 300 }, (_, i) =>
      canonical(i).replace(/#running-req: \d+/, `#running-req: ${'3'.repeat(1 + (i % 12))}`),
    );
    const buf = Buffer.from(lines.join('\n') + '\n');
    for (const max of [100, 150, 190, 195, 200, 205, 210, 250]) {
      const f = fastSummary(buf, () => 1 << 20, max);
      assert.deepEqual(f.summary, fullSummary(buf, max), `maxLineBytes ${max}`);
    }
    assert.equal(fastSummary(buf, () => 1 << 20, 100).fastLines, 0);
  });

  it('takes every canonical stat line of a multi-rank log, in one pass after the first of each shape', () => {
    const n = 5000;
    const buf = Buffer.from(Array.from({ length: n }, (_, i) => canonical(i)).join('\n') + '\n');
    const f = fastSummary(buf, () => 64 * 1024);
    assert.deepEqual(f.summary, fullSummary(buf));
    assert.equal(f.fastLines, n);
    assert.equal(f.summary.ranks.length, 8);
  });

  it('takes the 2026 line shapes too (no trailing ", " on decode lines; #pending-token on prefill lines)', () => {
    // metrics_reporter.py (2026): decode ends at "#queue-req: N"; prefill adds "#pending-token" after "#queue-req"
    const lines: string[] = [];
    for (let i = 0; i < 200; i++) {
      const t = `2026-08-01 10:00:${String(i % 60).padStart(2, '0')}`;
      lines.push(
        `[${t} DP${i % 2} TP0] Decode batch, #running-req: ${30 + (i % 5)}, #token: ${9000 + i}, token usage: 0.${10 + (i % 80)}, cuda graph: True, gen throughput (token/s): ${1900 + i}.25, #queue-req: ${i % 3}`,
      );
      if (i % 4 === 0)
        lines.push(
          `[${t} DP${i % 2} TP0] Prefill batch, #new-seq: 1, #new-token: 812, #cached-token: 0, token usage: 0.21, #running-req: 31, #queue-req: 2, #pending-token: ${i * 10}, cuda graph: False, input throughput (token/s): 4012.50`,
        );
    }
    const buf = Buffer.from(lines.join('\n') + '\n');
    const f = fastSummary(buf, () => 64 * 1024);
    assert.deepEqual(f.summary, fullSummary(buf));
    assert.equal(f.fastLines, lines.length, 'every 2026 stat line is taken by the fast path');
  });
});
