/**
 * Mapping remote paths to local ones inside the salvage folder, safely: no `..`, no absolute
 * paths, no control characters in names, never a write outside the folder the user chose.
 * Local names are safe on every OS (the folder may be copied to Windows or macOS): the characters
 * Windows refuses or reads as syntax (`\ : * ? " < > |`), trailing dots and spaces and device names
 * (CON, NUL, COM1…) are %-encoded, and names that fold together (case, Unicode normalisation) are told
 * apart by LocalNames.
 */
import { lstatSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError } from '../util/errors';

const pct = (ch: string) => '%' + ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');
/** Windows device names, with or without an extension (`CON`, `nul.log`, `COM1.txt`, `lpt9`). */
const DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\.|$)/i;

/**
 * Encode one path component for the local file system on any OS: control characters, `%`, and
 * `\ : * ? " < > |` become %XX; a trailing dot or space and the first letter of a device name too.
 */
export function safeComponent(c: string): string {
  if (c === '.' || c === '..' || c === '') throw new GpuSessionsError('io', `Refusing the path component "${c}".`);
  let s = c.replace(/[%\u0000-\u001f\u007f\\:*?"<>|]/g, pct);
  s = s.replace(/[. ]+$/, (tail) => [...tail].map(pct).join(''));
  if (DEVICE.test(s.replace(/ +(?=\.|$)/, ''))) s = pct(s[0]) + s.slice(1);
  // Keep names within common file-system limits (255 bytes); mark the cut with a hash of the whole.
  if (Buffer.byteLength(s) > 240) {
    const { createHash } = require('node:crypto') as typeof import('node:crypto');
    const h = createHash('sha256').update(c).digest('hex').slice(0, 12);
    let cut = s;
    while (Buffer.byteLength(cut) > 220) cut = cut.slice(0, -1);
    s = `${cut}~${h}`;
  }
  return s;
}

/** `/root/logs/a.log` → `files/root/logs/a.log` (relative to the salvage folder). */
export function localRelPath(remotePath: string, area = 'files'): string {
  const parts = remotePath.split('/').filter((p) => p.length > 0);
  if (parts.length === 0) throw new GpuSessionsError('io', `Refusing the remote path "${remotePath}".`);
  for (const p of parts)
    if (p === '.' || p === '..') throw new GpuSessionsError('io', `Refusing the remote path "${remotePath}": it contains "${p}".`);
  return [area, ...parts.map(safeComponent)].join('/');
}

/** Absolute local path for a relative one, checked to stay inside `dest`. */
export function insideDest(dest: string, rel: string, p: typeof path = path): string {
  const root = p.resolve(dest);
  const abs = p.resolve(root, rel);
  if (abs !== root && !abs.startsWith(root + p.sep)) throw new GpuSessionsError('io', `Refusing to write outside ${root}: ${rel}`);
  return abs;
}

/** Folders this process created or checked (so thousands of files in one folder cost one check). */
const checkedDirs = new Set<string>();

export function forgetCheckedDirs(): void {
  checkedDirs.clear();
}

/** mkdir -p for the parent of `abs`, refusing to pass through a symlink below `dest`. */
export function ensureParent(dest: string, abs: string): void {
  const root = path.resolve(dest);
  if (checkedDirs.has(path.dirname(abs))) return;
  const rel = path.relative(root, path.dirname(abs));
  let cur = root;
  for (const part of rel.split(path.sep).filter(Boolean)) {
    cur = path.join(cur, part);
    try {
      const st = lstatSync(cur);
      if (st.isSymbolicLink()) throw new GpuSessionsError('io', `Refusing to write through the symlink ${cur}.`);
      if (!st.isDirectory()) throw new GpuSessionsError('io', `${cur} exists and is not a folder.`);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') mkdirSync(cur);
      else throw e;
    }
  }
  if (checkedDirs.size > 100_000) checkedDirs.clear();
  checkedDirs.add(path.dirname(abs));
}

/**
 * Local names already given in one plan, folded the way case-insensitive and normalising file systems
 * (Windows, macOS) compare them. A second remote file that would land on the same local file gets a
 * distinct name (`~` and a hash of its remote path before the extension) and a note saying why.
 */
export class LocalNames {
  private readonly taken = new Map<string, string>();

  static fold(rel: string): string {
    return rel.normalize('NFC').toLowerCase();
  }

  claim(rel: string, remotePath: string): { localPath: string; note: string | null } {
    const prev = this.taken.get(LocalNames.fold(rel));
    if (prev === undefined || prev === rel) {
      this.taken.set(LocalNames.fold(rel), rel);
      return { localPath: rel, note: null };
    }
    const { createHash } = require('node:crypto') as typeof import('node:crypto');
    const slash = rel.lastIndexOf('/');
    const dot = rel.lastIndexOf('.');
    const cut = dot > slash + 1 ? dot : rel.length;
    let n = 0;
    let alt = rel;
    for (;;) {
      const h = createHash('sha256').update(`${remotePath}\0${n++}`).digest('hex').slice(0, 8);
      alt = `${rel.slice(0, cut)}~${h}${rel.slice(cut)}`;
      if (!this.taken.has(LocalNames.fold(alt))) break;
    }
    this.taken.set(LocalNames.fold(alt), alt);
    return {
      localPath: alt,
      note: `saved as ${alt}: its name differs only in case or Unicode normalisation from ${prev}, the same file on Windows and macOS`,
    };
  }
}
