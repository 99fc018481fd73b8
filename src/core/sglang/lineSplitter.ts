/**
 * Bounded streaming line splitter for SGLang logs (byte-limited lines, truncation marker).
 */
import { StringDecoder } from 'node:string_decoder';

// ---------------------------------------------------------------------------------------------------------
// Streaming line splitter

interface LineSplitterOptions {
  /** Longest line kept, in UTF-8 bytes. Default 1 MiB. A longer line keeps its first maxLineBytes (cut on a
   *  character boundary) and gets TRUNCATED_MARKER + "<n> more bytes]" appended. */
  maxLineBytes?: number;
}

/** Appended (followed by "<n> more bytes]") to a line that exceeded maxLineBytes. */
const TRUNCATED_MARKER = ' …[truncated ';

export function isTruncatedLine(line: string): boolean {
  const i = line.lastIndexOf(TRUNCATED_MARKER);
  return i >= 0 && line.endsWith(' more bytes]');
}

/**
 * Splits a byte/text stream on "\n" (a trailing "\r" is removed, so "\r\n" works too). Memory is bounded:
 * a runaway line never buffers more than maxLineBytes; the rest of it is counted and dropped.
 * Buffer chunks are decoded with a streaming UTF-8 decoder (a character split across chunks is reassembled);
 * each chunk is decoded once and split with indexOf, so short lines cost one slice each.
 */
export class LineSplitter {
  readonly maxLineBytes: number;
  /** number of lines truncated so far */
  truncatedLines = 0;
  private readonly decoder = new StringDecoder('utf8');
  private parts: string[] = [];
  private pendingBytes = 0;
  /** bytes dropped from the current line (>0 means the current line is being truncated) */
  private dropped = 0;

  constructor(opts: LineSplitterOptions = {}) {
    const m = opts.maxLineBytes;
    this.maxLineBytes = typeof m === 'number' && Number.isFinite(m) && m >= 1 ? Math.floor(m) : 1024 * 1024;
  }

  push(chunk: Buffer | string): string[] {
    const out: string[] = [];
    let text: string;
    if (typeof chunk === 'string') {
      // a string after a Buffer that ended mid-character: emit what the decoder holds first
      const held = this.decoder.end();
      text = held ? held + chunk : chunk;
    } else if (chunk && chunk.length) {
      text = this.decoder.write(chunk);
    } else {
      return out;
    }
    this.pushText(text, out);
    return out;
  }

  flush(): string[] {
    const out: string[] = [];
    const rest = this.decoder.end();
    if (rest) this.pushText(rest, out);
    if (this.parts.length === 0 && this.dropped === 0) return out;
    const truncated = this.dropped > 0;
    const line = this.finishPending();
    if (line.length > 0 || truncated) out.push(line);
    return out;
  }

  // -- internals ------------------------------------------------------------------------------------------

  private pushText(t: string, out: string[]): void {
    let pos = 0;
    const n = t.length;
    while (pos < n) {
      const nl = t.indexOf('\n', pos);
      if (nl < 0) {
        this.appendPartial(t, pos, n);
        return;
      }
      if (this.parts.length === 0 && this.dropped === 0) out.push(this.finishLine(t.slice(pos, nl)));
      else {
        this.appendPartial(t, pos, nl);
        out.push(this.finishPending());
      }
      pos = nl + 1;
    }
  }

  /** A complete line that was not buffered: strip "\r", enforce the limit. */
  private finishLine(line: string): string {
    let l = line;
    if (l.length > 0 && l.charCodeAt(l.length - 1) === 13) l = l.slice(0, -1);
    const max = this.maxLineBytes;
    if (l.length * 3 <= max) return l; // a UTF-16 unit is at most 3 UTF-8 bytes: surely short enough
    const bytes = Buffer.byteLength(l, 'utf8');
    if (bytes <= max) return l;
    const keep = prefixWithinBytes(l, max);
    this.truncatedLines++;
    return keep + TRUNCATED_MARKER + (bytes - Buffer.byteLength(keep, 'utf8')) + ' more bytes]';
  }

  private appendPartial(t: string, a: number, b: number): void {
    if (b <= a) return;
    const piece = t.slice(a, b);
    const bytes = Buffer.byteLength(piece, 'utf8');
    if (this.dropped > 0) {
      this.dropped += bytes;
      return;
    }
    const room = this.maxLineBytes - this.pendingBytes;
    if (bytes <= room) {
      this.parts.push(piece);
      this.pendingBytes += bytes;
      return;
    }
    const keep = room > 0 ? prefixWithinBytes(piece, room) : '';
    if (keep) this.parts.push(keep);
    const kept = keep ? Buffer.byteLength(keep, 'utf8') : 0;
    this.pendingBytes = this.maxLineBytes; // the line is full now
    this.dropped += bytes - kept;
  }

  private finishPending(): string {
    let line = this.parts.length === 1 ? this.parts[0] : this.parts.join('');
    this.parts = [];
    this.pendingBytes = 0;
    if (this.dropped > 0) {
      const d = this.dropped;
      this.dropped = 0;
      this.truncatedLines++;
      return line + TRUNCATED_MARKER + d + ' more bytes]';
    }
    if (line.length > 0 && line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
    return line;
  }
}

/** The longest prefix of str whose UTF-8 encoding fits in maxBytes, cut on a character boundary. */
function prefixWithinBytes(str: string, maxBytes: number): string {
  // maxBytes UTF-16 units encode to >= maxBytes bytes, so the answer lies within this slice
  const head = str.length > maxBytes ? str.slice(0, maxBytes) : str;
  const buf = Buffer.from(head, 'utf8');
  if (buf.length <= maxBytes) return head;
  let cut = maxBytes;
  while (cut > 0 && (buf[cut] & 0xc0) === 0x80) cut--; // do not split a UTF-8 sequence
  return buf.subarray(0, cut).toString('utf8');
}
