/**
 * Mapping remote paths to local ones inside the salvage folder, safely: no `..`, no absolute
 * paths, never a write outside the folder the user chose.
 * Local names are the node's names, byte-exact, on Linux and macOS; encoded only on Windows (./localNames).
 */
import { lstatSync, mkdirSync } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError } from '../../util/errors';
import { LocalNames, NameStyle, hostNameStyle, localRelPathFor, windowsComponent } from './localNames';

/** The Windows encoding of one component (every OS used it before names became exact on Linux and macOS). */
export const safeComponent = windowsComponent;

/** `/root/logs/a.log` → `files/root/logs/a.log` (relative to the salvage folder); exact names except on Windows. */
export function localRelPath(remotePath: string, area = 'files', style: NameStyle = hostNameStyle()): string {
  return localRelPathFor(remotePath, area, style);
}

/** Is `p` the folder `dir` or under it (remote paths, `/`-separated)? */
export function isUnder(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith('/') ? dir : dir + '/');
}

/** An absolute folder path, not `/`, that path.resolve leaves as it is. */
const CLEAN_ROOT = /^(?:\/(?!\.\.?(?:\/|$))[^/]+)+$/;
/** A relative path that path.resolve would change or that could leave its folder (or empty). */
const UNCLEAN_REL = /^$|^\/|\/\/|\/$|(?:^|\/)\.\.?(?:\/|$)/;

/** Absolute local path for a relative one, checked to stay inside `dest`. */
export function insideDest(dest: string, rel: string, p: typeof path = path): string {
  // The writer calls this twice per file (thousands a second): a plain relative name under an absolute,
  // normalised folder joins by string; anything else (`.`, `..`, `//`, absolute, a trailing `/`) resolves.
  if (p.sep === '/' && CLEAN_ROOT.test(dest) && !UNCLEAN_REL.test(rel)) return `${dest}/${rel}`;
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
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      makeDir(cur);
    }
  }
  if (checkedDirs.size > 100_000) checkedDirs.clear();
  checkedDirs.add(path.dirname(abs));
}

/** mkdir of one folder; another writer thread that made it first is fine, unless what it made is not a folder. */
function makeDir(dir: string): void {
  try {
    mkdirSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    const st = lstatSync(dir);
    if (st.isSymbolicLink()) throw new GpuSessionsError('io', `Refusing to write through the symlink ${dir}.`);
    if (!st.isDirectory()) throw new GpuSessionsError('io', `${dir} exists and is not a folder.`);
  }
}

export { LocalNames };
