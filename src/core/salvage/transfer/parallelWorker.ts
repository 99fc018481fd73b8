/**
 * Worker-thread entry for parallel large-file transfers (see parallel.ts). Two roles:
 *
 * - `fetch`: opens its OWN SSH connection (an SshTransport, so host keys are checked exactly as on the
 *   pooled connection: same known_hosts files, same code; an unknown key is refused, never prompted),
 *   and runs the byte ranges it is given, each on its own channel, writing them at their offset in the
 *   temporary file. Decryption and writes happen on this thread, not the extension host's.
 * - `hash`: reads the temporary file in order up to the contiguous watermark the coordinator reports and
 *   computes SHA-256 (and MD5 for S3 ETags), then fsyncs it.
 * - `write`: the writer thread of small-file tar batches (batchWriter.ts): creates, writes, hashes and
 *   scans the files, and renames each into place when the coordinator commits it with the node's SHA-256.
 *
 * Bundled as dist/salvageWorker.js (scripts/build.mjs, scripts/package.mjs); under tsc it runs as
 * out/src/core/salvage/parallelWorker.js.
 */
import { createHash } from 'node:crypto';
import { closeSync, fsyncSync, openSync, readSync, writeSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { GpuSessionsError, errorMessage } from '../../util/errors';
import { openStream, streamExitReason } from '../../remote/operation';
import { shq } from '../../util/quote';
import { KnownHostsStore } from '../../ssh/knownHosts';
import { SshTransport } from '../../ssh/transport';
import { BatchFiles } from './batchWriter';
import { WRITE_BEHIND_BYTES, flushBehind } from './verifiedWriter';
import type { FetchCommand, FetchEvent, HashCommand, HashEvent, WorkerInit, WriteCommand, WriteEvent } from './workerProtocol';

const REPORT_EVERY = 4 * 1024 * 1024;

/** The remote command for one range: exactly `len` bytes from `off` of a regular file (never more). */
export function rangeCommand(remotePath: string, off: number, len: number): string {
  const o = Math.max(0, Math.floor(off));
  const n = Math.max(0, Math.floor(len));
  return (
    `f=${shq(remotePath)}; if [ -f "$f" ] && [ ! -L "$f" ]; then ` +
    `exec dd if="$f" iflag=skip_bytes,count_bytes,fullblock skip=${o} count=${n} bs=262144 status=none; ` +
    `else echo "not a regular file" >&2; exit 3; fi`
  );
}

function fetchRole(init: Extract<WorkerInit, { role: 'fetch' }>): void {
  const port = parentPort!;
  const post = (e: FetchEvent) => port.postMessage(e);
  const r = init.recipe;
  const t = new SshTransport({
    node: r.node,
    knownHosts: new KnownHostsStore(r.knownHostsFiles),
    extraIdentityFiles: r.extraIdentityFiles,
    agentSocket: r.agentSocket,
    homeDir: r.homeDir,
    connectTimeoutMs: r.connectTimeoutMs,
    keepaliveIntervalMs: r.keepaliveIntervalMs,
    keepaliveCountMax: r.keepaliveCountMax,
    maxChannels: r.maxChannels,
    confirmHostKey: async () => false,
  });
  let fd: number | null = null;
  const open = new Set<{ close(): void }>();
  let stopping = false;

  const runPiece = async (id: number, off: number, len: number): Promise<void> => {
    let got = 0;
    let reported = 0;
    let fsErr: NodeJS.ErrnoException | null = null;
    let stderr = '';
    let s;
    try {
      s = await openStream(t, { name: 'range', command: rangeCommand(init.remotePath, off, len) });
    } catch (e) {
      post({ type: 'failed', id, got: 0, retry: true, message: errorMessage(e) });
      return;
    }
    open.add(s);
    s.stdout.on('data', (b: Buffer) => {
      if (fsErr || got >= len) return;
      // Never past the range (the node could send more than asked): the bound of the listed size holds.
      const chunk = got + b.length > len ? b.subarray(0, len - got) : b;
      try {
        let w = 0;
        while (w < chunk.length) w += writeSync(fd!, chunk, w, chunk.length - w, off + got + w);
      } catch (e) {
        fsErr = e as NodeJS.ErrnoException;
        s.close();
        return;
      }
      got += chunk.length;
      if (got - reported >= REPORT_EVERY) {
        reported = got;
        post({ type: 'bytes', id, got });
      }
      if (got >= len) s.close();
    });
    s.stderr.on('data', (b: Buffer) => {
      if (stderr.length < 2000) stderr += b.toString();
    });
    const done = await s.done;
    open.delete(s);
    const err = fsErr as NodeJS.ErrnoException | null;
    if (err) post({ type: 'failed', id, got, retry: false, message: err.message, fsCode: err.code ?? 'EIO' });
    else if (got >= len) post({ type: 'done', id, got });
    else if (done.code === null)
      post({ type: 'failed', id, got, retry: true, message: `the connection dropped after ${got} of ${len} B of this range` });
    else if (done.code !== 0)
      post({
        type: 'failed',
        id,
        got,
        retry: false,
        message: streamExitReason(done, stderr),
      });
    else
      post({
        type: 'failed',
        id,
        got,
        retry: false,
        message: `changed on the node during the transfer (it ended at ${off + got} B, below its listed size); run salvage again`,
      });
  };

  port.on('message', (m: FetchCommand) => {
    if (m.type === 'stop') {
      stopping = true;
      for (const s of open) s.close();
      t.dispose();
      if (fd !== null) closeSync(fd);
      fd = null;
      port.close();
      return;
    }
    if (!stopping && m.type === 'piece') void runPiece(m.id, m.off, m.len);
  });
  try {
    fd = openSync(init.tmp, 'r+');
  } catch (e) {
    post({ type: 'fatal', code: (e as NodeJS.ErrnoException).code ?? 'io', message: errorMessage(e) });
    return;
  }
  t.connect().then(
    () => post({ type: 'ready' }),
    (e) => post({ type: 'fatal', code: e instanceof GpuSessionsError ? e.code : 'unreachable', message: errorMessage(e) }),
  );
}

function hashRole(init: Extract<WorkerInit, { role: 'hash' }>): void {
  const port = parentPort!;
  const post = (e: HashEvent) => port.postMessage(e);
  const sha = createHash('sha256');
  const md5 = init.md5 ? createHash('md5') : null;
  const buf = Buffer.allocUnsafe(4 * 1024 * 1024);
  let fd: number;
  try {
    fd = openSync(init.tmp, 'r');
  } catch (e) {
    post({ type: 'error', message: errorMessage(e), code: (e as NodeJS.ErrnoException).code });
    return;
  }
  let pos = 0;
  // Write-behind: the bytes hashed so far are written (every piece below them is done); they start flushing now
  let unflushed = 0;
  let flushing = false;
  const pump = (target: number): void => {
    while (pos < target) {
      const n = readSync(fd, buf, 0, Math.min(buf.length, target - pos), pos);
      if (n <= 0) throw new Error(`the temporary file ended at ${pos} B before ${target} B`);
      const b = buf.subarray(0, n);
      sha.update(b);
      md5?.update(b);
      pos += n;
      unflushed += n;
    }
    if (unflushed >= WRITE_BEHIND_BYTES && !flushing) {
      unflushed = 0;
      flushing = flushBehind(init.tmp, () => (flushing = false));
    }
  };
  port.on('message', (m: HashCommand) => {
    try {
      pump(m.n);
      if (m.type === 'finish') {
        // Durable before it counts as salvaged (here, so the extension host never waits on the disk).
        fsyncSync(fd);
        closeSync(fd);
        post({ type: 'digest', sha256: sha.digest('hex'), md5: md5 ? md5.digest('hex') : null, bytes: pos });
        port.close();
      }
    } catch (e) {
      post({ type: 'error', message: errorMessage(e), code: (e as NodeJS.ErrnoException).code });
      port.close();
    }
  });
}

function writeRole(init: Extract<WorkerInit, { role: 'write' }>): void {
  const port = parentPort!;
  const post = (e: WriteEvent) => port.postMessage(e);
  const files = new BatchFiles(init.dest, init.md5, init.scanLimit);
  port.on('message', (m: WriteCommand) => {
    if (m.type === 'chunk') post({ type: 'ended', ack: m.buf.byteLength, ended: files.apply(m.buf, m.ops) });
    else if (m.type === 'commit') post({ type: 'committed', seq: m.seq, results: files.commit(m.items) });
    else if (m.type === 'discard') files.discard(m.ids);
    else {
      files.discardAll();
      port.close();
    }
  });
}

if (parentPort && workerData && typeof workerData === 'object' && 'role' in workerData) {
  const init = workerData as WorkerInit;
  if (init.role === 'fetch') fetchRole(init);
  else if (init.role === 'hash') hashRole(init);
  else if (init.role === 'write') writeRole(init);
  else parentPort.postMessage({ type: 'pong', ssh2: typeof require('ssh2').Client === 'function' });
}
