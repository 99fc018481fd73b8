/**
 * The stream of salvage's single-pass reader on the node (frames.py): each file read once, hashed while it is sent,
 * framed with its index in the list we sent, its mode, its size and the SHA-256 of exactly the bytes sent. The
 * reader hands entries, bytes and ends to a sink and buffers only record headers; the stream comes from the node, so
 * every record is checked (an index we did not send, bytes outside a file, more bytes than the file announced, an
 * unknown record) and a bad one throws FrameStreamError.
 */
import { RemoteOperation, StreamOperation, runOperation } from '../../remote/operation';
import type { Transport } from '../../ssh/transport';
import { shq } from '../../util/quote';
import { nodeScript } from '../../util/nodeScripts';

/** A stream the reader refuses (corrupt or hostile); the message says why. */
export class FrameStreamError extends Error {}

export interface FrameEntry {
  /** Index of the file in the list sent to the node. */
  index: number;
  mode: number;
  /** Bytes the node will send (the file's size when it was opened). */
  size: number;
}

interface FrameSink {
  /** A file starts. Return false to skip its bytes. */
  entry(e: FrameEntry): boolean;
  data(chunk: Buffer): void;
  /** The file ended: the node's SHA-256 of the bytes it sent, and how many it sent. */
  end(sha256: string, bytes: number): void;
  /** The file started could not be read to its end on the node. */
  aborted(reason: string): void;
  /** A file the node did not send, and why. */
  notSent(index: number, reason: string): void;
}

/** Header bytes of each record after its type byte (X and A: before their message). */
const HEAD: Record<string, number> = { F: 16, D: 4, E: 40, A: 2, X: 6, Z: 0 };

/** The node's reader over the list on stdin (NUL-separated names). */
export function frameStreamOperation(list: Buffer): StreamOperation {
  return { name: 'frames', command: `exec python3 -c ${shq(nodeScript('salvage/transfer/frames.py'))}`, stdin: list };
}

/** Can the node run the reader (python3 with hashlib)? Asked once per connection. */
const pythonOn = new WeakMap<Transport, Promise<boolean>>();

const pythonCheck: RemoteOperation<boolean> = {
  name: 'python3-check',
  command: 'python3 -c "import hashlib, struct; print(\'ok\')" 2>/dev/null || true',
  timeoutMs: 30_000,
  maxOutputBytes: 1024,
  parse: (r) => r.stdout.toString().trim() === 'ok',
};

export function nodeReadsFrames(t: Transport): Promise<boolean> {
  if (process.env.GS_SALVAGE_READER === 'tar') return Promise.resolve(false);
  let p = pythonOn.get(t);
  if (!p) {
    p = runOperation(t, pythonCheck).catch(() => false);
    pythonOn.set(t, p);
  }
  return p;
}

export class FrameReader {
  private buf: Buffer = Buffer.alloc(0);
  /** The current file: its announced size, the bytes seen, whether they are wanted. */
  private cur: { size: number; seen: number; want: boolean } | null = null;
  /** Bytes of a D record still to come. */
  private dataLeft = 0;
  private done = false;

  constructor(
    private readonly files: number,
    private readonly sink: FrameSink,
  ) {}

  /** The node said every file was handled (the Z record came). */
  get finished(): boolean {
    return this.done;
  }

  push(chunk: Buffer): void {
    const b = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    for (;;) {
      if (this.dataLeft > 0) {
        const n = Math.min(this.dataLeft, b.length - off);
        if (n === 0) break;
        if (this.cur!.want) this.sink.data(b.subarray(off, off + n));
        off += n;
        this.dataLeft -= n;
        continue;
      }
      if (off >= b.length) break;
      if (this.done) throw new FrameStreamError('the node sent bytes after the end of the stream');
      const type = String.fromCharCode(b[off]);
      const head = HEAD[type];
      if (head === undefined) throw new FrameStreamError(`unknown record ${JSON.stringify(type)} in the node's stream`);
      if (b.length - off < 1 + head) break;
      const h = off + 1;
      if (type === 'X' || type === 'A') {
        const len = b.readUInt16BE(h + head - 2);
        if (b.length - off < 1 + head + len) break;
        const msg = b.subarray(h + head, h + head + len).toString('utf8');
        off = h + head + len;
        if (type === 'A') {
          if (!this.cur) throw new FrameStreamError("an abort outside a file in the node's stream");
          const want = this.cur.want;
          this.cur = null;
          if (want) this.sink.aborted(msg);
        } else {
          if (this.cur) throw new FrameStreamError("a file was left open in the node's stream");
          this.sink.notSent(this.index(b.readUInt32BE(h)), msg);
        }
        continue;
      }
      off = h + head;
      if (type === 'F') {
        if (this.cur) throw new FrameStreamError("a file was left open in the node's stream");
        const index = this.index(b.readUInt32BE(h));
        const size = Number(b.readBigUInt64BE(h + 8));
        if (!Number.isSafeInteger(size)) throw new FrameStreamError(`the node announced a file of ${size} B`);
        const e = { index, mode: b.readUInt32BE(h + 4), size };
        this.cur = { size, seen: 0, want: false };
        this.cur.want = this.sink.entry(e);
      } else if (type === 'D') {
        const len = b.readUInt32BE(h);
        if (!this.cur) throw new FrameStreamError("bytes outside a file in the node's stream");
        if (this.cur.seen + len > this.cur.size)
          throw new FrameStreamError(`the node sent more than the ${this.cur.size} B it announced for a file`);
        this.cur.seen += len;
        this.dataLeft = len;
      } else if (type === 'E') {
        if (!this.cur) throw new FrameStreamError("a file end outside a file in the node's stream");
        const sent = Number(b.readBigUInt64BE(h + 32));
        if (sent !== this.cur.seen) throw new FrameStreamError(`the node said it sent ${sent} B for a file and sent ${this.cur.seen} B`);
        const want = this.cur.want;
        this.cur = null;
        if (want) this.sink.end(b.subarray(h, h + 32).toString('hex'), sent);
      } else {
        if (this.cur) throw new FrameStreamError("the node's stream ended inside a file");
        this.done = true;
      }
    }
    this.buf = off >= b.length ? Buffer.alloc(0) : Buffer.from(b.subarray(off));
  }

  private index(i: number): number {
    if (i >= this.files) throw new FrameStreamError(`the node sent file number ${i}; only ${this.files} were asked for`);
    return i;
  }
}
