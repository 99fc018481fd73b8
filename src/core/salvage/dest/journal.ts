/**
 * The salvage journal: `salvage-journal.jsonl` beside the manifest, one line per file verified, appended as files
 * verify (buffered: written when a line has waited JOURNAL_FLUSH_MS as the next one comes, and at each checkpoint).
 * The manifest is written when the run ends (and as a throttled snapshot), not once per checkpoint: a 30,000-file
 * manifest is 15 MB of JSON. A run cut at any point resumes from the manifest on disk with the journal laid over it;
 * the journal is emptied (compacted into the manifest) each time the manifest is written whole.
 *
 * Each line is self-contained: what resume needs to trust a local copy (its remote path, local path, size, mtime, the
 * node's SHA-256, the local SHA-256 when written redacted). A torn last line (a crash mid-write) is ignored.
 */
import { closeSync, openSync, readFileSync, rmSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { documentProblem } from '../../util/document';
import type { SalvageItem, SalvageManifest } from '../salvageTypes';

export const JOURNAL_FILE = 'salvage-journal.jsonl';
/** How long a verified file may wait in memory before its journal line is written. */
const JOURNAL_FLUSH_MS = 500;
const FLUSH_LINES = 2000;

/** One verified file, as resume needs it: one journal line. */
const journalLineSchema = z.object({
  /** Remote path, local path, size, mtime, the node's SHA-256. */
  p: z.string(),
  l: z.string(),
  s: z.number().finite(),
  m: z.string(),
  h: z.string(),
  /** Local SHA-256 when it differs (written redacted). */
  lh: z.string().optional(),
  md5: z.string().optional(),
  /** Secrets found in the copy (line numbers and kinds, never values). */
  sec: z.array(z.object({ line: z.number(), kind: z.string() })).optional(),
  k: z.custom<SalvageItem['kind']>((v) => typeof v === 'string'),
  st: z.custom<SalvageItem['step']>((v) => typeof v === 'string'),
  t: z.string(),
});
type JournalEntry = z.infer<typeof journalLineSchema>;

/** A journal line as its entry, or why it is not one (`FIELD: what is wrong`). */
export function journalLine(line: string): JournalEntry | string {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return 'not JSON (a torn line)';
  }
  return documentProblem(journalLineSchema, v) ?? (v as JournalEntry);
}

function journalEntry(it: SalvageItem): JournalEntry | null {
  if (it.status !== 'verified' || !it.localPath || !it.sha256) return null;
  const e: JournalEntry = {
    p: it.remotePath,
    l: it.localPath,
    s: it.size,
    m: it.mtime,
    h: it.sha256,
    k: it.kind,
    st: it.step,
    t: it.syncedAt ?? '',
  };
  if (it.redacted && it.localSha256) e.lh = it.localSha256;
  if (it.md5) e.md5 = it.md5;
  if (it.secrets?.length) e.sec = it.secrets;
  return e;
}

/** Appends lines to the run's journal; a write error is reported once through `onError`. */
export class SalvageJournal {
  private lines: string[] = [];
  private firstAt = 0;
  private failed = false;
  readonly file: string;

  constructor(
    dir: string,
    private readonly onError: (e: unknown) => void,
  ) {
    this.file = path.join(dir, JOURNAL_FILE);
  }

  /** A verified file item (anything else is ignored). Written within JOURNAL_FLUSH_MS, or at the next flush. */
  record(it: SalvageItem): void {
    const e = journalEntry(it);
    if (!e) return;
    if (this.lines.length === 0) this.firstAt = Date.now();
    this.lines.push(JSON.stringify(e));
    if (this.lines.length >= FLUSH_LINES || Date.now() - this.firstAt >= JOURNAL_FLUSH_MS) this.flush();
  }

  flush(): void {
    if (this.lines.length === 0 || this.failed) return;
    const text = this.lines.join('\n') + '\n';
    this.lines = [];
    let fd: number | null = null;
    try {
      fd = openSync(this.file, 'a', 0o600);
      const b = Buffer.from(text);
      let off = 0;
      while (off < b.length) off += writeSync(fd, b, off, b.length - off);
    } catch (e) {
      this.failed = true;
      this.onError(e);
    } finally {
      if (fd !== null) closeSync(fd);
    }
  }

  /** The manifest now holds everything the journal said: start it again empty. */
  compact(): void {
    this.lines = [];
    try {
      rmSync(this.file, { force: true });
    } catch {
      /* an old journal only repeats what the manifest says */
    }
  }
}

/**
 * The journal's entries (the last per remote path); unreadable lines (a torn tail) are skipped: the manifest still
 * holds what they said up to its last snapshot, and the file is verified again.
 */
export function readJournal(dir: string): Map<string, JournalEntry> {
  const out = new Map<string, JournalEntry>();
  let text: string;
  try {
    text = readFileSync(path.join(dir, JOURNAL_FILE), 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    if (!line) continue;
    const e = journalLine(line);
    if (typeof e !== 'string') out.set(e.p, e);
  }
  return out;
}

/**
 * The previous run's manifest with its journal laid over: each journaled file is verified with the journal's size,
 * mtime and hashes (an item the manifest snapshot did not hold yet is added). No manifest but a journal: a manifest
 * of those items only.
 */
export function withJournal(dir: string, previous: SalvageManifest | null): SalvageManifest | null {
  const j = readJournal(dir);
  if (j.size === 0) return previous;
  const m = previous ?? ({ items: [], roots: [] } as unknown as SalvageManifest);
  const byPath = new Map(m.items.map((i) => [i.remotePath, i]));
  for (const e of j.values()) {
    const verified: Partial<SalvageItem> = {
      localPath: e.l,
      size: e.s,
      mtime: e.m,
      sha256: e.h,
      localSha256: e.lh ?? null,
      redacted: !!e.lh,
      md5: e.md5 ?? null,
      status: 'verified',
      syncedAt: e.t || null,
      ...(e.sec ? { secrets: e.sec } : {}),
    };
    const it = byPath.get(e.p);
    if (it) Object.assign(it, verified);
    else
      m.items.push({
        remotePath: e.p,
        kind: e.k,
        step: e.st,
        selected: true,
        reason: null,
        leftReason: null,
        s3: 'unknown',
        ...verified,
      } as SalvageItem);
  }
  return m;
}
