/**
 * Many small files as one stream per batch: the node's single-pass reader (frames.ts: each file read once, hashed
 * while it is sent) where the node has python3, else GNU tar (NUL-separated names on stdin, taken verbatim, absolute
 * names kept, no recursion) with the node's SHA-256 list fetched in parallel on another channel. The files are written
 * by a BatchWriter (a writer thread of the run's pool, writerPool.ts; inline when none is given); each is
 * committed (renamed into place) as soon as its bytes are written and match the node's SHA-256, so a batch's files
 * are verified while the rest still travels. A hostile node's stream is bounded per entry (entryLimit) and per
 * batch (batchBudget).
 */
import { GpuSessionsError, errorMessage } from '../../util/errors';
import { openStream } from '../../remote/operation';
import type { AbortLike, ExecStream, Transport } from '../../ssh/transport';
import { TarEntry, TarReader } from '../../remote/tar';
import { FrameEntry, FrameReader, frameStreamOperation, nodeReadsFrames } from './frames';
import { BatchOp, BatchWriter, CommittedFile, EndedFile } from './batchWriter';
import type { SecretHit } from './secretScan';
import {
  TransferItem,
  TransferOptions,
  TransferResult,
  batchBudget,
  entryLimit,
  prefixHashes,
  remoteHashes,
  tarStreamOperation,
} from './transfer';
import { failedTransfer } from './verifiedWriter';

type OnFile = (r: TransferResult & { secrets?: SecretHit[] }) => void;

/** Download a batch of small files (see the module's comment). */
export async function downloadBatch(
  t: Transport,
  dest: string,
  items: TransferItem[],
  onBytes: (n: number) => void,
  onFile: OnFile,
  signal?: AbortLike,
  o: TransferOptions & { writer?: BatchWriter; scanLimit?: number } = {},
): Promise<void> {
  if (items.length === 0) return;
  const own = o.writer ? null : BatchWriter.start(dest, { md5: o.md5 ?? false, scanLimit: o.scanLimit ?? 0, thread: false });
  const bw = o.writer ?? own!;
  try {
    await new BatchReceive(bw, { t, items, onBytes, onFile, signal }).run();
  } finally {
    await own?.close();
  }
}

interface BatchFile {
  item: TransferItem;
  id: number;
  ended: EndedFile | null;
  /** Its last byte was handed to the writer. */
  endSent: boolean;
  /** The node could not read it to its end (its bytes are discarded, this is why). */
  aborted?: string;
}

interface BatchArgs {
  t: Transport;
  items: TransferItem[];
  onBytes: (n: number) => void;
  onFile: OnFile;
  signal?: AbortLike;
}

/** Why a file asked for never arrived, from tar's stderr or the stream's error. */
function missingReason(remotePath: string, stderr: string, parseError: unknown): string {
  if (/No such file/.test(stderr) && stderr.includes(remotePath)) return 'vanished from the node';
  if (parseError) return `transfer stream broke: ${errorMessage(parseError)}`;
  if (stderr.includes(remotePath))
    return stderr
      .split('\n')
      .find((l) => l.includes(remotePath))!
      .trim();
  return `not received (${stderr.trim().split('\n')[0] || 'connection dropped?'})`;
}

/** One batch's stream, cut into files for the writer, each committed once the node's hash for it is known. */
class BatchReceive {
  private readonly byPath: Map<string, TransferItem>;
  /** The node's hashes (one `sha256sum` pass on another channel), once they came. */
  private hashes: Map<string, string> | null = null;
  private hashP: Promise<Map<string, string>> | null = null;
  private readonly seen = new Set<string>();
  private cur: BatchFile | null = null;
  /** The destination cannot take more (disk full, read-only): the rest is not written. */
  private fatal = false;
  /** Files whose bytes are written, waiting for the node's hash; those that differ wait for the end. */
  private ready: BatchFile[] = [];
  private readonly differing: BatchFile[] = [];
  private writing = 0;
  private allWritten: (() => void) | null = null;
  private readonly commits: Array<Promise<void>> = [];
  /** Everything the batch may bring (batchBudget); past it (or one file's limit) the node sends what we did not ask. */
  private budget: number;
  private overflow: Error | null = null;
  /** What one read of the stream brought, cut into files, for the writer (one copied chunk per read). */
  private out: Buffer[] = [];
  private outLen = 0;
  private ops: BatchOp[] = [];
  private stderr = '';
  private parseError: unknown = null;
  private reader: { push(b: Buffer): void } | null = null;
  /** The node's reader sends each file's hash with it (else tar, and the hashes on another channel). */
  private framed = false;

  constructor(
    private readonly bw: BatchWriter,
    private readonly a: BatchArgs,
  ) {
    this.byPath = new Map(a.items.map((i) => [i.remotePath, i]));
    this.budget = batchBudget(a.items);
  }

  async run(): Promise<void> {
    const { t, items, signal } = this.a;
    const list = Buffer.from(items.map((i) => i.remotePath).join('\0') + '\0');
    let op;
    if (await nodeReadsFrames(t)) {
      // The node's hashes come in the stream, each with its file.
      this.framed = true;
      this.hashes = new Map();
      this.hashP = Promise.resolve(this.hashes);
      this.reader = new FrameReader(items.length, {
        entry: (e) => this.frameEntry(e),
        data: (b) => this.data(b),
        end: (sha) => this.frameEnd(sha),
        aborted: (why) => this.frameAborted(why),
        notSent: (i, why) => this.notSent(items[i], why),
      });
      op = frameStreamOperation(list);
    } else {
      this.startHashes();
      this.reader = new TarReader({ entry: (e) => this.entry(e), data: (b) => this.data(b), end: () => this.end() });
      op = tarStreamOperation(list);
    }
    const s = await openStream(t, op, signal);
    s.stdout.on('data', (b: Buffer) => this.received(s, b));
    s.stderr.on('data', (b: Buffer) => {
      if (this.stderr.length < 8000) this.stderr += b.toString();
    });
    await s.done;
    this.flush(s);
    if (this.writing > 0) await new Promise<void>((r) => (this.allWritten = r));
    await this.settle();
    this.reportUnfinished();
  }

  /** The node's hashes, asked for once (at the start, in parallel with the stream). */
  private startHashes(): Promise<Map<string, string>> {
    return (this.hashP ??= remoteHashes(
      this.a.t,
      this.a.items.map((i) => i.remotePath),
      'sha256',
      this.a.signal,
    )
      .catch(() => new Map<string, string>())
      .then((h) => {
        this.hashes = h;
        this.commitReady();
        return h;
      }));
  }

  private commit(fs: BatchFile[], h: Map<string, string>): void {
    if (fs.length === 0) return;
    const byId = new Map(fs.map((f) => [f.id, f]));
    const report = (f: BatchFile, c: CommittedFile) =>
      this.a.onFile({ ...c.result, remotePath: f.item.remotePath, secrets: c.secrets, reason: f.aborted ?? c.result.reason });
    this.commits.push(
      this.bw.commit(fs.map((f) => ({ id: f.id, sha256: h.get(f.item.remotePath) ?? null }))).then((rs) => {
        for (const c of rs) report(byId.get(c.id)!, c);
      }),
    );
  }

  /** Matching files (and failed writes, which commit reports) go now; the others after the stream. */
  private commitReady(): void {
    const h = this.hashes;
    if (!h || this.ready.length === 0) return;
    const now: BatchFile[] = [];
    for (const f of this.ready)
      (this.framed || f.ended!.failed || f.aborted || h.get(f.item.remotePath) === f.ended!.sha256 ? now : this.differing).push(f);
    this.ready = [];
    this.commit(now, h);
  }

  /** A tar entry: true when its bytes are wanted (a file asked for, once, within its limit). */
  private entry(e: TarEntry): boolean {
    const item = this.byPath.get(e.path);
    if (!item || this.seen.has(e.path)) return false;
    this.seen.add(e.path);
    if (e.type !== '0' && e.type !== '\0' && e.type !== '7' && e.size <= entryLimit(item.size)) {
      this.a.onFile(
        failedTransfer(
          item.remotePath,
          e.type === '2' ? `became a symlink (→ ${e.linkName}); not followed` : 'not a regular file any more',
        ),
      );
      return false;
    }
    return this.begin(item, e.size);
  }

  /** A file of the node's reader (frames.py): the same checks as a tar entry (the node checked it is a regular file). */
  private frameEntry(e: FrameEntry): boolean {
    const item = this.a.items[e.index];
    if (this.seen.has(item.remotePath)) return false;
    this.seen.add(item.remotePath);
    return this.begin(item, e.size);
  }

  private frameEnd(sha256: string): void {
    if (this.cur) this.hashes!.set(this.cur.item.remotePath, sha256);
    this.end();
  }

  /** The node could not read the file to its end: what it sent is written, then discarded with the node's reason. */
  private frameAborted(why: string): void {
    if (this.cur) this.cur.aborted = why;
    this.end();
  }

  private notSent(item: TransferItem, why: string): void {
    if (this.seen.has(item.remotePath)) return;
    this.seen.add(item.remotePath);
    this.a.onFile(failedTransfer(item.remotePath, why));
  }

  /** A file asked for starts, announced at `size` bytes: refused past its limit (the stream then stops). */
  private begin(item: TransferItem, size: number): boolean {
    if (size > entryLimit(item.size)) {
      this.overflow = new Error(`the node sent a ${size} B entry for a file listed at ${item.size} B; the stream was stopped`);
      this.a.onFile(
        failedTransfer(
          item.remotePath,
          `the node sent ${size} B for a file listed at ${item.size} B (more than the ${entryLimit(item.size)} B allowed ` +
            'for a file that grows while it is read): refused and not written; run salvage again',
        ),
      );
      return false;
    }
    if (this.fatal) return false;
    const f: BatchFile = { item, id: 0, ended: null, endSent: false };
    f.id = this.bw.open((ended) => {
      if (f.ended) return;
      f.ended = ended;
      if (ended.fatal) this.fatal = true;
      this.ready.push(f);
      this.commitReady();
      if (f.endSent && --this.writing === 0) this.allWritten?.();
    });
    this.ops.push(['o', f.id, item.localPath]);
    this.cur = f;
    return true;
  }

  private data(b: Buffer): void {
    if (this.cur) {
      this.ops.push(['d', this.cur.id, this.outLen, b.length]);
      this.out.push(b);
      this.outLen += b.length;
    }
    this.a.onBytes(b.length);
  }

  private end(): void {
    const cur = this.cur;
    if (cur) {
      cur.endSent = true;
      // (Already ended: the writer thread is gone and reported it failed.)
      if (!cur.ended) {
        this.ops.push(['e', cur.id]);
        this.writing++;
      }
    }
    this.cur = null;
  }

  /** One read of the stream: parsed within the batch's budget (a breach closes the stream), then handed on. */
  private received(s: ExecStream, b: Buffer): void {
    if (this.parseError) return;
    this.budget -= b.length;
    try {
      if (this.budget < 0) throw new Error('the node sent more data than the listed files can hold; the stream was stopped');
      this.reader!.push(b);
      if (this.overflow) throw this.overflow;
    } catch (e) {
      this.parseError = e;
      s.close();
    }
    this.flush(s);
  }

  /** What the last read brought goes to the writer; a writer behind (a slow disk) pauses the stream. */
  private flush(s: ExecStream): void {
    if (this.ops.length === 0) return;
    const buf = new Uint8Array(this.outLen);
    let p = 0;
    for (const c of this.out) {
      buf.set(c, p);
      p += c.length;
    }
    const ops = this.ops;
    this.out = [];
    this.outLen = 0;
    this.ops = [];
    this.bw.send(buf, ops);
    // Stop reading, so the SSH window holds the node back.
    if (this.bw.congested) {
      s.stdout.pause();
      void this.bw.whenDrained().then(() => s.stdout.resume());
    }
  }

  /** After the stream: every written file committed against the node's hash (a grown file against its prefix's). */
  private async settle(): Promise<void> {
    const h = await this.startHashes();
    this.commitReady();
    // A file that grew between the node's hashing and tar's read (a live log): compare the prefix we got. (Only with
    // tar: the node's reader hashes exactly what it sends, so commitReady committed its files at once.)
    const differing = this.differing;
    if (differing.length) {
      const pre = await prefixHashes(
        this.a.t,
        differing.map((f) => ({ path: f.item.remotePath, size: f.ended!.bytes })),
        this.a.signal,
      ).catch(() => new Map<string, string>());
      for (const f of differing) {
        const x = pre.get(f.item.remotePath);
        if (x) h.set(f.item.remotePath, x);
      }
      this.commit(differing, h);
    }
    await Promise.all(this.commits);
  }

  /** The file cut mid-way, a cancel, and every file asked for that never came: reported as failed. */
  private reportUnfinished(): void {
    const partial = this.cur;
    if (partial && !partial.ended) {
      this.bw.discard([partial.id]);
      const why = this.parseError
        ? `transfer stream broke mid-file: ${errorMessage(this.parseError)}`
        : 'transfer interrupted mid-file; run salvage again';
      this.a.onFile(failedTransfer(partial.item.remotePath, why));
    }
    if (this.a.signal?.aborted) throw new GpuSessionsError('cancelled', 'Cancelled.');
    for (const i of this.a.items)
      if (!this.seen.has(i.remotePath))
        this.a.onFile(failedTransfer(i.remotePath, missingReason(i.remotePath, this.stderr, this.parseError)));
  }
}
