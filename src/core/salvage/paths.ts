/**
 * Mapping remote paths to local ones inside the salvage folder, safely: no `..`, no absolute
 * paths, no control characters in names, never a write outside the folder the user chose.
 */
import { lstatSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError } from '../util/errors';

/** Encode one path component for the local file system: control characters and `%` become %XX. */
export function safeComponent(c: string): string {
  let s = c.replace(/[%\u0000-\u001f\u007f]/g, (ch) => '%' + ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0'));
  if (s === '.' || s === '..' || s === '') throw new GpuSessionsError('io', `Refusing the path component "${c}".`);
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
export function insideDest(dest: string, rel: string): string {
  const root = path.resolve(dest);
  const abs = path.resolve(root, rel);
  if (abs !== root && !abs.startsWith(root + path.sep)) throw new GpuSessionsError('io', `Refusing to write outside ${root}: ${rel}`);
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
