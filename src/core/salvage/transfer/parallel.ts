/**
 * Parallel large-file transfer: one file fetched as byte ranges over several channels and several SSH
 * connections, each connection in its own worker thread (parallelWorker.ts), so decryption and writes use
 * every core and never block the extension host. A second kind of worker hashes the file in order as the
 * contiguous prefix grows, so the whole-file SHA-256 (and MD5) is still compared with the node's.
 *
 * - Why: one SSH channel is capped by its 2 MiB window at about window ÷ round-trip (≈ 40 MB/s at 50 ms),
 *   and ssh2 decrypts on one JavaScript thread. Several streams lift both limits.
 * - Ranges never pass the listed size (a live log grows meanwhile; the node hashes the same prefix).
 * - A dropped connection loses only the rest of its ranges: they are queued again from the last byte
 *   written, and the worker reconnects (the transport's backoff; bounded attempts).
 * - The number of streams adapts: it grows while throughput grows (at least 8 % per step), within the
 *   channel limit of each connection, the number of cores for connections, and a memory bound.
 *
 * Returns null when parallel transfer is not possible here (a jump host, no worker file, the extra
 * connections could not be opened); the caller then uses its single stream on the pooled connection.
 */
import { existsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import { GpuSessionsError } from '../../util/errors';
import { Logger, nullLogger } from '../../util/logger';
import type { AbortLike, SshConnectRecipe, Transport } from '../../ssh/transport';
import type { FetchCommand, FetchEvent, HashCommand, HashEvent, WorkerInit } from './workerProtocol';

/** Files at least this large travel in parallel ranges. */
export const PARALLEL_MIN_BYTES = 64 * 1024 * 1024;

interface ParallelOptions {
  md5?: boolean;
  onBytes?: (n: number) => void;
  signal?: AbortLike;
  log?: Logger;
  /** Connections (worker threads). Default: cores, at most 4. */
  maxConnections?: number;
  /** Streams (channels) in flight over all connections. Default: memory bound ÷ 4 MiB, at most 16. */
  maxStreams?: number;
  /** In-flight memory bound (each stream holds up to its 2 MiB window and a read buffer). Default 64 MiB. */
  memoryBoundBytes?: number;
  /** Initial streams (default 2). */
  initialStreams?: number;
  /** Range size. Default: size ÷ 32, between 8 and 64 MiB. */
  pieceBytes?: number;
}

interface ParallelResult {
  /** Set when the transfer failed on the node's side (not retried: unreadable, shrank). */
  reason?: string;
  /** A local file-system error (ENOSPC, EACCES, …) from a write. */
  fsError?: NodeJS.ErrnoException;
  sha256: string | null;
  md5: string | null;
  bytes: number;
  streams: number;
  connections: number;
  /** Ranges queued again after a drop. */
  resumed: number;
}

const PER_STREAM_BYTES = 4 * 1024 * 1024;
const MAX_ATTEMPTS_PER_PIECE = 6;
const MAX_RESUMES = 40;
const TICK_MS = 400;

interface Piece {
  id: number;
  off: number;
  len: number;
  /** Bytes written from `off`, contiguous. */
  done: number;
  /** Bytes already written when the current request was sent. */
  base: number;
  state: 'queued' | 'running' | 'done';
  attempts: number;
  conn: Conn | null;
}

interface Conn {
  w: Worker;
  ready: boolean;
  dead: boolean;
  target: number;
  running: Set<Piece>;
}

/** The worker file next to this module (dist/salvageWorker.js when bundled; parallelWorker.js under tsc). */
export function workerFile(): string | undefined {
  for (const f of ['salvageWorker.js', 'parallelWorker.js']) {
    const p = path.join(__dirname, f);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/** Splits [0, size) into ranges. */
export function planPieces(size: number, pieceBytes?: number): Array<{ off: number; len: number }> {
  const step = Math.floor(pieceBytes ?? Math.min(64 * 1048576, Math.max(8 * 1048576, Math.ceil(size / 32))));
  const out: Array<{ off: number; len: number }> = [];
  for (let off = 0; off < size; off += step) out.push({ off, len: Math.min(step, size - off) });
  return out;
}

/**
 * Can ranges travel over connections of their own here? Not through ProxyJump or ProxyCommand (no recipe for the
 * worker threads' connections), not without the worker file, not with `GS_SALVAGE_PARALLEL=off`.
 */
export function parallelPossible(t: Transport): boolean {
  if (process.env.GS_SALVAGE_PARALLEL === 'off') return false;
  return !!(t as { connectRecipe?: () => SshConnectRecipe | undefined }).connectRecipe?.() && !!workerFile();
}

/**
 * Fetch `size` bytes of `remotePath` into `tmp` (an existing file, written at offsets) and hash them.
 * Null: not possible here (nothing was written); use one stream instead.
 */
export async function fetchParallel(
  t: Transport,
  remotePath: string,
  size: number,
  tmp: string,
  o: ParallelOptions = {},
): Promise<ParallelResult | null> {
  if (process.env.GS_SALVAGE_PARALLEL === 'off') return null;
  const recipe = (t as { connectRecipe?: () => SshConnectRecipe | undefined }).connectRecipe?.();
  const file = workerFile();
  if (!recipe || !file || size <= 0) return null;
  const log = o.log ?? nullLogger;
  const r = await new ParallelFetch({ recipe, file, remotePath, size, tmp, o, log }).run();
  if (r) log.info(`parallel transfer of ${remotePath}: ${r.streams} stream(s) over ${r.connections} connection(s), ${r.resumed} resumed`);
  return r;
}

interface FetchArgs {
  recipe: SshConnectRecipe;
  /** The worker threads' file. */
  file: string;
  remotePath: string;
  size: number;
  tmp: string;
  o: ParallelOptions;
  log: Logger;
}

const failedResult = (reason: string) => ({ reason, sha256: null, md5: null });

/** One parallel transfer: its ranges, its connections (worker threads), the in-order hasher and the growth ticker. */
class ParallelFetch {
  private readonly maxConns: number;
  private readonly perConn: number;
  private readonly maxStreams: number;
  private readonly pieces: Piece[];
  private readonly conns: Conn[] = [];
  private readonly hasher: Worker;
  private resumed = 0;
  private everReady = false;
  private written = 0;
  /** Watermark: every byte below it is written; the hasher may read up to it. */
  private wmIdx = 0;
  private sentWm = 0;
  private finished = false;
  private peak = 0;
  private settle!: (r: ParallelResult | null) => void;
  private fail!: (e: unknown) => void;
  private readonly result = new Promise<ParallelResult | null>((res, rej) => ((this.settle = res), (this.fail = rej)));
  private ticker: ReturnType<typeof setInterval> | undefined;
  private readonly onAbort = () => this.end(new GpuSessionsError('cancelled', 'Cancelled.'));
  /** Growth: each added stream judged on a full window after it started carrying bytes. */
  private readonly growth = { lastBytes: 0, lastAt: performance.now(), bestRate: 0, stalls: 0, settleTicks: 2 };

  constructor(private readonly a: FetchArgs) {
    const o = a.o;
    const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
    this.maxConns = Math.max(1, o.maxConnections ?? Math.min(4, cores));
    this.perConn = Math.max(1, a.recipe.maxChannels - 1);
    const memStreams = Math.max(1, Math.floor((o.memoryBoundBytes ?? 64 * 1048576) / PER_STREAM_BYTES));
    this.pieces = planPieces(a.size, o.pieceBytes).map((p, id) => ({
      id,
      ...p,
      done: 0,
      base: 0,
      state: 'queued',
      attempts: 0,
      conn: null,
    }));
    this.maxStreams = Math.max(1, Math.min(o.maxStreams ?? 16, memStreams, this.maxConns * this.perConn, this.pieces.length));
    this.hasher = new Worker(a.file, { workerData: { role: 'hash', tmp: a.tmp, md5: !!o.md5 } satisfies WorkerInit });
    this.hasher.on('message', (m: HashEvent) => this.hashed(m));
    this.hasher.on('error', (e) => this.end({ ...this.base(), ...failedResult(`the hashing thread failed: ${e.message}`) }));
  }

  run(): Promise<ParallelResult | null> {
    this.a.o.signal?.addEventListener('abort', this.onAbort, { once: true });
    // Start: up to `initial` streams, one connection each while cores allow.
    const initial = Math.max(1, Math.min(this.a.o.initialStreams ?? 2, this.maxStreams));
    for (let i = 0; i < initial; i++) {
      if (this.conns.length < this.maxConns) this.addConn();
      else this.conns[i % this.conns.length].target++;
    }
    this.ticker = setInterval(() => this.grow(), TICK_MS);
    this.ticker.unref();
    return this.result;
  }

  private streams(): number {
    return this.conns.reduce((n, c) => n + (c.dead ? 0 : c.target), 0);
  }

  private live(): Conn[] {
    return this.conns.filter((c) => !c.dead);
  }

  private end(r: ParallelResult | null | Error): void {
    if (this.finished) return;
    this.finished = true;
    for (const c of this.conns) {
      c.dead = true;
      c.w.postMessage({ type: 'stop' } satisfies FetchCommand);
      const k = setTimeout(() => void c.w.terminate(), 2000);
      k.unref();
    }
    clearInterval(this.ticker);
    this.a.o.signal?.removeEventListener('abort', this.onAbort);
    if (r instanceof Error) {
      void this.hasher.terminate();
      this.fail(r);
    } else {
      if (!r || r.reason || r.fsError) void this.hasher.terminate();
      this.settle(r);
    }
  }

  private base(): Omit<ParallelResult, 'sha256' | 'md5'> {
    return { bytes: this.written, streams: this.peak, connections: this.conns.length, resumed: this.resumed };
  }

  /** The watermark moves past written ranges; the hasher hears of it every 8 MiB, and at the end. */
  private advance(): void {
    const { pieces } = this;
    const size = this.a.size;
    while (this.wmIdx < pieces.length && pieces[this.wmIdx].state === 'done') this.wmIdx++;
    const wm = this.wmIdx < pieces.length ? pieces[this.wmIdx].off + pieces[this.wmIdx].done : size;
    if (wm >= size || wm - this.sentWm >= 8 * 1048576) {
      this.sentWm = wm;
      this.hasher.postMessage({ type: wm >= size ? 'finish' : 'upto', n: wm } satisfies HashCommand);
    }
  }

  private hashed(m: HashEvent): void {
    if (m.type === 'digest') {
      if (m.bytes !== this.a.size) return this.end({ ...this.base(), ...failedResult(`hashed ${m.bytes} of ${this.a.size} B`) });
      return this.end({ ...this.base(), sha256: m.sha256, md5: m.md5 });
    }
    const e = Object.assign(new Error(m.message), { code: m.code });
    this.end({ ...this.base(), fsError: e, sha256: null, md5: null });
  }

  /** Every ready connection gets queued ranges up to its target number of streams. */
  private fill(): void {
    if (this.finished) return;
    this.peak = Math.max(this.peak, this.streams());
    for (const c of this.conns) {
      if (!c.ready || c.dead) continue;
      while (c.running.size < c.target) {
        const p = this.pieces.find((x) => x.state === 'queued');
        if (!p) return;
        p.state = 'running';
        p.conn = c;
        p.base = p.done;
        p.attempts++;
        c.running.add(p);
        c.w.postMessage({ type: 'piece', id: p.id, off: p.off + p.done, len: p.len - p.done } satisfies FetchCommand);
      }
    }
  }

  private progress(p: Piece, got: number): void {
    const d = p.base + got - p.done;
    if (d > 0) {
      p.done += d;
      this.written += d;
      this.a.o.onBytes?.(d);
    }
  }

  private addConn(): Conn {
    const { recipe, remotePath, tmp } = this.a;
    const w = new Worker(this.a.file, {
      workerData: { role: 'fetch', recipe, remotePath, tmp } satisfies WorkerInit,
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    const c: Conn = { w, ready: false, dead: false, target: 1, running: new Set() };
    this.conns.push(c);
    w.on('message', (m: FetchEvent) => this.fetched(c, m));
    w.on('error', (e) => this.lost(c, e.message));
    w.on('exit', () => this.lost(c, 'its thread ended'));
    return c;
  }

  /** A connection is gone: its ranges go back to the queue, its streams to another (or the transfer ends). */
  private lost(c: Conn, why: string): void {
    if (c.dead || this.finished) return;
    c.dead = true;
    for (const p of c.running) {
      p.state = 'queued';
      p.conn = null;
    }
    c.running.clear();
    this.a.log.warn(`parallel transfer of ${this.a.remotePath}: a connection was lost (${why})`);
    const live = this.live();
    if (live.length === 0) {
      if (!this.everReady && this.written === 0) return this.end(null);
      return this.end({ ...this.base(), ...failedResult(`every connection to the node was lost (${why}); run salvage again`) });
    }
    live[0].target = Math.min(this.perConn, live[0].target + c.target);
    this.fill();
  }

  private fetched(c: Conn, m: FetchEvent): void {
    if (this.finished) return;
    if (m.type === 'ready') {
      c.ready = true;
      this.everReady = true;
      return this.fill();
    }
    if (m.type === 'fatal') return this.lost(c, m.message);
    const p = this.pieces[m.id];
    if (m.type === 'bytes') {
      if (p.conn === c) this.progress(p, m.got);
      return this.advance();
    }
    if (p.conn !== c) return;
    this.progress(p, m.got);
    c.running.delete(p);
    p.conn = null;
    if (m.type === 'done') {
      p.state = 'done';
      this.advance();
      return this.fill();
    }
    this.pieceFailed(p, m);
  }

  /** A range failed: a local write error or the node's refusal ends the transfer; a drop resumes it (bounded). */
  private pieceFailed(p: Piece, m: Extract<FetchEvent, { type: 'failed' }>): void {
    if (m.fsCode) {
      const e = Object.assign(new Error(m.message), { code: m.fsCode }) as NodeJS.ErrnoException;
      return this.end({ ...this.base(), fsError: e, sha256: null, md5: null });
    }
    if (!m.retry) return this.end({ ...this.base(), ...failedResult(m.message) });
    this.resumed++;
    if (p.attempts >= MAX_ATTEMPTS_PER_PIECE || this.resumed > MAX_RESUMES)
      return this.end({ ...this.base(), ...failedResult(`the connection kept dropping (${m.message}); run salvage again`) });
    p.state = 'queued';
    this.a.log.info(`parallel transfer of ${this.a.remotePath}: range at ${p.off + p.done} resumes (${m.message})`);
    this.advance();
    // Let the transport reconnect (its backoff) before the range goes out again.
    setTimeout(() => this.fill(), 100 * p.attempts).unref();
  }

  /** Every tick: one more stream while throughput grows by at least 8 % per step (two stalls end the growth). */
  private grow(): void {
    const g = this.growth;
    const now = performance.now();
    const rate = ((this.written - g.lastBytes) * 1000) / (now - g.lastAt);
    g.lastBytes = this.written;
    g.lastAt = now;
    if (this.finished || !this.everReady) return;
    if (g.settleTicks > 0) return void g.settleTicks--;
    if (g.stalls >= 2 || this.streams() >= this.maxStreams) return;
    if (rate > g.bestRate * 1.08) {
      g.bestRate = rate;
      g.stalls = 0;
    } else if (g.bestRate > 0) {
      g.stalls++;
      if (g.stalls >= 2) return;
    }
    if (!this.pieces.some((p) => p.state === 'queued')) return;
    if (this.conns.length < this.maxConns) this.addConn();
    else {
      const c = this.live()
        .filter((x) => x.target < this.perConn)
        .sort((x, y) => x.target - y.target)[0];
      if (!c) return;
      c.target++;
      this.fill();
    }
    g.settleTicks = 1;
  }
}
