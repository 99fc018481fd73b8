/**
 * A minimal streaming reader for the tar streams GNU tar writes (`tar -cf -`): ustar headers with
 * prefix, GNU long names ('L'), pax extended headers ('x', path and size), base-256 sizes.
 * Used by salvage to receive thousands of small files over one SSH channel. It never writes
 * anything itself: entries are handed to the caller, who decides where (and whether) bytes go.
 *
 * The stream comes from the node, so it is bounded: a meta entry (long name, pax header) larger than
 * META_MAX_BYTES is refused before any of it is buffered, and sizes that are not finite non-negative
 * integers are refused; an entry's data is passed through, never buffered (the sink bounds it).
 */

/** Largest long-name or pax header accepted (GNU tar writes a few hundred bytes). */
export const META_MAX_BYTES = 1024 * 1024;

/** A stream the reader refuses (corrupt or hostile); the message says which entry and why. */
export class TarStreamError extends Error {}

export interface TarEntry {
  path: string;
  /** '0' regular file, '2' symlink, '5' directory, ... */
  type: string;
  size: number;
  mtime: number;
  linkName: string;
}

interface TarSink {
  /** A new entry starts. Return false to skip its data. */
  entry(e: TarEntry): boolean;
  data(chunk: Buffer): void;
  /** The entry's data ended. */
  end(): void;
}

function cstr(b: Buffer, start: number, len: number): Buffer {
  const sub = b.subarray(start, start + len);
  const z = sub.indexOf(0);
  return z >= 0 ? sub.subarray(0, z) : sub;
}

function octal(b: Buffer, start: number, len: number): number {
  // Base-256 (GNU) for values that do not fit in octal.
  if (b[start] & 0x80) {
    let v = 0;
    for (let i = start + 1; i < start + len; i++) v = v * 256 + b[i];
    return v;
  }
  const s = cstr(b, start, len).toString('latin1').trim();
  return s ? parseInt(s, 8) : 0;
}

function checksumOk(h: Buffer): boolean {
  const stored = octal(h, 148, 8);
  let sum = 0;
  for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : h[i];
  return sum === stored;
}

function parsePax(buf: Buffer): Record<string, Buffer> {
  const out: Record<string, Buffer> = {};
  let i = 0;
  while (i < buf.length) {
    const sp = buf.indexOf(0x20, i);
    if (sp < 0) break;
    const len = parseInt(buf.subarray(i, sp).toString('latin1'), 10);
    if (!(len > 0)) break;
    const rec = buf.subarray(sp + 1, i + len - 1); // without trailing \n
    const eq = rec.indexOf(0x3d);
    if (eq > 0) out[rec.subarray(0, eq).toString('utf8')] = rec.subarray(eq + 1);
    i += len;
  }
  return out;
}

/**
 * Push-based tar parser. Paths are returned as JS strings decoded as UTF-8; `rawPath` bytes are also
 * kept (latin1 string) so callers can match names that are not valid UTF-8.
 */
export class TarReader {
  private buf: Buffer = Buffer.alloc(0);
  private state: 'header' | 'data' | 'pad' | 'meta' | 'done' = 'header';
  private remaining = 0;
  private pad = 0;
  private metaType = '';
  private meta: Buffer[] = [];
  private longName: Buffer | null = null;
  private pax: Record<string, Buffer> = {};
  private current: { skip: boolean } | null = null;
  private zeroBlocks = 0;
  /** Raw path bytes of the current entry. */
  currentRawPath: Buffer = Buffer.alloc(0);

  constructor(private readonly sink: TarSink) {}

  get finished(): boolean {
    return this.state === 'done';
  }

  push(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    for (;;) {
      if (this.state === 'done') {
        this.buf = Buffer.alloc(0);
        return;
      }
      if (this.state === 'header') {
        if (this.buf.length - off < 512) break;
        const h = this.buf.subarray(off, off + 512);
        off += 512;
        if (h.every((x) => x === 0)) {
          if (++this.zeroBlocks >= 2) this.state = 'done';
          continue;
        }
        this.zeroBlocks = 0;
        if (!checksumOk(h)) throw new TarStreamError('tar stream corrupted (bad header checksum)');
        const type = String.fromCharCode(h[156] || 0x30);
        let size = octal(h, 124, 12);
        const magic = cstr(h, 257, 6).toString('latin1');
        let name = cstr(h, 0, 100);
        if (magic.startsWith('ustar')) {
          const prefix = cstr(h, 345, 155);
          if (prefix.length) name = Buffer.concat([prefix, Buffer.from('/'), name]);
        }
        if (!Number.isSafeInteger(size) || size < 0) throw new TarStreamError(`tar stream corrupted (entry size ${size})`);
        if (type === 'L' || type === 'x' || type === 'g' || type === 'K') {
          if (size > META_MAX_BYTES)
            throw new TarStreamError(
              `tar stream refused: a '${type}' header entry of ${size} B exceeds the ${META_MAX_BYTES} B limit for names and pax headers`,
            );
          this.metaType = type;
          this.meta = [];
          this.remaining = size;
          this.pad = (512 - (size % 512)) % 512;
          this.state = 'meta';
          continue;
        }
        if (this.longName) name = this.longName;
        if (this.pax.path) name = this.pax.path;
        if (this.pax.size) {
          const ps = this.pax.size.toString('latin1').trim();
          size = /^\d{1,16}$/.test(ps) ? Number(ps) : NaN;
          if (!Number.isSafeInteger(size)) throw new TarStreamError(`tar stream corrupted (pax size ${JSON.stringify(ps.slice(0, 40))})`);
        }
        const mtime = this.pax.mtime ? Number(this.pax.mtime.toString('latin1')) : octal(h, 136, 12);
        const linkName = this.pax.linkpath ? this.pax.linkpath.toString('utf8') : cstr(h, 157, 100).toString('utf8');
        this.longName = null;
        this.pax = {};
        this.currentRawPath = Buffer.from(name);
        const e: TarEntry = { path: name.toString('utf8'), type, size, mtime, linkName };
        const hasData = type === '0' || type === '\0' || type === '7';
        const dataSize = hasData ? size : 0;
        const want = this.sink.entry(e);
        this.current = { skip: !want };
        this.remaining = dataSize;
        this.pad = (512 - (dataSize % 512)) % 512;
        if (dataSize === 0) {
          if (want) this.sink.end();
          this.current = null;
          this.state = this.pad ? 'pad' : 'header';
        } else this.state = 'data';
        continue;
      }
      if (this.state === 'meta') {
        const n = Math.min(this.remaining, this.buf.length - off);
        if (n > 0) {
          this.meta.push(Buffer.from(this.buf.subarray(off, off + n)));
          off += n;
          this.remaining -= n;
        }
        if (this.remaining > 0) break;
        const m = Buffer.concat(this.meta);
        if (this.metaType === 'L') this.longName = cstr(m, 0, m.length);
        else if (this.metaType === 'x') this.pax = parsePax(m);
        this.state = this.pad ? 'pad' : 'header';
        continue;
      }
      if (this.state === 'data') {
        const n = Math.min(this.remaining, this.buf.length - off);
        if (n > 0) {
          if (!this.current?.skip) this.sink.data(this.buf.subarray(off, off + n));
          off += n;
          this.remaining -= n;
        }
        if (this.remaining > 0) break;
        if (!this.current?.skip) this.sink.end();
        this.current = null;
        this.state = this.pad ? 'pad' : 'header';
        continue;
      }
      if (this.state === 'pad') {
        const n = Math.min(this.pad, this.buf.length - off);
        off += n;
        this.pad -= n;
        if (this.pad > 0) break;
        this.state = 'header';
        continue;
      }
    }
    this.buf = off >= this.buf.length ? Buffer.alloc(0) : Buffer.from(this.buf.subarray(off));
  }
}
