/**
 * Bounded history of a node's samples and transitions: a JSON-lines file per node (at most `maxBytes`,
 * entries older than `maxAgeMs` dropped when it is compacted) and at most `maxEntries` (and `maxBytes`) kept in
 * memory (none for `watch`, which only appends).
 * Used by `gpu-sessions watch` (under the user's cache folder, read back by `gpu-sessions history`) and by
 * the extension (in its global storage, surviving a window reload). Writes only inside `dir`.
 * Nothing here imports vscode.
 */
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { z } from 'zod';

interface HistoryOptions {
  /** Default 8 MiB. */
  maxBytes?: number;
  /** Default 24 h. */
  maxAgeMs?: number;
  /** Entries kept in memory (also never more than maxBytes of them as JSON). Default 20,000; 0: none (a writer that
   *  never reads them back, such as `watch`). */
  maxEntries?: number;
  now?: () => number;
  /** Called once when the history is not kept on disk for a reason the user can fix (folder unsafe, symlink). */
  onProblem?: (message: string) => void;
}

export interface HistoryEntry {
  type: string;
  time: string;
  [k: string]: unknown;
}

/** The CLI's history folder: $GPU_SESSIONS_CACHE_DIR, else $XDG_CACHE_HOME/gpu-sessions, else ~/.cache/gpu-sessions; + /history. */
export function defaultHistoryDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.GPU_SESSIONS_CACHE_DIR || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'gpu-sessions');
  return path.join(base, 'history');
}

/** A file name for a node name we did not write: safe characters, plus a hash so that names never collide. */
export function historyFileName(node: string): string {
  const safe = node.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 80);
  return `${safe}-${createHash('sha256').update(node).digest('hex').slice(0, 8)}.jsonl`;
}

// O_NOFOLLOW: a symlink at the file's path is an error (ELOOP), never followed. O_NONBLOCK: a FIFO planted
// there cannot block the open (fstat then tells it is not a regular file). Both 0 where the platform lacks them.
const NOFOLLOW = (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/**
 * Why `dir` must not hold history (null: it may): not a folder, not owned by the current user, or writable by
 * other users, who could then plant a symlink or swap the files. (No uid on Windows: not checked there.)
 */
export function historyDirProblem(dir: string): string | null {
  const uid = process.getuid?.();
  let st;
  try {
    st = statSync(dir);
  } catch {
    return null; // absent: created private when the first entry is written
  }
  if (!st.isDirectory()) return `the history folder ${dir} is not a folder`;
  if (uid === undefined) return null;
  if (st.uid !== uid)
    return `the history folder ${dir} belongs to another user (uid ${st.uid}); set GPU_SESSIONS_CACHE_DIR to a folder of your own`;
  if (st.mode & 0o022)
    return (
      `the history folder ${dir} is writable by other users (mode ${(st.mode & 0o7777).toString(8)}); run ` +
      `'chmod 700 ${dir}' or set GPU_SESSIONS_CACHE_DIR to a private folder`
    );
  return null;
}

/** Why an open history file must not be used (null: it may): only a regular file of ours with one link. */
function openFileProblem(fd: number, file: string): string | null {
  const st = fstatSync(fd);
  if (!st.isFile()) return `the history file ${file} is not a regular file`;
  const uid = process.getuid?.();
  if (uid !== undefined && st.uid !== uid) return `the history file ${file} belongs to another user (uid ${st.uid})`;
  if (st.nlink > 1) return `the history file ${file} has other hard links`;
  return null;
}

function writeAll(fd: number, text: string): void {
  const b = Buffer.from(text, 'utf8');
  for (let off = 0; off < b.length;) off += writeSync(fd, b, off, b.length - off);
}

const time = z.string().refine((t) => !Number.isNaN(Date.parse(t)), { message: 'expected a date and time' });
const numOrNull = z.number().nullable();

/**
 * A record history readers can use, as zod reads it: every field that `gpu-sessions history` and the dashboard read
 * has its shape when present (`servers` a list of objects with a string `state`, …); `complete`: a sample or
 * transition also has every field the CLI's text lines show. Other types need only type and time. Fields this
 * version does not know are kept.
 */
function historyEntrySchema(complete: boolean) {
  const has = <T extends z.ZodType>(t: T) => (complete ? t : t.optional());
  const rows = <S extends z.core.$ZodLooseShape>(shape: S) => z.array(z.looseObject(shape));
  const transition = z.looseObject({
    type: z.literal('transition'),
    time,
    from: has(z.string()),
    to: has(z.string()),
    message: has(z.string()),
    node: z.string().optional(),
    class: z.string().nullable().optional(),
    subject: z.string().optional(),
  });
  const unreachable = z.looseObject({
    type: z.literal('sample'),
    time,
    reachable: z.literal(false),
    node: z.string().optional(),
    message: z.string().nullable().optional(),
  });
  const sample = z.looseObject({
    type: z.literal('sample'),
    time,
    reachable: has(z.literal(true)),
    node: z.string().optional(),
    servers: has(rows({ state: z.string(), port: numOrNull.optional() })),
    gpus: has(rows({ state: z.string() })),
    disks: has(rows({ state: z.string(), mount: z.string() })),
    job: has(z.looseObject({ state: z.string(), percent: numOrNull })),
    genThroughput: numOrNull.optional(),
    runningReqs: numOrNull.optional(),
    spend: z.looseObject({ total: z.number(), perMillionTokens: numOrNull, perMillionTokensNow: numOrNull.optional() }).optional(),
    deadline: z.looseObject({ secondsLeft: z.number() }).optional(),
    data: rows({ verdict: z.string() }).optional(),
  });
  const other = z.looseObject({ type: z.string().refine((t) => t !== 'transition' && t !== 'sample'), time });
  return z.union([transition, unreachable, sample, other]);
}

const ENTRY = historyEntrySchema(false);
const COMPLETE_ENTRY = historyEntrySchema(true);

/** Whether `e` is a history record readers can use (`complete`: with every field the CLI's text lines show). */
export function isHistoryEntry(e: unknown, complete = false): e is HistoryEntry {
  return (complete ? COMPLETE_ENTRY : ENTRY).safeParse(e).success;
}

export class HistoryStore {
  readonly file: string;
  /** Lines of the file that were not a history record (junk, a cut line, a wrong shape), at the last load. */
  skipped = 0;
  /** Why the history is kept in memory only (the folder or file is unsafe); null while it is kept on disk. */
  problem: string | null = null;
  private readonly maxBytes: number;
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private readonly onProblem?: (message: string) => void;
  private entries: HistoryEntry[] = [];
  /** Bytes of each entry in memory as a JSON line, and their sum: memory holds no more than the file may. */
  private entryBytes: number[] = [];
  private memBytes = 0;
  private pending: string[] = [];
  private size = 0;

  constructor(
    readonly dir: string,
    readonly node: string,
    opts: HistoryOptions = {},
  ) {
    this.file = path.join(dir, historyFileName(node));
    this.maxBytes = Math.max(4096, opts.maxBytes ?? 8 * 1024 * 1024);
    this.maxAgeMs = opts.maxAgeMs ?? 24 * 3_600_000;
    this.maxEntries = opts.maxEntries === 0 ? 0 : Math.max(10, opts.maxEntries ?? 20_000);
    this.now = opts.now ?? Date.now;
    this.onProblem = opts.onProblem;
    for (const e of this.load()) this.keep(e, JSON.stringify(e));
  }

  /** Entries on disk (bounded), oldest first; unreadable or misshapen lines are skipped (and counted in `skipped`). */
  load(): HistoryEntry[] {
    this.skipped = 0;
    const text = this.readFile();
    if (text === null) return [];
    const cutoff = this.now() - this.maxAgeMs;
    const out: HistoryEntry[] = [];
    for (const line of text.split('\n')) {
      if (!line) continue;
      let e: unknown;
      try {
        e = JSON.parse(line);
      } catch {
        this.skipped++; // a line cut by a crash mid-write
        continue;
      }
      if (!isHistoryEntry(e)) this.skipped++;
      else if (Date.parse(e.time) >= cutoff) out.push(e);
    }
    return out.slice(-this.maxEntries);
  }

  all(): HistoryEntry[] {
    return [...this.entries];
  }

  addSample(s: object): void {
    this.add(s as HistoryEntry);
  }

  addTransition(t: object): void {
    this.add(t as HistoryEntry);
  }

  add(e: HistoryEntry): void {
    const line = JSON.stringify(e);
    this.keep(e, line);
    this.pending.push(line);
    if (this.pending.length >= 1) this.flush();
  }

  /** Keeps an entry in memory, dropping the oldest past maxEntries or maxBytes (the newest one always stays). */
  private keep(e: HistoryEntry, line: string): void {
    if (this.maxEntries === 0) return;
    const bytes = Buffer.byteLength(line) + 1;
    this.entries.push(e);
    this.entryBytes.push(bytes);
    this.memBytes += bytes;
    let drop = 0;
    let dropped = 0;
    const n = this.entries.length;
    while (n - drop > 1 && (n - drop > this.maxEntries || this.memBytes - dropped > this.maxBytes)) dropped += this.entryBytes[drop++];
    if (!drop) return;
    this.entries.splice(0, drop);
    this.entryBytes.splice(0, drop);
    this.memBytes -= dropped;
  }

  /** Appends what is pending; compacts the file (newest half within the age limit) when it outgrows maxBytes. */
  flush(): void {
    if (!this.pending.length) return;
    const text = this.pending.join('\n') + '\n';
    this.pending = [];
    if (this.problem) return; // memory only: the folder or file is not safe to write
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      if (this.refuse(historyDirProblem(this.dir))) return;
      const fd = this.open(constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT);
      if (fd === null) return;
      try {
        if (this.refuse(openFileProblem(fd, this.file))) return;
        writeAll(fd, text);
      } finally {
        closeSync(fd);
      }
      this.size += Buffer.byteLength(text);
      if (this.size > this.maxBytes) this.compact();
    } catch {
      // history is best effort: a full or read-only cache folder must not stop the watch
    }
  }

  /** Keeps the history in memory only from now on, telling why once. True when there is a problem. */
  private refuse(problem: string | null): boolean {
    if (!problem) return false;
    if (!this.problem) {
      this.problem = problem;
      this.onProblem?.(`not keeping history on disk: ${problem}`);
    }
    return true;
  }

  /** The history file opened without following a symlink at its path (null: refused, see `problem`). */
  private open(flags: number): number | null {
    try {
      return openSync(this.file, flags | NOFOLLOW, 0o600);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ELOOP' || code === 'EMLINK') this.refuse(`the history file ${this.file} is a symbolic link (not followed)`);
      else if (code === 'ENXIO') this.refuse(`the history file ${this.file} is not a regular file`);
      else if (code !== 'ENOENT') throw e;
      return null;
    }
  }

  /** The file's text (null: none, or not safe to read); records its size. */
  private readFile(): string | null {
    this.size = 0;
    if (this.refuse(historyDirProblem(this.dir))) return null;
    let fd: number | null;
    try {
      fd = this.open(constants.O_RDONLY);
    } catch {
      return null;
    }
    if (fd === null) return null;
    try {
      if (this.refuse(openFileProblem(fd, this.file))) return null;
      const text = readFileSync(fd, 'utf8');
      this.size = Buffer.byteLength(text);
      return text;
    } catch {
      return null;
    } finally {
      closeSync(fd);
    }
  }

  private compact(): void {
    const cutoff = this.now() - this.maxAgeMs;
    const keep: string[] = [];
    let bytes = 0;
    const all = this.load();
    if (this.problem) return; // the file became unsafe to read: leave it as it is
    for (let i = all.length - 1; i >= 0; i--) {
      if (Date.parse(all[i].time) < cutoff) break;
      const l = JSON.stringify(all[i]) + '\n';
      // Bytes, not characters: the bound is on the file, and node messages are UTF-8.
      const n = Buffer.byteLength(l);
      if (bytes + n > this.maxBytes / 2) break;
      keep.push(l);
      bytes += n;
    }
    keep.reverse();
    // A new file of our own (O_EXCL: never an existing file or a symlink planted at the name), renamed over the old.
    const tmp = `${this.file}.${randomBytes(8).toString('hex')}.tmp`;
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | NOFOLLOW, 0o600);
    try {
      try {
        writeAll(fd, keep.join(''));
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.file);
    } catch (e) {
      try {
        unlinkSync(tmp);
      } catch {
        // already gone
      }
      throw e;
    }
    this.size = bytes;
  }
}
