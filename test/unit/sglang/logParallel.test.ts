/**
 * `parse-log --summary` on several threads (sglang/logParallel): the merged summary is byte for byte the one
 * pass's, whatever the number of pieces (means included: their float sums are added in file order).
 */
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FastLogSummarizer } from '../../../src/core/sglang/logFast';
import { mergePieces, pieceBounds, summarizeFileParallel, summarizePiece } from '../../../src/core/sglang/logParallel';

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Stat lines of many ranks and values (sums that round differently in another order), and every other kind. */
function log(n: number, seed: number, trailingNewline = true): string {
  const r = rng(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(r() * xs.length)];
  const L: string[] = [];
  for (let i = 0; i < n; i++) {
    const ts = `2026-04-05 20:${String(Math.floor(i / 60) % 60).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}`;
    const tags = pick([` DP${i % 8} TP0`, ' TP3', '', ' DP1 PP1 TP2 EP3']);
    const gen = (r() * 3000).toFixed(pick([2, 2, 3, 0]));
    const k = r();
    if (k < 0.7)
      L.push(
        `[${ts}${tags}] Decode batch, #running-req: ${i % 40}, #token: 34901, token usage: 0.19, accept len: ${(1 + r() * 3).toFixed(2)}, accept rate: 0.71, cuda graph: True, gen throughput (token/s): ${gen}, #queue-req: ${i % 3}, `,
      );
    else if (k < 0.8)
      L.push(
        `[${ts}${tags}] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53`,
      );
    else if (k < 0.83) L.push(`[${ts}${tags}] Decode batch, #running-req: 3, token usage: 1.00, gen throughput (token/s): ${gen}, \x1b[0m`);
    else if (k < 0.86) L.push(`[${ts}] INFO:     127.0.0.1:40052 - "POST /v1/chat/completions HTTP/1.1" 200 OK`);
    else if (k < 0.88) L.push(`[${ts}] The server is fired up and ready to roll!`);
    else if (k < 0.9) L.push(`[${ts}] INFO:     Started server process [${1000 + i}]`);
    else if (k < 0.92) L.push('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB');
    else if (k < 0.93) L.push('Traceback (most recent call last):');
    else if (k < 0.94) L.push(`[${ts}] NCCL WARN Call to ibv_reg_mr failed`);
    else L.push(`[${ts}${tags}] something else ${'é'.repeat(i % 3)}`);
  }
  return L.join('\n') + (trailingNewline ? '\n' : '');
}

function onePass(buf: Buffer) {
  const f = new FastLogSummarizer();
  for (let i = 0; i < buf.length; i += 65536) f.addChunk(buf.subarray(i, i + 65536));
  f.end();
  return f.summary();
}

describe('logParallel: parse-log --summary on several threads', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-logpar-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const seed of [1, 2, 3]) {
    it(`pieces merged = one pass, byte for byte, for 1 to 7 pieces (seed ${seed})`, () => {
      const text = log(4000, seed, seed !== 2);
      const file = path.join(dir, `s${seed}.log`);
      writeFileSync(file, text);
      const want = JSON.stringify(onePass(Buffer.from(text)));
      const fd = openSync(file, 'r');
      try {
        for (let n = 1; n <= 7; n++) {
          const b = pieceBounds(fd, Buffer.byteLength(text), n);
          const parts = [];
          for (let k = 0; k + 1 < b.length; k++) parts.push(summarizePiece(fd, b[k], b[k + 1]));
          assert.equal(JSON.stringify(mergePieces(parts)), want, `${n} pieces at ${b.join(',')}`);
        }
      } finally {
        closeSync(fd);
      }
    });
  }

  it('pieces start after a newline; a file shorter than the pieces gives fewer', () => {
    const file = path.join(dir, 'b.log');
    const text = 'aaaa\nbbbbbbbbbbbbbbbbbbbbbbbbbb\ncc\n';
    writeFileSync(file, text);
    const fd = openSync(file, 'r');
    try {
      for (let n = 1; n <= 40; n++) {
        const b = pieceBounds(fd, text.length, n);
        assert.equal(b[0], 0);
        assert.equal(b[b.length - 1], text.length);
        assert.ok(b.length - 1 <= Math.min(n, 3), `${n}: ${b.join(',')}`);
        for (let k = 1; k < b.length - 1; k++) assert.equal(text[b[k] - 1], '\n', `${n}: ${b.join(',')}`);
        for (let k = 1; k < b.length; k++) assert.ok(b[k] > b[k - 1]);
      }
    } finally {
      closeSync(fd);
    }
  });

  it('worker threads: the whole file on 3 threads = one pass (the sums in file order)', async function () {
    this.timeout(30_000);
    const text = log(20000, 7);
    const file = path.join(dir, 'w.log');
    writeFileSync(file, text);
    const s = await summarizeFileParallel(file, 3);
    assert.ok(s, 'took the parallel path');
    assert.equal(JSON.stringify(s), JSON.stringify(onePass(Buffer.from(text))));
    // the means really are sums of many floats (the check above would be weak on integers)
    assert.ok(s.ranks.some((r) => r.meanGenThroughput !== null && !Number.isInteger(r.meanGenThroughput * 100)));
  });

  it('one thread or a small file: null (the ordinary path)', async () => {
    const file = path.join(dir, 'small.log');
    writeFileSync(file, log(100, 9));
    assert.equal(await summarizeFileParallel(file, 1), null);
    assert.equal(await summarizeFileParallel(file), null);
    process.env.GS_PARSE_THREADS = '4';
    try {
      assert.equal(await summarizeFileParallel(file), null, 'small: one thread whatever the setting');
    } finally {
      delete process.env.GS_PARSE_THREADS;
    }
  });
});
