/**
 * `restore --from-guard s3://bucket/prefix DIR NODE`: a run taken from the node guard's S3 copy with no
 * local salvage. The guard keeps its own index next to its copies (`<prefix>.gpu-sessions-guard/index.json`:
 * each file it verified there, with size, mtime, mode and SHA-256; written by guard.py). This reads that index
 * (checked against the SHA-256 the guard stored with it) and writes a salvage run folder in DIR whose every file is
 * "verified by the guard in S3": the one restore flow then reads each back (guardCopies.ts, checked against the
 * guard's hash) and sends it as any other verified file. Nothing is written outside DIR. An entry whose path could
 * not be restored as it is named (not absolute, `..`, NUL, not UTF-8, a system folder) or whose key is not that
 * path's key under the prefix is refused, named with why, and never read.
 */
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { parseDocument } from '../util/document';
import { GpuSessionsError } from '../util/errors';
import { formatS3Url, getObjectToFile, headObjects, parseS3Url, uploadKey, type S3Target } from '../salvage/s3/s3';
import { LEFT_REASON_TEXT, type SalvageItem, type SalvageManifest } from '../salvage/salvageTypes';
import { MANIFEST_FILE, newManifest, parseManifest } from '../salvage/manifestSchema';
import type { RestoreCapture } from '../salvage/capture/restoreCapture';
import { refusedPath } from './targets';

/** Under the guard's prefix (guard.py's INDEX_KEY). */
const GUARD_INDEX_KEY = '.gpu-sessions-guard/index.json';
const INDEX_FILE = 'guard-index.json';
const MANIFEST = MANIFEST_FILE;

export interface GuardSource {
  /** s3://bucket/prefix, as given to `guard start --s3`. */
  s3: string;
  endpoint?: string;
}

interface GuardRun {
  runDir: string;
  /** Index entries not restored: hostile or malformed, never read from S3. */
  refused: Array<{ path: string; reason: string }>;
  files: number;
  writtenAt: string | null;
}

interface IndexEntry {
  path: string;
  key: string;
  size: number;
  mtime: number;
  sha256: string;
  mode: string | null;
}

const isSha = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);
const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
/** A lone surrogate: the guard read a name that is not UTF-8 (Python's surrogateescape); it cannot be named back. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** Why an index entry is not restored (null: it is), from its own fields and the prefix alone. */
export function refusedEntry(e: Record<string, unknown>, prefix: string): string | null {
  const p = str(e.path);
  if (p === null) return 'the entry names no path';
  if (LONE_SURROGATE.test(p)) return 'its name is not UTF-8 (it cannot be written back under the same bytes)';
  const bad = refusedPath(p);
  if (bad) return bad;
  const key = str(e.key);
  if (key !== uploadKey(p, prefix)) return `its key ${JSON.stringify(key)} is not the path's own key under the prefix`;
  if (!isSha(e.sha256)) return 'it has no SHA-256';
  if (!Number.isSafeInteger(e.size) || (e.size as number) < 0) return 'it has no size';
  if (typeof e.mtime !== 'number' || !Number.isFinite(e.mtime)) return 'it has no mtime';
  return null;
}

/**
 * The guard's index as it is read back (guard.py writes it): the envelope. Each entry, and the home and roots it
 * names, are judged on their own below (a hostile or malformed one is refused or ignored, never the whole index).
 */
const guardIndexSchema = z.looseObject({
  format: z.literal('gpu-sessions-guard-index'),
  version: z.literal(1),
  files: z.array(z.unknown()),
  home: z.unknown().optional(),
  roots: z.unknown().optional(),
  node: z.unknown().optional(),
  writtenAt: z.unknown().optional(),
});

/** The index, parsed and checked: good entries and refused ones (never thrown for one bad entry). */
export function parseGuardIndex(
  text: string,
  prefix: string,
  source = "The guard's index",
): {
  home: string | null;
  roots: string[];
  node: string | null;
  writtenAt: string | null;
  entries: IndexEntry[];
  refused: GuardRun['refused'];
} {
  const doc = parseDocument(guardIndexSchema, text, source, {
    hint: 'it is not an index this version reads (format gpu-sessions-guard-index, version 1)',
  });
  const entries: IndexEntry[] = [];
  const refused: GuardRun['refused'] = [];
  const seen = new Set<string>();
  for (const raw of doc.files) {
    const e = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
    const why = refusedEntry(e, prefix) ?? (seen.has(e.path as string) ? 'the index names it twice' : null);
    const name = str(e.path) ?? JSON.stringify(raw).slice(0, 200);
    if (why) {
      refused.push({ path: name, reason: `refused: the guard's index names it, but ${why}; nothing was read or written for it` });
      continue;
    }
    seen.add(name);
    const mode = str(e.mode);
    entries.push({
      path: name,
      key: e.key as string,
      size: e.size as number,
      mtime: e.mtime as number,
      sha256: e.sha256 as string,
      mode: mode && /^[0-7]{1,4}$/.test(mode) ? mode.padStart(3, '0') : null,
    });
  }
  const home = str(doc.home);
  const roots = (Array.isArray(doc.roots) ? doc.roots : []).filter((r): r is string => typeof r === 'string' && refusedPath(r) === null);
  return {
    home: home && refusedPath(home) === null ? home : null,
    roots,
    node: str(doc.node),
    writtenAt: str(doc.writtenAt),
    entries,
    refused,
  };
}

/** DIR must be empty, absent, or a run this source wrote before (its files already read are kept). */
function checkDir(dir: string, url: string): void {
  if (!existsSync(dir)) return;
  const names = readdirSync(dir);
  if (!names.length) return;
  const mf = path.join(dir, MANIFEST);
  let from: string | null = null;
  let text: string | null = null;
  try {
    text = readFileSync(mf, 'utf8');
  } catch {
    /* not a run folder */
  }
  // A damaged manifest is named (file and field), never taken for an empty folder.
  if (text !== null) from = parseManifest(text, mf, 'usage').guard?.s3 ?? null;
  if (from !== url)
    throw new GpuSessionsError(
      'usage',
      `${dir} is not empty${from ? ` (it holds a run from ${from})` : ''}: restore --from-guard writes its run into an empty folder of your choice.`,
    );
}

function manifestOf(dir: string, url: string, src: GuardSource, ix: ReturnType<typeof parseGuardIndex>): SalvageManifest {
  const at = ix.writtenAt ?? new Date().toISOString();
  const items: SalvageItem[] = ix.entries.map((e) => ({
    remotePath: e.path,
    localPath: null,
    kind: 'data',
    step: 'data',
    size: e.size,
    mtime: new Date(Math.round(e.mtime * 1000)).toISOString(),
    sha256: e.sha256,
    selected: false,
    status: 'skipped',
    reason: LEFT_REASON_TEXT['guard-s3'],
    leftReason: 'guard-s3',
    s3: 'present',
    s3Key: e.key,
    guardS3: 'confirmed',
  }));
  const restore: RestoreCapture = {
    version: 1,
    capturedAt: at,
    home: ix.home,
    profile: null,
    profileErrors: [],
    servers: [],
    client: null,
    modes: Object.fromEntries(ix.entries.filter((e) => e.mode).map((e) => [e.path, e.mode as string])),
    problems: [],
  };
  return {
    ...newManifest({ node: ix.node ?? url, host: {}, startedAt: at, finishedAt: at, dest: dir, sizeThreshold: 0, stepStatus: 'skipped' }),
    roots: ix.roots.map((r) => ({ path: r, why: 'guard' })),
    items,
    guard: {
      running: false,
      to: null,
      s3: url,
      s3Endpoint: src.endpoint ?? null,
      verifiedInJournal: ix.entries.length + ix.refused.length,
      counted: ix.entries.length,
      confirmed: 0,
      notCounted: ix.refused.length,
      s3Error: null,
      downloaded: false,
    },
    restore,
  };
}

/** Reads the guard's index from S3 and writes the run folder DIR (its manifest; the bytes come in restoreRun). */
export async function prepareGuardRun(
  dir: string,
  src: GuardSource,
  o: { signal?: AbortSignal; onProgress?: (m: string) => void } = {},
): Promise<GuardRun> {
  const u = parseS3Url(src.s3);
  if (!u) throw new GpuSessionsError('usage', `--from-guard is the guard's s3://bucket/prefix (got "${String(src.s3).slice(0, 80)}").`);
  const prefix = u.prefix && !u.prefix.endsWith('/') ? u.prefix + '/' : u.prefix;
  const url = formatS3Url(u.bucket, prefix);
  const abs = path.resolve(dir);
  checkDir(abs, url);
  const target: S3Target = { bucket: u.bucket, prefix, endpoint: src.endpoint };
  const key = prefix + GUARD_INDEX_KEY;
  o.onProgress?.(`Reading the guard's index ${formatS3Url(u.bucket, key)}…`);
  const head = (await headObjects(target, [key], { signal: o.signal })).get(key);
  if (!head)
    throw new GpuSessionsError(
      'usage',
      `No guard index at ${formatS3Url(u.bucket, key)}: a guard writes it there after its first sync to ${url} (is this the --s3 of \`guard start\`?).`,
    );
  mkdirSync(abs, { recursive: true, mode: 0o700 });
  const file = path.join(abs, INDEX_FILE);
  rmSync(file, { force: true });
  const got = await getObjectToFile(target, key, file, o.signal);
  if (!isSha(head.sha256) || got.sha256 !== head.sha256) {
    rmSync(file, { force: true });
    throw new GpuSessionsError(
      'remote-failed',
      `The guard's index ${formatS3Url(u.bucket, key)} hashes ${got.sha256.slice(0, 12)}…, not the SHA-256 stored with it: nothing restored.`,
    );
  }
  const ix = parseGuardIndex(readFileSync(file, 'utf8'), prefix, `The guard's index ${formatS3Url(u.bucket, key)}`);
  writeFileSync(path.join(abs, MANIFEST), JSON.stringify(manifestOf(abs, url, src, ix), null, 2) + '\n', { mode: 0o600 });
  return { runDir: abs, refused: ix.refused, files: ix.entries.length, writtenAt: ix.writtenAt };
}
