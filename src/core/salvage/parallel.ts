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
import { GpuSessionsError } from '../util/errors';
import { Logger, nullLogger } from '../util/logger';
import type { AbortLike, SshConnectRecipe, Transport } from '../ssh/transport';
import type { FetchCommand, FetchEvent, HashCommand, HashEvent, WorkerInit } from './workerProtocol';

/** Files at least this large travel in parallel ranges. */
export const PARALLEL_MIN_BYTES = 64 * 1024 * 1024;

export interface ParallelOptions {
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

export interface ParallelResult {
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
  const log = o.log ?? nullLogger;
  if (!recipe || !file || size <= 0) return null;
  const cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
  const maxConns = Math.max(1, o.maxConnections ?? Math.min(4, cores));
  const perConn = Math.max(1, recipe.maxChannels - 1);
  const memStreams = Math.max(1, Math.floor((o.memoryBoundBytes ?? 64 * 1048576) / PER_STREAM_BYTES));
  const pieces: Piece[] = planPieces(size, o.pieceBytes).map((p, id) => ({
    id,
    ...p,
    done: 0,
    base: 0,
    state: 'queued',
    attempts: 0,
    conn: null,
  }));
  const maxStreams = Math.max(1, Math.min(o.maxStreams ?? 16, memStreams, maxConns * perConn, pieces.length));
  const conns: Conn[] = [];
  let resumed = 0;
  let everReady = false;
  let written = 0;
  let wmIdx = 0;
  let sentWm = 0;
  let settle!: (r: ParallelResult | null) => void;
  let fail!: (e: unknown) => void;
  const result = new Promise<ParallelResult | null>((res, rej) => ((settle = res), (fail = rej)));
  let finished = false;
  let peak = 0;

  const hasher = new Worker(file, { workerData: { role: 'hash', tmp, md5: !!o.md5 } satisfies WorkerInit });
  const streams = () => conns.reduce((n, c) => n + (c.dead ? 0 : c.target), 0);
  const live = () => conns.filter((c) => !c.dead);
  const stopAll = () => {
    for (const c of conns) {
      c.dead = true;
      c.w.postMessage({ type: 'stop' } satisfies FetchCommand);
      const k = setTimeout(() => void c.w.terminate(), 2000);
      k.unref();
    }
    clearInterval(ticker);
  };
  const end = (r: ParallelResult | null | Error) => {
    if (finished) return;
    finished = true;
    stopAll();
    o.signal?.removeEventListener('abort', onAbort);
    if (r instanceof Error) {
      void hasher.terminate();
      fail(r);
    } else {
      if (!r || r.reason || r.fsError) void hasher.terminate();
      settle(r);
    }
  };
  const base = (): Omit<ParallelResult, 'sha256' | 'md5'> => ({
    bytes: written,
    streams: peak,
    connections: conns.length,
    resumed,
  });
  const onAbort = () => end(new GpuSessionsError('cancelled', 'Cancelled.'));
  o.signal?.addEventListener('abort', onAbort, { once: true });

  // Watermark: everything below it is written; the hasher may read up to it.
  const advance = () => {
    while (wmIdx < pieces.length && pieces[wmIdx].state === 'done') wmIdx++;
    const wm = wmIdx < pieces.length ? pieces[wmIdx].off + pieces[wmIdx].done : size;
    if (wm >= size || wm - sentWm >= 8 * 1048576) {
      sentWm = wm;
      hasher.postMessage({ type: wm >= size ? 'finish' : 'upto', n: wm } satisfies HashCommand);
    }
  };
  hasher.on('message', (m: HashEvent) => {
    if (m.type === 'digest') {
      if (m.bytes !== size) return end({ ...base(), reason: `hashed ${m.bytes} of ${size} B`, sha256: null, md5: null });
      end({ ...base(), sha256: m.sha256, md5: m.md5 });
    } else {
      const e = Object.assign(new Error(m.message), { code: m.code });
      end({ ...base(), fsError: e, sha256: null, md5: null });
    }
  });
  hasher.on('error', (e) => end({ ...base(), reason: `the hashing thread failed: ${e.message}`, sha256: null, md5: null }));

  const fill = () => {
    if (finished) return;
    peak = Math.max(peak, streams());
    for (const c of conns) {
      if (!c.ready || c.dead) continue;
      while (c.running.size < c.target) {
        const p = pieces.find((x) => x.state === 'queued');
        if (!p) return;
        p.state = 'running';
        p.conn = c;
        p.base = p.done;
        p.attempts++;
        c.running.add(p);
        c.w.postMessage({ type: 'piece', id: p.id, off: p.off + p.done, len: p.len - p.done } satisfies FetchCommand);
      }
    }
  };
  const requeue = (c: Conn) => {
    for (const p of c.running) {
      p.state = 'queued';
      p.conn = null;
    }
    c.running.clear();
  };
  const progress = (p: Piece, got: number) => {
    const d = p.base + got - p.done;
    if (d > 0) {
      p.done += d;
      written += d;
      o.onBytes?.(d);
    }
  };

  const addConn = (): Conn => {
    const w = new Worker(file, {
      workerData: { role: 'fetch', recipe, remotePath, tmp } satisfies WorkerInit,
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    const c: Conn = { w, ready: false, dead: false, target: 1, running: new Set() };
    conns.push(c);
    const lost = (why: string) => {
      if (c.dead || finished) return;
      c.dead = true;
      requeue(c);
      log.warn(`parallel transfer of ${remotePath}: a connection was lost (${why})`);
      if (live().length === 0) {
        if (!everReady && written === 0) return end(null);
        return end({ ...base(), reason: `every connection to the node was lost (${why}); run salvage again`, sha256: null, md5: null });
      }
      // Its streams move to the others.
      const other = live()[0];
      other.target = Math.min(perConn, other.target + c.target);
      fill();
    };
    w.on('message', (m: FetchEvent) => {
      if (finished) return;
      switch (m.type) {
        case 'ready':
          c.ready = true;
          everReady = true;
          fill();
          return;
        case 'fatal':
          return lost(m.message);
        case 'bytes': {
          const p = pieces[m.id];
          if (p.conn === c) progress(p, m.got);
          advance();
          return;
        }
        case 'done': {
          const p = pieces[m.id];
          if (p.conn !== c) return;
          progress(p, m.got);
          p.state = 'done';
          p.conn = null;
          c.running.delete(p);
          advance();
          fill();
          return;
        }
        case 'failed': {
          const p = pieces[m.id];
          if (p.conn !== c) return;
          progress(p, m.got);
          c.running.delete(p);
          p.conn = null;
          if (m.fsCode) {
            const e = Object.assign(new Error(m.message), { code: m.fsCode }) as NodeJS.ErrnoException;
            return end({ ...base(), fsError: e, sha256: null, md5: null });
          }
          if (!m.retry) return end({ ...base(), reason: m.message, sha256: null, md5: null });
          resumed++;
          if (p.attempts >= MAX_ATTEMPTS_PER_PIECE || resumed > MAX_RESUMES)
            return end({ ...base(), reason: `the connection kept dropping (${m.message}); run salvage again`, sha256: null, md5: null });
          p.state = 'queued';
          log.info(`parallel transfer of ${remotePath}: range at ${p.off + p.done} resumes (${m.message})`);
          advance();
          // Let the transport reconnect (its backoff) before the range goes out again.
          setTimeout(fill, 100 * p.attempts).unref();
          return;
        }
      }
    });
    w.on('error', (e) => lost(e.message));
    w.on('exit', () => lost('its thread ended'));
    return c;
  };

  // Start: up to `initial` streams, one connection each while cores allow.
  const initial = Math.max(1, Math.min(o.initialStreams ?? 2, maxStreams));
  for (let i = 0; i < initial; i++) {
    if (conns.length < maxConns) addConn();
    else conns[i % conns.length].target++;
  }

  // Growth: judge each added stream on a full window after it started carrying bytes.
  let lastBytes = 0;
  let lastAt = performance.now();
  let bestRate = 0;
  let stalls = 0;
  let settleTicks = 2;
  const ticker = setInterval(() => {
    const now = performance.now();
    const rate = ((written - lastBytes) * 1000) / (now - lastAt);
    lastBytes = written;
    lastAt = now;
    if (finished || !everReady) return;
    if (settleTicks > 0) return void settleTicks--;
    if (stalls >= 2 || streams() >= maxStreams) return;
    if (rate > bestRate * 1.08) {
      bestRate = rate;
      stalls = 0;
    } else if (bestRate > 0) {
      stalls++;
      if (stalls >= 2) return;
    }
    const remaining = pieces.filter((p) => p.state === 'queued').length;
    if (remaining === 0) return;
    if (conns.length < maxConns) addConn();
    else {
      const c = live()
        .filter((x) => x.target < perConn)
        .sort((a, b) => a.target - b.target)[0];
      if (!c) return;
      c.target++;
      fill();
    }
    settleTicks = 1;
  }, TICK_MS);
  ticker.unref();

  const r = await result;
  if (r) log.info(`parallel transfer of ${remotePath}: ${r.streams} stream(s) over ${r.connections} connection(s), ${r.resumed} resumed`);
  return r;
}
