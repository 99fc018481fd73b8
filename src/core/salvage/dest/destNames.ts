/**
 * What the destination folder accepts as names, found by trying, not guessed from the platform:
 * a Mac's APFS folds case, exFAT drives and SMB/NTFS shares on Linux refuse `:` `?` `*`, a FAT image under FUSE
 * does both. One probe per run creates and looks up test names in a scratch folder inside the run folder and
 * removes it; names stay byte-exact where the destination accepts them and only refused ones are %-encoded
 * (the Windows encoding of ./localNames, applied to exactly what was refused).
 */
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError } from '../../util/errors';
import { DEVICE, NamePolicy, bounded, pct } from './localNames';

/** The characters Windows, exFAT and SMB refuse in a name; each is probed on its own. */
const PROBED_CHARS = [':', '*', '?', '"', '<', '>', '|', '\\'] as const;

export interface DestNameRules {
  /** `A` and `a` name one file. */
  foldsCase: boolean;
  /** NFC and NFD spellings of `é` name one file. */
  normalises: boolean;
  /** Characters of PROBED_CHARS a name may not hold. */
  refusedChars: string[];
  /** A trailing dot or space is refused or dropped. */
  refusesTrailingDotSpace: boolean;
  /** Device names (`CON`, `NUL.txt`) are refused or reach a device. */
  refusesReserved: boolean;
  /** Control characters (tab, newline, …) are refused (FAT, exFAT, NTFS). */
  refusesControl?: boolean;
  /** Any character beyond ASCII is refused (a FAT image under FUSE refuses `é`). */
  refusesNonAscii?: boolean;
}

/** A destination that takes every name as it is (Linux ext4, xfs, btrfs). */
export const EXACT_NAMES: DestNameRules = {
  foldsCase: false,
  normalises: false,
  refusedChars: [],
  refusesTrailingDotSpace: false,
  refusesReserved: false,
  refusesControl: false,
  refusesNonAscii: false,
};

/** Errors that mean "this one name is refused", not "the folder cannot be written". */
const NAME_REFUSED = new Set(['EINVAL', 'ENOENT', 'EILSEQ', 'ENAMETOOLONG', 'EPERM', 'EACCES', 'EEXIST']);

/** Create `name` in `dir` and read it back under the same name: true only if exactly that entry holds the mark. */
async function accepts(dir: string, name: string): Promise<boolean> {
  const mark = randomBytes(8).toString('hex');
  try {
    await fsp.writeFile(path.join(dir, name), mark, { flag: 'wx' });
    const listed = await fsp.readdir(dir);
    if (!listed.includes(name)) return false; // stored under another spelling (a dropped dot, a folded case)
    return (await fsp.readFile(path.join(dir, name), 'utf8')) === mark;
  } catch (e) {
    if (NAME_REFUSED.has((e as NodeJS.ErrnoException).code ?? '')) return false;
    throw e;
  } finally {
    for (const n of await fsp.readdir(dir).catch(() => [])) await fsp.rm(path.join(dir, n), { force: true }).catch(() => undefined);
  }
}

/** Does a file made as `a` answer to the lookup `b` (the destination takes them for one name)? */
async function sameFile(dir: string, a: string, b: string): Promise<boolean> {
  try {
    await fsp.writeFile(path.join(dir, a), 'x', { flag: 'wx' });
    await fsp.stat(path.join(dir, b));
    return true;
  } catch {
    return false;
  } finally {
    for (const n of await fsp.readdir(dir).catch(() => [])) await fsp.rm(path.join(dir, n), { force: true }).catch(() => undefined);
  }
}

/**
 * Probe the name rules of `runDir` (which must exist). A scratch folder that cannot be made is a real
 * permission problem and throws a clear "not writable" error; a single refused test name only marks that rule.
 */
export async function probeDestNames(runDir: string): Promise<DestNameRules> {
  const scratch = path.join(runDir, `.names-probe-${randomBytes(4).toString('hex')}`);
  try {
    await fsp.mkdir(scratch);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? 'error';
    throw new GpuSessionsError('io', `Destination not writable (${code}): ${runDir}: choose a folder you can write to.`);
  }
  try {
    const refusedChars: string[] = [];
    for (const ch of PROBED_CHARS) if (!(await accepts(scratch, `p${ch}q.t`))) refusedChars.push(ch);
    const trailing = !(await accepts(scratch, 'dot.')) || !(await accepts(scratch, 'space '));
    const reserved = !(await accepts(scratch, 'CON')) || !(await accepts(scratch, 'nul.txt'));
    const control = !(await accepts(scratch, 'p\u0001q.t')) || !(await accepts(scratch, 'p\tq.t'));
    const nonAscii = !(await accepts(scratch, 'n\u00e9.t')) || !(await accepts(scratch, 'n\u4e2d.t'));
    return {
      foldsCase: await sameFile(scratch, 'CaseProbe.t', 'caseprobe.t'),
      normalises: !nonAscii && (await sameFile(scratch, 'n\u00e9.t', 'ne\u0301.t')),
      refusedChars,
      refusesTrailingDotSpace: trailing,
      refusesReserved: reserved,
      refusesControl: control,
      refusesNonAscii: nonAscii,
    };
  } finally {
    await fsp.rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** Does this destination refuse anything (so `%`, the escape, must be encoded too, or `a%3Ab` and `a:b` meet)? */
function exactNames(rules: DestNameRules): boolean {
  return !(
    rules.refusedChars.length > 0 ||
    rules.refusesTrailingDotSpace ||
    rules.refusesReserved ||
    rules.refusesControl ||
    rules.refusesNonAscii
  );
}

/** Is this one character refused on this destination (or the escape `%`, once anything is encoded)? */
function refusedChar(ch: string, rules: DestNameRules): boolean {
  if (ch === '%' || rules.refusedChars.includes(ch)) return true;
  const code = ch.codePointAt(0) ?? 0;
  if (rules.refusesControl && (code < 0x20 || code === 0x7f)) return true;
  return !!rules.refusesNonAscii && code > 0x7f;
}

/** %XX for each UTF-8 byte of `ch` (one byte for ASCII: the Windows encoding's own `%3A`). */
const pctUtf8 = (ch: string) =>
  ch.length === 1 && ch.charCodeAt(0) < 0x80
    ? pct(ch)
    : [...Buffer.from(ch, 'utf8')].map((b) => '%' + b.toString(16).toUpperCase().padStart(2, '0')).join('');

/** Does `c` need encoding on this destination (does it hold anything refused there, or the escape `%`)? */
export function refusedBy(c: string, rules: DestNameRules): boolean {
  if (exactNames(rules)) return false;
  if ([...c].some((ch) => refusedChar(ch, rules))) return true;
  if (rules.refusesTrailingDotSpace && /[. ]$/.test(c)) return true;
  return rules.refusesReserved && DEVICE.test(c.replace(/ +(?=\.|$)/, ''));
}

/**
 * One component on this destination: byte-exact unless it holds something the destination refused; then the
 * refused parts (and `%`, so encoded names never meet real ones) are %-encoded, the rest kept.
 */
export function destComponent(c: string, rules: DestNameRules): string {
  if (c === '.' || c === '..' || c === '' || c.includes('/') || c.includes('\0'))
    throw new GpuSessionsError('io', `Refusing the path component "${c}".`);
  if (!refusedBy(c, rules)) return Buffer.byteLength(c) > 255 ? bounded(c, c) : c;
  let s = [...c].map((ch) => (refusedChar(ch, rules) ? pctUtf8(ch) : ch)).join('');
  if (rules.refusesTrailingDotSpace) s = s.replace(/[. ]+$/, (tail) => [...tail].map(pct).join(''));
  if (rules.refusesReserved && DEVICE.test(s.replace(/ +(?=\.|$)/, ''))) s = pct(s[0]) + s.slice(1);
  return bounded(s, c);
}

/** `/root/logs/a:b.log` → `files/root/logs/a%3Ab.log` on a destination that refuses `:`; exact where accepted. */
export function destRelPath(remotePath: string, area: string, rules: DestNameRules): string {
  const parts = remotePath.split('/').filter((p) => p.length > 0);
  if (parts.length === 0) throw new GpuSessionsError('io', `Refusing the remote path "${remotePath}".`);
  return [area, ...parts.map((p) => destComponent(p, rules))].join('/');
}

/** One line for the log: what this destination refuses or folds, or null where every name is kept exactly. */
export function describeDestRules(rules: DestNameRules): string | null {
  const what: string[] = [];
  if (rules.foldsCase) what.push('folds case');
  if (rules.normalises) what.push('folds Unicode normalisation');
  if (rules.refusedChars.length) what.push(`refuses ${rules.refusedChars.join(' ')}`);
  if (rules.refusesControl) what.push('refuses control characters');
  if (rules.refusesNonAscii) what.push('refuses characters beyond ASCII');
  if (rules.refusesTrailingDotSpace) what.push('refuses trailing dots and spaces');
  if (rules.refusesReserved) what.push('refuses device names (CON, NUL, …)');
  return what.length ? what.join(', ') : null;
}

/** What a local relative path compares as on this destination; null where names are exact. */
export function destFold(rel: string, rules: DestNameRules): string | null {
  if (!rules.foldsCase && !rules.normalises) return null;
  const n = rules.normalises ? rel.normalize('NFC') : rel;
  return rules.foldsCase ? n.toUpperCase().toLowerCase() : n;
}

/** The name policy of a probed destination, for LocalNames. */
export function destPolicy(rules: DestNameRules): NamePolicy {
  // Each folder's local form, once: the files of a folder share it (a 30,000-file plan gave ~100 ms to re-encoding it).
  const folders = new Map<string, string>();
  return {
    relPath: (remotePath, area) => {
      const cut = remotePath.lastIndexOf('/');
      const base = remotePath.slice(cut + 1);
      if (cut < 0 || !base) return destRelPath(remotePath, area, rules);
      const key = `${area}\0${remotePath.slice(0, cut)}`;
      let folder = folders.get(key);
      if (folder === undefined) {
        const parts = remotePath
          .slice(0, cut)
          .split('/')
          .filter((p) => p.length > 0);
        folder = [area, ...parts.map((p) => destComponent(p, rules))].join('/');
        folders.set(key, folder);
      }
      return `${folder}/${destComponent(base, rules)}`;
    },
    fold: (rel) => destFold(rel, rules),
    why: 'the same file on this destination (it folds case or Unicode normalisation)',
  };
}
