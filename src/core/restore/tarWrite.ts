/**
 * A minimal tar writer for restore uploads: every entry carries a PAX `path` record, so any name (spaces,
 * quotes, newlines, a leading dash, non-ASCII, over 100 bytes) travels byte-exact and no shell ever reads it.
 * Regular files only; GNU tar on the node extracts it with `-P` (the names are the absolute temporary names).
 */

interface TarEntry {
  /** Absolute path on the node. */
  name: string;
  data: Buffer;
  /** Permission bits (0o755). */
  mode: number;
  /** Seconds since the epoch. */
  mtime: number;
}

function octal(n: number, width: number): string {
  return n.toString(8).padStart(width - 1, '0') + '\0';
}

function header(name: string, size: number, mode: number, mtime: number, type: string): Buffer {
  const h = Buffer.alloc(512, 0);
  h.write(name.slice(0, 99), 0, 'ascii');
  h.write(octal(mode & 0o7777, 8), 100, 'ascii');
  h.write(octal(0, 8), 108, 'ascii');
  h.write(octal(0, 8), 116, 'ascii');
  h.write(octal(size, 12), 124, 'ascii');
  h.write(octal(Math.max(0, Math.floor(mtime)), 12), 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write(type, 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return h;
}

/** `"<len> path=<name>\n"` where len counts the whole record (its own digits included). */
export function paxRecord(key: string, value: string): Buffer {
  const body = Buffer.from(` ${key}=${value}\n`, 'utf8');
  let len = body.length + 1;
  while (String(len).length + body.length !== len) len = String(len).length + body.length;
  return Buffer.concat([Buffer.from(String(len), 'ascii'), body]);
}

const pad = (n: number) => Buffer.alloc((512 - (n % 512)) % 512, 0);

export function writeTar(entries: readonly TarEntry[]): Buffer {
  const parts: Buffer[] = [];
  entries.forEach((e, i) => {
    const pax = paxRecord('path', e.name);
    parts.push(header(`PaxHeaders/${i}`, pax.length, 0o644, e.mtime, 'x'), pax, pad(pax.length));
    parts.push(header(`gs-restore-${i}`, e.data.length, e.mode, e.mtime, '0'), e.data, pad(e.data.length));
  });
  parts.push(Buffer.alloc(1024, 0));
  return Buffer.concat(parts);
}
