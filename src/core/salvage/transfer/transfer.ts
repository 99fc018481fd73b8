/**
 * Verified downloads over the pooled connection.
 *
 * - Small files travel in batches, one stream per channel (thousands of files, few round trips): batchReceive.ts.
 * - Large files travel alone: read once on the node and hashed as they are sent (oneFramed.ts), or, where the link's
 *   round trip pays for it, as parallel ranges (parallel.ts); a node without python3 sends them with `head` and
 *   hashes them on a second channel.
 * - Every file is hashed locally (SHA-256, and MD5 for S3 ETags) while it streams, written under a
 *   temporary name, compared with the node's SHA-256, and renamed only when they match.
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { RemoteOperation, StreamOperation, runOperation } from '../../remote/operation';
import { shq } from '../../util/quote';
import type { AbortLike, Transport } from '../../ssh/transport';
import { insideDest } from '../dest/paths';
import { PARALLEL_MIN_BYTES, fetchParallel, parallelPossible } from './parallel';
import { TransferResult, VerifiedWriter, failedTransfer, fsProblem } from './verifiedWriter';
import { nodeReadsFrames } from './frames';
import { parallelPays } from './link';
import { downloadFramed } from './oneFramed';
import { streamIntoWriter } from './streamInto';

export type { TransferResult } from './verifiedWriter';

/**
 * How much more than its listed size a file may bring in a tar batch (a live log grows between the listing
 * and the read; tar sends what it saw when it opened the file). Past it the entry is refused and the batch
 * stream is closed: a node that claims 1 TiB for a 7-byte file fills neither memory nor disk.
 */
export function entryLimit(listedSize: number): number {
  const listed = Math.max(0, Math.floor(listedSize));
  return listed + Math.max(64 * 1024 * 1024, listed);
}

/**
 * How much one tar batch may bring in all: the listed sizes, tar's headers, and ONE slack for the whole batch
 * (files that grew while they were read). Each entry still has its own entryLimit; without a batch total, many
 * entries each just under it (30 files listed at 7 B, 63 MiB sent for each) put gigabytes on disk.
 */
export const BATCH_SLACK_BYTES = 64 * 1024 * 1024;

export function batchBudget(items: Array<{ size: number }>): number {
  return items.reduce((a, i) => a + Math.max(0, Math.floor(i.size)) + 4096, BATCH_SLACK_BYTES + 1024 * 1024);
}

export interface TransferItem {
  remotePath: string;
  /** Relative to dest. */
  localPath: string;
  size: number;
}

/** `sha256sum -z` output: `<hex>  <path>\0` (no escaping with -z). */
export function parseHashList(out: Buffer, hexLen: number): Map<string, string> {
  const m = new Map<string, string>();
  for (const rec of out.toString('utf8').split('\0')) {
    if (rec.length < hexLen + 2) continue;
    const hex = rec.slice(0, hexLen);
    if (!/^[0-9a-f]+$/.test(hex)) continue;
    m.set(rec.slice(hexLen + 2), hex);
  }
  return m;
}

/** Hash many remote files in one exec; paths travel on stdin (NUL-separated), never on a command line. */
function hashListOperation(paths: string[], algo: 'sha256' | 'md5'): RemoteOperation<Map<string, string>> {
  const tool = algo === 'sha256' ? 'sha256sum' : 'md5sum';
  return {
    name: tool,
    command: `xargs -0 -r ${tool} -z --`,
    stdin: Buffer.from(paths.join('\0') + '\0'),
    timeoutMs: 30 * 60_000,
    maxOutputBytes: 64 * 1024 * 1024,
    parse: (r) => parseHashList(r.stdout, algo === 'sha256' ? 64 : 32),
  };
}

export async function remoteHashes(
  t: Transport,
  paths: string[],
  algo: 'sha256' | 'md5',
  signal?: AbortLike,
): Promise<Map<string, string>> {
  if (paths.length === 0) return new Map();
  return runOperation(t, hashListOperation(paths, algo), signal);
}

/** `<index> <sha256>  -` lines of prefixHashOperation, back to paths. */
function parsePrefixHashes(out: Buffer, entries: Array<{ path: string }>): Map<string, string> {
  const m = new Map<string, string>();
  for (const l of out.toString().split('\n')) {
    const x = /^(\d+) ([0-9a-f]{64})/.exec(l);
    if (x && entries[Number(x[1])]) m.set(entries[Number(x[1])].path, x[2]);
  }
  return m;
}

/**
 * SHA-256 of the first N bytes of each file (one exec; paths quoted into the script). Used for files that
 * grew while they were read: what we received must equal the node's file up to what we received.
 */
function prefixHashOperation(entries: Array<{ path: string; size: number }>): RemoteOperation<Map<string, string>> {
  const lines = entries.map(
    (e, i) => `printf '%s ' ${i}; head -c ${Math.max(0, Math.floor(e.size))} -- ${shq(e.path)} 2>/dev/null | sha256sum`,
  );
  return {
    name: 'prefix-sha256',
    command: 'sh -s',
    stdin: lines.join('\n') + '\n',
    timeoutMs: 30 * 60_000,
    maxOutputBytes: 128 * entries.length + 4096,
    parse: (r) => parsePrefixHashes(r.stdout, entries),
  };
}

export async function prefixHashes(
  t: Transport,
  entries: Array<{ path: string; size: number }>,
  signal?: AbortLike,
): Promise<Map<string, string>> {
  if (entries.length === 0) return new Map();
  return runOperation(t, prefixHashOperation(entries), signal);
}

/** `stat --printf '%s\t%Y\t%n\0'` records: size, mtime, path. */
function parseStatList(out: Buffer): Map<string, { size: number; mtime: number }> {
  const m = new Map<string, { size: number; mtime: number }>();
  for (const rec of out.toString('utf8').split('\0')) {
    const a = rec.indexOf('\t');
    const b = rec.indexOf('\t', a + 1);
    if (a < 0 || b < 0) continue;
    m.set(rec.slice(b + 1), { size: Number(rec.slice(0, a)), mtime: Number(rec.slice(a + 1, b)) });
  }
  return m;
}

/** Current size and mtime of files (one exec, NUL-separated paths on stdin). */
function statListOperation(paths: string[]): RemoteOperation<Map<string, { size: number; mtime: number }>> {
  return {
    name: 'stat',
    command: `xargs -0 -r stat --printf '%s\\t%Y\\t%n\\0' --`,
    stdin: Buffer.from(paths.join('\0') + '\0'),
    timeoutMs: 10 * 60_000,
    maxOutputBytes: 64 * 1024 * 1024,
    parse: (r) => parseStatList(r.stdout),
  };
}

export async function remoteStats(
  t: Transport,
  paths: string[],
  signal?: AbortLike,
): Promise<Map<string, { size: number; mtime: number }>> {
  if (paths.length === 0) return new Map();
  return runOperation(t, statListOperation(paths), signal);
}

/** One large file, exactly its first `size` bytes, only if it is a regular file (exit 3 otherwise). */
function headStreamOperation(remotePath: string, size: number): StreamOperation {
  const n = Math.max(0, Math.floor(size));
  return {
    name: 'head',
    command: `f=${shq(remotePath)}; if [ -f "$f" ] && [ ! -L "$f" ]; then exec head -c ${n} -- "$f"; else echo "not a regular file" >&2; exit 3; fi`,
  };
}

/** SHA-256 of the first `sizes[i]` bytes of one file, in order (null where the node printed none). */
function prefixShasOperation(remotePath: string, sizes: number[]): RemoteOperation<Array<string | null>> {
  const q = shq(remotePath);
  return {
    name: 'prefix-sha256',
    command: `f=${q}; ` + sizes.map((s) => `head -c ${Math.max(0, Math.floor(s))} -- "$f" 2>/dev/null | sha256sum`).join('; '),
    timeoutMs: 30 * 60_000,
    maxOutputBytes: 128 * sizes.length + 4096,
    parse: (r) => {
      const lines = r.stdout.toString().split('\n');
      return sizes.map((_, i) => /^([0-9a-f]{64})/.exec(lines[i] ?? '')?.[1] ?? null);
    },
  };
}

/** Bytes n…m of a file that grew since it was saved (only if it is still a regular file; exit 3 otherwise). */
function appendStreamOperation(remotePath: string, n: number, m: number): StreamOperation {
  return {
    name: 'append',
    command:
      `f=${shq(remotePath)}; if [ -f "$f" ] && [ ! -L "$f" ]; then tail -c +${n + 1} -- "$f" | head -c ${m - n}; ` +
      `else echo "not a regular file" >&2; exit 3; fi`,
  };
}

/** A batch of small files as one tar stream; the NUL-separated list travels on stdin. */
export function tarStreamOperation(list: Buffer | string): StreamOperation {
  return { name: 'tar', command: 'exec tar --null --verbatim-files-from --no-recursion -P -T - -cf -', stdin: list };
}

/** Download one (large) file with `cat` while the node computes its SHA-256 on a second channel. */
export interface TransferOptions {
  /** Compute MD5 too (for S3 ETag comparison). */
  md5?: boolean;
}

export async function downloadOne(
  t: Transport,
  dest: string,
  item: TransferItem,
  onBytes: (n: number) => void,
  signal?: AbortLike,
  o: TransferOptions = {},
): Promise<TransferResult> {
  const w = new VerifiedWriter(dest, item.localPath, o.md5 ?? false, true);
  if (w.error) {
    const p = fsProblem(w.error, dest);
    return { ...failedTransfer(item.remotePath, p.reason), fatal: p.fatal };
  }
  const n = Math.max(0, Math.floor(item.size));
  // Parallel ranges only where the link's round trip pays for them; else one stream, read once on the node when it can.
  // (Ranges and `head` read exactly the listed size, a log that grows meanwhile up to the size we planned, and the node
  // hashes that same prefix in parallel; a file that shrank yields fewer bytes and fails the check, on every path.)
  // (Whether ranges are possible at all is known first: through ProxyJump they are not, and the node's second,
  // hashing read that goes with them would be wasted.)
  const parallel = n >= PARALLEL_MIN_BYTES && parallelPossible(t) && (await parallelPays(t));
  if (!parallel && (await nodeReadsFrames(t))) return downloadFramed(t, item, entryLimit(item.size), w, onBytes, signal);
  const hashP = prefixHashes(t, [{ path: item.remotePath, size: n }], signal).catch(() => new Map<string, string>());
  if (parallel) {
    // Ranges over several connections (worker threads); null when not possible here: one stream below.
    const p = await fetchParallel(t, item.remotePath, n, w.tmp, { md5: o.md5, onBytes, signal }).catch(
      (e) => (w.discard(), Promise.reject(e)),
    );
    if (p?.reason) w.discard();
    if (p?.reason) return failedTransfer(item.remotePath, p.reason, p.bytes);
    if (p) return { ...w.adopt(p).finish((await hashP).get(item.remotePath) ?? null, item.size), remotePath: item.remotePath };
  }
  // We stop at the listed length ourselves too (a wrapped `head` on the node may send more) and close the channel.
  let cut = false;
  const failed = await streamIntoWriter(
    t,
    headStreamOperation(item.remotePath, n),
    w,
    (b, s) => {
      if (cut) return;
      if (w.bytes + b.length > n) {
        b = b.subarray(0, n - w.bytes);
        cut = true;
        s.close();
      }
      w.write(b);
      onBytes(b.length);
    },
    signal,
    (done) => done.code === 0 || cut,
  );
  if (failed !== null) return failedTransfer(item.remotePath, failed, w.bytes);
  const hashes = await hashP;
  const r = w.finish(hashes.get(item.remotePath) ?? null, item.size);
  return { ...r, remotePath: item.remotePath };
}

interface AppendItem extends TransferItem {
  /** Bytes of the local verified copy (the node's file had these first bytes). */
  baseSize: number;
  /** SHA-256 of those bytes. */
  baseSha256: string;
}

/**
 * Fetch only what was appended to a file whose first `baseSize` bytes are already verified locally: the
 * node hashes that prefix (a truncated, rotated or rewritten file fails here and the caller fetches it
 * whole) and the whole new size, the appended bytes travel, and the combined local file must hash like
 * the node's before it replaces the old copy. `prefixChanged` tells the caller to fetch the file whole.
 */
export async function downloadAppend(
  t: Transport,
  dest: string,
  item: AppendItem,
  onBytes: (n: number) => void,
  signal?: AbortLike,
  o: TransferOptions = {},
): Promise<TransferResult & { prefixChanged?: boolean; appended: number }> {
  const fail = (reason: string, extra: Partial<TransferResult & { prefixChanged: boolean; appended: number }> = {}) => ({
    ...failedTransfer(item.remotePath, reason),
    appended: 0,
    ...extra,
  });
  const n = Math.max(0, Math.floor(item.baseSize));
  const m = Math.max(n, Math.floor(item.size));
  const abs = insideDest(dest, item.localPath);
  let local: number;
  try {
    local = openSync(abs, 'r');
  } catch {
    return fail('no local copy to append to', { prefixChanged: true });
  }
  const w = new VerifiedWriter(dest, item.localPath, o.md5 ?? false, m > 4 * 1024 * 1024);
  if (w.error) {
    closeSync(local);
    const p = fsProblem(w.error, dest);
    return fail(p.reason, { fatal: p.fatal });
  }
  try {
    const buf = Buffer.allocUnsafe(1024 * 1024);
    let copied = 0;
    while (copied < n) {
      const k = readSync(local, buf, 0, Math.min(buf.length, n - copied), copied);
      if (k <= 0) break;
      w.write(buf.subarray(0, k));
      copied += k;
    }
    if (copied !== n || w.peekSha() !== item.baseSha256) {
      w.discard();
      return fail('the local copy no longer matches what was verified', { prefixChanged: true });
    }
  } finally {
    closeSync(local);
  }
  const hashP = runOperation(t, prefixShasOperation(item.remotePath, [n, m]), signal).catch(() => [null, null]);
  let appended = 0;
  // At most m − n bytes, whatever the node sends (a wrapped `head` may ignore -c): cut, close the channel (#24 e2).
  let cut = false;
  const failed = await streamIntoWriter(
    t,
    appendStreamOperation(item.remotePath, n, m),
    w,
    (b, s) => {
      if (cut) return;
      if (appended + b.length > m - n) {
        b = b.subarray(0, m - n - appended);
        cut = true;
        s.close();
      }
      w.write(b);
      appended += b.length;
      onBytes(b.length);
    },
    signal,
    (done) => done.code === 0 || cut,
  );
  if (failed !== null) return fail(failed, { appended });
  const [prefixSha, wholeSha] = await hashP;
  if (prefixSha !== item.baseSha256) {
    w.discard();
    return fail('the start of the file changed on the node (truncated, rotated or rewritten)', { prefixChanged: true, appended });
  }
  const r = w.finish(wholeSha, m);
  return { ...r, remotePath: item.remotePath, appended };
}
