/**
 * `parse-log --summary` of a large file on every core: the file is cut at line boundaries into one piece per
 * thread; this thread summarizes the first piece while worker threads (logParallelWorker.ts) take the others,
 * each with the same fast path (logFast.ts) and full parser behind it. The pieces are then merged into exactly
 * the summary one pass over the whole file gives, byte for byte:
 *
 * - counts add up; maxima take the max; "last" values take the last piece that has one;
 * - readiness is the last ready/restart event of the file (a piece without one carries the state before it);
 * - the mean throughput and accept length are sums of floating-point values, whose rounding depends on the
 *   order of the additions: each piece hands over the values themselves, in order, and they are added here
 *   one by one in file order, as the single pass adds them.
 *
 * This module must not import `vscode`.
 */
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { FastLogSummarizer } from './logFast';
import { LogSummarizer, rankLabel } from './logLines';
import type { ClassifiedLine, LogSummary, RankAcc, RankSummary } from './logLines';

/** Below this size one thread is faster than starting others. */
const PARALLEL_MIN_BYTES = 16 * 1024 * 1024;
const READ_BYTES = 1024 * 1024;

/** One piece's summary and what merging needs beyond it. */
interface PieceResult {
  summary: LogSummary;
  /** The readiness after the piece's last ready/restart line; null when it has none. */
  readyEvent: boolean | null;
  /** Per rank label: the gen throughput and accept length values, in the order they were added. */
  values: Record<string, { gen: Float64Array; accept: Float64Array }>;
  /** Per rank label: its sort key (the full summarizer's, from the rank's tags). */
  orders: Record<string, number[]>;
}

class Floats {
  private a = new Float64Array(1024);
  n = 0;
  push(v: number): void {
    if (this.n === this.a.length) {
      const b = new Float64Array(this.a.length * 2);
      b.set(this.a);
      this.a = b;
    }
    this.a[this.n++] = v;
  }
  done(): Float64Array {
    return this.a.slice(0, this.n);
  }
}

/**
 * Summarizes bytes [start, end) of an open file (start at a line's first byte). The rank totals record each
 * value added to their sums (the sum itself reads as 0 here: it is recomputed in file order by the merge).
 */
export function summarizePiece(fd: number, start: number, end: number): PieceResult {
  const fast = new FastLogSummarizer();
  // The full summarizer inside is the recording subclass below (same options: the defaults), set before any line.
  const rec = new RecordingSummarizer();
  (fast as unknown as { sum: LogSummarizer }).sum = rec;
  const buf = Buffer.allocUnsafe(READ_BYTES);
  let pos = start;
  while (pos < end) {
    const n = readSync(fd, buf, 0, Math.min(READ_BYTES, end - pos), pos);
    if (n <= 0) break;
    fast.addChunk(n === buf.length ? buf : buf.subarray(0, n));
    pos += n;
  }
  fast.end();
  const values: PieceResult['values'] = {};
  const orders: PieceResult['orders'] = {};
  for (const [a, v] of rec.recorded) {
    values[a.rank] = { gen: v.gen.done(), accept: v.accept.done() };
    orders[a.rank] = a.order;
  }
  return { summary: fast.summary(), readyEvent: rec.readyEvent, values, orders };
}

/** Records every value the sums take, as they take it: the fast path's fields and the full parser's records. */
class RecordingSummarizer extends LogSummarizer {
  readonly recorded = new Map<RankAcc, { gen: Floats; accept: Floats }>();
  readyEvent: boolean | null = null;

  /** The values of a rank, kept on its totals (one added field, so no lookup per line). */
  private valuesOf(a: RankAcc): { gen: Floats; accept: Floats } {
    const r = a as RankAcc & { rec?: { gen: Floats; accept: Floats } };
    if (r.rec) return r.rec;
    r.rec = { gen: new Floats(), accept: new Floats() };
    this.recorded.set(a, r.rec);
    return r.rec;
  }

  override addStatFields(
    a: RankAcc,
    decode: boolean,
    time: string | null,
    gen: number | null,
    acceptLen: number | null,
    running: number | null,
    queue: number | null,
  ): void {
    if (decode) {
      const v = this.valuesOf(a);
      if (gen !== null) v.gen.push(gen);
      if (acceptLen !== null) v.accept.push(acceptLen);
    }
    super.addStatFields(a, decode, time, gen, acceptLen, running, queue);
  }

  override addClassified(c: ClassifiedLine): void {
    const st = c.stat;
    if ((c.kind === 'decode' || c.kind === 'prefill') && st && st.kind === 'decode') {
      const v = this.valuesOf(this.rankAcc(st.rank ?? rankLabel(st.ranks), st.ranks));
      if (st.genThroughput !== null) v.gen.push(st.genThroughput);
      if (st.acceptLen !== null) v.accept.push(st.acceptLen);
    }
    super.addClassified(c);
    if (c.kind === 'ready' || c.kind === 'startup') this.readyEvent = (this as unknown as { ready: boolean }).ready;
  }
}

/** Piece boundaries: each after a newline, near equal sizes. */
export function pieceBounds(fd: number, size: number, pieces: number): number[] {
  const bounds = [0];
  const probe = Buffer.allocUnsafe(64 * 1024);
  for (let k = 1; k < pieces; k++) {
    let at = Math.max(Math.floor((size * k) / pieces), bounds[bounds.length - 1]);
    for (;;) {
      const n = readSync(fd, probe, 0, probe.length, at);
      if (n <= 0) {
        at = size;
        break;
      }
      const nl = probe.subarray(0, n).indexOf(10);
      if (nl >= 0) {
        at += nl + 1;
        break;
      }
      at += n;
    }
    if (at > bounds[bounds.length - 1] && at < size) bounds.push(at);
  }
  bounds.push(size);
  return bounds;
}

/** The pieces' summaries as the one pass over the whole file gives it. */
export function mergePieces(parts: PieceResult[]): LogSummary {
  const first = parts[0].summary;
  const out: LogSummary = {
    ranks: [],
    errors: 0,
    tracebacks: 0,
    ready: false,
    lastError: null,
    errorClasses: { ...first.errorClasses },
    kvPressureStatLines: 0,
    totalLines: 0,
    kinds: { ...first.kinds },
    truncatedLines: 0,
  };
  for (const k of Object.keys(out.errorClasses) as Array<keyof LogSummary['errorClasses']>) out.errorClasses[k] = 0;
  for (const k of Object.keys(out.kinds) as Array<keyof LogSummary['kinds']>) out.kinds[k] = 0;
  const ranks = new Map<string, RankSummary & { genSum: number; genCount: number; acceptSum: number; acceptCount: number }>();
  for (const p of parts) {
    const s = p.summary;
    out.errors += s.errors;
    out.tracebacks += s.tracebacks;
    if (p.readyEvent !== null) out.ready = p.readyEvent;
    if (s.lastError !== null) out.lastError = s.lastError;
    for (const k of Object.keys(s.errorClasses) as Array<keyof LogSummary['errorClasses']>) out.errorClasses[k] += s.errorClasses[k];
    out.kvPressureStatLines += s.kvPressureStatLines;
    out.totalLines += s.totalLines;
    for (const k of Object.keys(s.kinds) as Array<keyof LogSummary['kinds']>) out.kinds[k] += s.kinds[k];
    out.truncatedLines += s.truncatedLines;
    for (const r of s.ranks) {
      let m = ranks.get(r.rank);
      if (!m) {
        m = {
          ...r,
          lines: 0,
          decodeLines: 0,
          prefillLines: 0,
          lastGenThroughput: null,
          maxGenThroughput: null,
          lastTime: null,
          lastRunningReqs: null,
          lastQueueReqs: null,
          genSum: 0,
          genCount: 0,
          acceptSum: 0,
          acceptCount: 0,
        };
        ranks.set(r.rank, m);
      }
      m.lines += r.lines;
      m.decodeLines += r.decodeLines;
      m.prefillLines += r.prefillLines;
      if (r.lastGenThroughput !== null) m.lastGenThroughput = r.lastGenThroughput;
      if (r.maxGenThroughput !== null && (m.maxGenThroughput === null || r.maxGenThroughput > m.maxGenThroughput))
        m.maxGenThroughput = r.maxGenThroughput;
      if (r.lastTime !== null) m.lastTime = r.lastTime;
      if (r.lastRunningReqs !== null) m.lastRunningReqs = r.lastRunningReqs;
      if (r.lastQueueReqs !== null) m.lastQueueReqs = r.lastQueueReqs;
      const v = p.values[r.rank];
      if (v) {
        for (let i = 0; i < v.gen.length; i++) m.genSum += v.gen[i];
        for (let i = 0; i < v.accept.length; i++) m.acceptSum += v.accept[i];
        m.genCount += v.gen.length;
        m.acceptCount += v.accept.length;
      }
    }
  }
  // The full summarizer's order: by the ranks' tags, then by label.
  const orders: Record<string, number[]> = Object.assign({}, ...parts.map((p) => p.orders));
  const sorted = [...ranks.keys()].sort((x, y) => compareOrder(orders[x] ?? [], orders[y] ?? []) || (x < y ? -1 : x > y ? 1 : 0));
  out.ranks = sorted.map((k) => {
    const { genSum, genCount, acceptSum, acceptCount, ...r } = ranks.get(k)!;
    return {
      ...r,
      meanGenThroughput: genCount > 0 ? genSum / genCount : null,
      meanAcceptLen: acceptCount > 0 ? acceptSum / acceptCount : null,
    };
  });
  return out;
}

function compareOrder(a: number[], b: number[]): number {
  for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

/** The worker file next to this module (dist/parseLogWorker.js when bundled; logParallelWorker.js under tsc). */
function workerFile(): string | undefined {
  for (const f of ['parseLogWorker.js', 'logParallelWorker.js']) {
    const p = path.join(__dirname, f);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Threads for a file of this size: GS_PARSE_THREADS (default 1: not yet measured faster than one thread on a
 * quiet machine — on a loaded 2-core VM the pieces took 1.7× the CPU time of one pass; `npm run bench` prints
 * both), and 1 when small or without the worker file.
 */
function threadsFor(size: number): number {
  const want = Math.min(Number(process.env.GS_PARSE_THREADS ?? 1) || 1, 16);
  if (want <= 1 || size < PARALLEL_MIN_BYTES || !workerFile()) return 1;
  return want;
}

/**
 * The summary of one file, on `threads` threads (this one included). Resolves to null when the file should
 * take the ordinary path (small, or one thread).
 */
export async function summarizeFileParallel(file: string, threads?: number): Promise<LogSummary | null> {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    const n = threads ?? threadsFor(size);
    const wf = workerFile();
    if (n <= 1 || !wf) return null;
    const b = pieceBounds(fd, size, n);
    const others = [];
    for (let k = 1; k < b.length - 1; k++) others.push(runWorker(wf, file, b[k], b[k + 1]));
    // Our own piece while the workers read theirs; a worker's failure fails the whole (the caller reports it).
    const mine = summarizePiece(fd, b[0], b[1]);
    return mergePieces([mine, ...(await Promise.all(others))]);
  } finally {
    closeSync(fd);
  }
}

function runWorker(file: string, log: string, start: number, end: number): Promise<PieceResult> {
  return new Promise((resolve, reject) => {
    const w = new Worker(file, { workerData: { file: log, start, end } });
    let done = false;
    w.once('message', (m: PieceResult | { error: string }) => {
      done = true;
      if ('error' in m) reject(new Error(m.error));
      else resolve(m);
    });
    w.once('error', (e) => reject(e));
    w.once('exit', (c) => {
      if (!done) reject(new Error(`parse-log worker exited (${c}) without a result`));
    });
  });
}
