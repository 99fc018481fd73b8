/**
 * The local name of each remote file in the salvage folder.
 *
 * On Linux and macOS a name may hold any byte but `/` and NUL, so the local name is the node's name,
 * byte-exact: `weird/*`, `double"quote.txt`, `a:b`, a newline, all stay as they are, and the salvage folder is a
 * mirror a user can copy back. Only on Windows are the characters it refuses or reads as syntax
 * (`\ : * ? " < > |`, control characters), trailing dots and spaces, device names (CON, NUL, COM1…) and names
 * that look like 8.3 short names (`PROGRA~1`) %-encoded; the manifest's `localPath` records the result.
 *
 * Two remote files that the local file system would take for one (case, Unicode normalisation, full case
 * folding such as `ſ`/`s` and `ς`/`σ`) are told apart only where the file system folds: Windows and macOS.
 */
import { createHash } from 'node:crypto';
import { GpuSessionsError } from '../../util/errors';

/** How the local file system treats names: `posix` (Linux: exact bytes), `darwin` (folds case and normalisation), `win32`. */
export type NameStyle = 'posix' | 'darwin' | 'win32';

export function hostNameStyle(platform: string = process.platform): NameStyle {
  return platform === 'win32' ? 'win32' : platform === 'darwin' ? 'darwin' : 'posix';
}

export const pct = (ch: string) => '%' + ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0');
/** Windows device names, with or without an extension (`CON`, `nul.log`, `COM1.txt`, `lpt9`). */
export const DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)(\.|$)/i;
/** A name Windows may have given another file as its 8.3 alias (`PROGRA~1`, `LONGFI~12.TXT`). */
const SHORT_NAME = /^[^.~]{1,7}~[0-9]{1,6}(\.[^.]{0,3})?$/;

function refuse(c: string): never {
  throw new GpuSessionsError('io', `Refusing the path component "${c}".`);
}

/** Keep a name within common file-system limits (255 bytes); mark the cut with a hash of the whole. */
export function bounded(s: string, original: string): string {
  if (Buffer.byteLength(s) <= 240) return s;
  const h = createHash('sha256').update(original).digest('hex').slice(0, 12);
  let cut = s;
  while (Buffer.byteLength(cut) > 220) cut = cut.slice(0, -1);
  return `${cut}~${h}`;
}

/**
 * Encode one path component for Windows: control characters, `%`, and `\ : * ? " < > |` become %XX; a trailing
 * dot or space, the first letter of a device name and the `~` of an 8.3-looking name too.
 */
export function windowsComponent(c: string): string {
  if (c === '.' || c === '..' || c === '') refuse(c);
  let s = c.replace(/[%\u0000-\u001f\u007f\\:*?"<>|]/g, pct);
  s = s.replace(/[. ]+$/, (tail) => [...tail].map(pct).join(''));
  if (DEVICE.test(s.replace(/ +(?=\.|$)/, ''))) s = pct(s[0]) + s.slice(1);
  if (SHORT_NAME.test(s)) s = s.replace('~', '%7E');
  return bounded(s, c);
}

/** One path component on the local file system of `style`: exact on Linux and macOS, encoded on Windows. */
export function localComponent(c: string, style: NameStyle = hostNameStyle()): string {
  if (style === 'win32') return windowsComponent(c);
  if (c === '.' || c === '..' || c === '' || c.includes('\0') || c.includes('/')) refuse(c);
  return Buffer.byteLength(c) > 255 ? bounded(c, c) : c;
}

/** `/root/logs/a.log` → `files/root/logs/a.log` (relative to the salvage folder, `/`-separated). */
export function localRelPathFor(remotePath: string, area = 'files', style: NameStyle = hostNameStyle()): string {
  const parts = remotePath.split('/').filter((p) => p.length > 0);
  if (parts.length === 0) throw new GpuSessionsError('io', `Refusing the remote path "${remotePath}".`);
  for (const p of parts)
    if (p === '.' || p === '..') throw new GpuSessionsError('io', `Refusing the remote path "${remotePath}": it contains "${p}".`);
  return [area, ...parts.map((p) => localComponent(p, style))].join('/');
}

/** A local path an earlier run recorded: used again only when it is a plain relative path inside `area`. */
export function usableRecordedPath(rel: unknown, area: string): rel is string {
  if (typeof rel !== 'string' || !rel.startsWith(area + '/') || rel.includes('\\') || rel.includes('\0')) return false;
  return rel.split('/').every((p) => p !== '' && p !== '.' && p !== '..');
}

/** Full case folding (`ß`→`ss`, `ſ`→`s`, `ς`→`σ`, `K` (Kelvin)→`k`) after upper-casing, as NTFS and APFS compare. */
function caseFold(s: string): string {
  return s.toUpperCase().toLowerCase();
}

/** What a name compares as on a file system of `style`; null where names are exact (Linux). */
export function foldName(rel: string, style: NameStyle): string | null {
  if (style === 'posix') return null;
  if (style === 'darwin') return caseFold(rel.normalize('NFD')).normalize('NFD');
  return caseFold(rel.normalize('NFC')).normalize('NFC');
}

/**
 * Local names already given in one plan, folded the way the local file system compares them. A second remote
 * file that would land on the same local file gets a distinct name (`~` and a hash of its remote path before
 * the extension) and a note saying why. On Linux every distinct name is its own file and nothing is renamed.
 */
/** Names as one destination folder takes them, found by probing it (./destNames): its local path for a remote one, and
 * what a local path compares as there (null where names are exact). */
export interface NamePolicy {
  relPath(remotePath: string, area: string): string;
  fold(rel: string): string | null;
  /** Says why two names meet, for the note on a renamed twin: "this destination folds case". */
  why: string;
}

export class LocalNames {
  private readonly taken = new Map<string, string>();
  private policy: NamePolicy | null = null;

  constructor(readonly style: NameStyle = hostNameStyle()) {}

  /** Use the probed rules of the destination from now on (before the first claim: names already given keep their keys). */
  usePolicy(p: NamePolicy): void {
    if (this.taken.size) throw new GpuSessionsError('io', 'The destination name rules must be set before the first local name is given.');
    this.policy = p;
  }

  /** Does this destination take two different names for one file (case, normalisation)? */
  get folds(): boolean {
    return (this.policy ? this.policy.fold('Aa') : foldName('Aa', this.style)) !== null;
  }

  get probed(): boolean {
    return this.policy !== null;
  }

  /** The local path of a remote one on this destination: the probed rules where known, else the host's style. */
  relPath(remotePath: string, area: string): string {
    return this.policy ? this.policy.relPath(remotePath, area) : localRelPathFor(remotePath, area, this.style);
  }

  /** Fold for every file system that folds (kept for callers that compare without a style). */
  static fold(rel: string): string {
    return caseFold(rel.normalize('NFC')).normalize('NFC');
  }

  private key(rel: string): string {
    return (this.policy ? this.policy.fold(rel) : foldName(rel, this.style)) ?? rel;
  }

  claim(rel: string, remotePath: string): { localPath: string; note: string | null } {
    const prev = this.taken.get(this.key(rel));
    if (prev === undefined || prev === rel) {
      this.taken.set(this.key(rel), rel);
      return { localPath: rel, note: null };
    }
    const slash = rel.lastIndexOf('/');
    const dot = rel.lastIndexOf('.');
    const cut = dot > slash + 1 ? dot : rel.length;
    let n = 0;
    let alt = rel;
    for (;;) {
      const h = createHash('sha256').update(`${remotePath}\0${n++}`).digest('hex').slice(0, 8);
      alt = `${rel.slice(0, cut)}~${h}${rel.slice(cut)}`;
      if (!this.taken.has(this.key(alt))) break;
    }
    this.taken.set(this.key(alt), alt);
    const fs = this.policy ? this.policy.why : this.style === 'win32' ? 'the same file on Windows' : 'the same file on macOS';
    return {
      localPath: alt,
      note: `saved as ${alt}: its name differs only in case or Unicode normalisation from ${prev}, ${fs}`,
    };
  }
}
