/**
 * Where the files of small-file batches are written: a writer thread (worker_threads, the `write`
 * role of parallelWorker.ts), so that creating, writing, hashing, secret-scanning and renaming thousands of
 * files never runs on the extension host's thread, and overlaps with the decryption that does. Without a
 * worker file (a bundle that lacks it) the same code runs inline.
 *
 * The guarantees are VerifiedWriter's: each file is hashed while it is written, a new one under its final name
 * (no rename per file), one that replaces an existing copy under a temporary name; `commit` with the node's SHA-256
 * keeps it (renames it into place) only when they match, and removes it otherwise.
 * The batch's bytes travel as one copied chunk per SSH read with the operations that cut it into files,
 * so there are few messages; the bytes in flight to the thread are bounded (the caller pauses its stream).
 */
import { Worker } from 'node:worker_threads';
import { errorMessage } from '../../util/errors';
import { SecretHit, looksLikeText, scanSecrets } from './secretScan';
import { VerifiedWriter, failedTransfer, fsProblem } from './verifiedWriter';
import { workerFile } from './parallel';
import type { BatchOp, CommittedFile, EndedFile, WriteCommand, WriteEvent } from './workerProtocol';

export type { BatchOp, CommittedFile, EndedFile } from './workerProtocol';

/** The files of the batches, on the thread that writes them. */
export class BatchFiles {
  private readonly files = new Map<number, { w: VerifiedWriter; text: Buffer[] | null; textBytes: number; secrets?: SecretHit[] }>();

  constructor(
    private readonly dest: string,
    private readonly md5: boolean,
    /** Files up to this size are scanned for secrets from the bytes written (larger ones by the caller, from disk). */
    private readonly scanLimit: number,
  ) {}

  apply(buf: Uint8Array, ops: BatchOp[]): EndedFile[] {
    const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
    const ended: EndedFile[] = [];
    for (const op of ops) {
      if (op[0] === 'o') {
        this.files.get(op[1])?.w.discard();
        this.files.set(op[1], { w: new VerifiedWriter(this.dest, op[2], this.md5, false, true), text: [], textBytes: 0 });
        continue;
      }
      const f = this.files.get(op[1]);
      if (!f) continue;
      if (op[0] === 'd') {
        const c = b.subarray(op[2], op[2] + op[3]);
        f.w.write(c);
        if (f.text) {
          f.textBytes += c.length;
          if (f.textBytes > this.scanLimit) f.text = null;
          else f.text.push(c);
        }
        continue;
      }
      f.w.close();
      if (f.text && !f.w.error) {
        const all = f.text.length === 1 ? f.text[0] : Buffer.concat(f.text);
        f.secrets = looksLikeText(all) ? scanSecrets(all.toString('utf8')) : [];
      }
      f.text = null;
      const fatal = !!f.w.error && fsProblem(f.w.error, this.dest).fatal;
      ended.push({ id: op[1], sha256: f.w.peekSha(), bytes: f.w.bytes, failed: !!f.w.error, fatal });
    }
    return ended;
  }

  /** Compare with the node's SHA-256 and move into place (or discard): VerifiedWriter.finish. */
  commit(items: Array<{ id: number; sha256: string | null }>): CommittedFile[] {
    const out: CommittedFile[] = [];
    for (const { id, sha256 } of items) {
      const f = this.files.get(id);
      if (!f) continue;
      this.files.delete(id);
      const result = f.w.finish(sha256, f.w.bytes);
      out.push({ id, result, secrets: result.ok ? f.secrets : undefined });
    }
    return out;
  }

  discard(ids: Iterable<number>): void {
    for (const id of ids) {
      this.files.get(id)?.w.discard();
      this.files.delete(id);
    }
  }

  discardAll(): void {
    this.discard([...this.files.keys()]);
  }
}

const HIGH_WATER = 16 * 1024 * 1024;
const LOW_WATER = 4 * 1024 * 1024;

/** The extension host's side: hands batches' bytes to the writer thread and routes what it reports. */
export class BatchWriter {
  private nextId = 1;
  private seq = 0;
  private readonly onEnded = new Map<number, (e: EndedFile) => void>();
  private readonly commits = new Map<number, { items: Array<{ id: number }>; resolve: (r: CommittedFile[]) => void }>();
  private drained: Array<() => void> = [];
  private dead: string | null = null;
  /** Bytes sent to the thread and not yet written. */
  inflight = 0;

  private constructor(
    private readonly worker: Worker | null,
    private readonly inline: BatchFiles | null,
  ) {
    if (!worker) return;
    worker.on('message', (m: WriteEvent) => {
      if (m.type === 'ended') this.ended(m.ack, m.ended);
      else {
        const c = this.commits.get(m.seq);
        this.commits.delete(m.seq);
        c?.resolve(m.results);
      }
    });
    const die = (why: string) => {
      if (this.dead) return;
      this.dead = `the writer thread stopped (${why}); run salvage again`;
      this.failPending();
    };
    worker.on('error', (e) => die(errorMessage(e)));
    worker.on('exit', (c) => die(`exit ${c}`));
  }

  /**
   * In a writer thread when the worker file is there (and `thread` is not false), else inline. The thread
   * is unref'd: it never keeps the process alive.
   */
  static start(dest: string, o: { md5: boolean; scanLimit: number; thread?: boolean }): BatchWriter {
    const file = o.thread === false || process.env.GS_SALVAGE_WRITER === 'inline' ? undefined : workerFile();
    if (file) {
      try {
        const w = new Worker(file, { workerData: { role: 'write', dest, md5: o.md5, scanLimit: o.scanLimit } });
        w.unref();
        return new BatchWriter(w, null);
      } catch {
        /* inline below */
      }
    }
    return new BatchWriter(null, new BatchFiles(dest, o.md5, o.scanLimit));
  }

  /** False once the thread died or was stopped: every later file would fail, so take a new writer. */
  get alive(): boolean {
    return this.dead === null;
  }

  /** How long the writer thread has waited for work since it started (ms; null inline). */
  idleMs(): number | null {
    return this.worker ? this.worker.performance.eventLoopUtilization().idle : null;
  }

  get threaded(): boolean {
    return this.worker !== null;
  }

  /** A new file id; `onEnded` is called once when its bytes are all written (or the thread died). */
  open(onEnded: (e: EndedFile) => void): number {
    const id = this.nextId++;
    this.onEnded.set(id, onEnded);
    return id;
  }

  /** `buf` is handed over (transferred to the thread): the caller must not touch it again. */
  send(buf: Uint8Array, ops: BatchOp[]): void {
    if (this.dead) {
      this.failPending();
      return;
    }
    this.inflight += buf.byteLength;
    if (this.inline) this.ended(buf.byteLength, this.inline.apply(buf, ops));
    else this.worker!.postMessage({ type: 'chunk', buf, ops } satisfies WriteCommand, [buf.buffer as ArrayBuffer]);
  }

  /** Resolves when the bytes in flight are below the low-water mark (true at once when they are). */
  whenDrained(): Promise<void> {
    if (this.inflight <= LOW_WATER || this.dead) return Promise.resolve();
    return new Promise((r) => this.drained.push(r));
  }

  get congested(): boolean {
    return this.inflight > HIGH_WATER && !this.dead;
  }

  commit(items: Array<{ id: number; sha256: string | null }>): Promise<CommittedFile[]> {
    if (items.length === 0) return Promise.resolve([]);
    if (this.inline) return Promise.resolve(this.inline.commit(items));
    if (this.dead) return Promise.resolve(this.deadResults(items));
    const seq = ++this.seq;
    return new Promise((resolve) => {
      this.commits.set(seq, { items, resolve });
      this.worker!.postMessage({ type: 'commit', seq, items } satisfies WriteCommand);
    });
  }

  discard(ids: number[]): void {
    for (const id of ids) this.onEnded.delete(id);
    if (ids.length === 0) return;
    if (this.inline) this.inline.discard(ids);
    else if (!this.dead) this.worker!.postMessage({ type: 'discard', ids } satisfies WriteCommand);
  }

  /** Stops the thread; files not committed are discarded there. */
  async close(): Promise<void> {
    if (this.inline) {
      this.inline.discardAll();
      return;
    }
    if (this.dead) return;
    const w = this.worker!;
    const exited = new Promise<void>((r) => w.once('exit', () => r()));
    this.dead = 'the writer thread was stopped';
    w.postMessage({ type: 'stop' } satisfies WriteCommand);
    const timer = setTimeout(() => void w.terminate(), 10_000);
    await exited;
    clearTimeout(timer);
    this.failPending();
  }

  private ended(ack: number, ended: EndedFile[]): void {
    this.inflight = Math.max(0, this.inflight - ack);
    for (const e of ended) {
      const cb = this.onEnded.get(e.id);
      this.onEnded.delete(e.id);
      cb?.(e);
    }
    if (this.inflight <= LOW_WATER) this.wake();
  }

  private wake(): void {
    const d = this.drained;
    this.drained = [];
    for (const r of d) r();
  }

  private deadResults(items: Array<{ id: number }>): CommittedFile[] {
    const reason = this.dead ?? 'the writer thread stopped';
    return items.map(({ id }) => ({
      id,
      result: failedTransfer('', reason),
    }));
  }

  /** Nothing waits forever on a thread that is gone: every open file ends failed, every commit fails. */
  private failPending(): void {
    const waiting = [...this.onEnded.entries()];
    this.onEnded.clear();
    for (const [id, cb] of waiting) cb({ id, sha256: '', bytes: 0, failed: true, fatal: false });
    const commits = [...this.commits.values()];
    this.commits.clear();
    for (const c of commits) c.resolve(this.deadResults(c.items));
    this.inflight = 0;
    this.wake();
  }
}
