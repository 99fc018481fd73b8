/**
 * Bounded history of a node's samples and transitions: a JSON-lines file per node (at most `maxBytes`,
 * entries older than `maxAgeMs` dropped when it is compacted) and at most `maxEntries` kept in memory.
 * Used by `gpu-sessions watch` (under the user's cache folder, read back by `gpu-sessions history`) and by
 * the extension (in its global storage, surviving a window reload). Writes only inside `dir`.
 * Nothing here imports vscode.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export interface HistoryOptions {
  /** Default 8 MiB. */
  maxBytes?: number;
  /** Default 24 h. */
  maxAgeMs?: number;
  /** In memory. Default 20,000. */
  maxEntries?: number;
  now?: () => number;
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

export class HistoryStore {
  readonly file: string;
  private readonly maxBytes: number;
  private readonly maxAgeMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;
  private entries: HistoryEntry[] = [];
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
    this.maxEntries = Math.max(10, opts.maxEntries ?? 20_000);
    this.now = opts.now ?? Date.now;
    this.entries = this.load();
    try {
      this.size = existsSync(this.file) ? statSync(this.file).size : 0;
    } catch {
      this.size = 0;
    }
  }

  /** Entries on disk (bounded), oldest first; unreadable lines are skipped. */
  load(): HistoryEntry[] {
    let text = '';
    try {
      text = readFileSync(this.file, 'utf8');
    } catch {
      return [];
    }
    const cutoff = this.now() - this.maxAgeMs;
    const out: HistoryEntry[] = [];
    for (const line of text.split('\n')) {
      if (!line) continue;
      try {
        const e = JSON.parse(line) as HistoryEntry;
        if (e && typeof e.type === 'string' && typeof e.time === 'string' && Date.parse(e.time) >= cutoff) out.push(e);
      } catch {
        // a line cut by a crash mid-write
      }
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
    this.entries.push(e);
    if (this.entries.length > this.maxEntries) this.entries.splice(0, this.entries.length - this.maxEntries);
    this.pending.push(JSON.stringify(e));
    if (this.pending.length >= 1) this.flush();
  }

  /** Appends what is pending; compacts the file (newest half within the age limit) when it outgrows maxBytes. */
  flush(): void {
    if (!this.pending.length) return;
    const text = this.pending.join('\n') + '\n';
    this.pending = [];
    try {
      mkdirSync(this.dir, { recursive: true, mode: 0o700 });
      appendFileSync(this.file, text, { mode: 0o600 });
      this.size += Buffer.byteLength(text);
      if (this.size > this.maxBytes) this.compact();
    } catch {
      // history is best effort: a full or read-only cache folder must not stop the watch
    }
  }

  private compact(): void {
    const cutoff = this.now() - this.maxAgeMs;
    const keep: string[] = [];
    let bytes = 0;
    const all = this.load();
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
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, keep.join(''), { mode: 0o600 });
    renameSync(tmp, this.file);
    this.size = bytes;
  }
}
