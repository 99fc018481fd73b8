/**
 * Restore's file half: from a salvage run's manifest to the files on the new node. Every verified file goes
 * byte-exact under its exact old name (the manifest's remote path, mapped; never a local encoding), with its
 * mode; identical files are not sent again; a file that differs is a conflict left alone unless forced; the new
 * home's own shell and ssh setup is kept. Bytes travel as tar streams (PAX names) or appended pieces, written
 * under temporary names and renamed only after the node's SHA-256 matches.
 */
import { closeSync, existsSync, lstatSync, openSync, readFileSync, readSync, realpathSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { runOperation } from '../remote/operation';
import type { AbortLike, Transport } from '../ssh/transport';
import type { SalvageItem, SalvageManifest } from '../salvage/salvageTypes';
import { insideDest, localRelPath } from '../salvage/dest/paths';
import { remoteHashes } from '../salvage/transfer/transfer';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { FolderMap, mapOf, mapPath, resolveMaps } from './mapping';
import { includedByUser, protectedReason, refusedLink, refusedPatch, refusedPath, resolveIncludes, safeMode } from './targets';
import type { RestoreCapture } from '../salvage/capture/restoreCapture';
import {
  GitRestoreState,
  TargetState,
  VerifyRecord,
  appendOperation,
  extractOperation,
  gitApplyOperation,
  safeParentsOperation,
  symlinkOperation,
  targetStateOperation,
  verifyOperation,
  writableOperation,
} from './nodeOps';
import { writeTar } from './tarWrite';

interface RestoreFileEntry {
  kind: 'file' | 'symlink';
  /** The path on the old node (the manifest's). */
  remotePath: string;
  /** The path on the new node. */
  target: string;
  /** The mapped folder it lands in: no folder between it and the target may resolve through a symlink. */
  base: string;
  localAbs: string | null;
  size: number;
  /** SHA-256 of the salvaged bytes (what the node must end up holding). */
  sha256: string | null;
  mode: string;
  mtime: number;
  linkTarget?: string;
}

interface GitEntry {
  remotePath: string;
  target: string;
  base: string;
  patchFile: string | null;
}

export interface LocalPlan {
  oldHome: string | null;
  mapped: FolderMap[];
  entries: RestoreFileEntry[];
  kept: string[];
  /** Why each kept path was not restored. */
  keptReasons: Array<{ path: string; reason: string }>;
  git: GitEntry[];
  skipped: Array<{ path: string; reason: string }>;
}

interface Conflict {
  path: string;
  reason: string;
}

export interface FilesResult {
  uploaded: number;
  unchanged: number;
  bytes: number;
  conflicts: Conflict[];
  kept: string[];
  keptReasons: Conflict[];
  failed: Conflict[];
  git: Array<{ path: string; state: GitRestoreState | 'not-restored'; reason: string }>;
  /** Files that would be sent (plan only) */
  toUpload?: number;
}

type ManifestWithRestore = SalvageManifest & { restore?: RestoreCapture | null };

/**
 * Where the salvaged bytes of an item are: its localPath (relative to the run folder), else salvage's name
 * mapping. The run folder may have been changed since the salvage: a copy that is a symlink, not a regular file,
 * or whose folders resolve outside the run folder is refused (its bytes could be any local file).
 */
export function localBytesPath(runDir: string, it: SalvageItem): string {
  const p = insideDest(runDir, it.localPath ?? localRelPath(it.remotePath));
  if (!existsSync(p) && !isLink(p)) return p;
  const st = lstatSync(p);
  if (st.isSymbolicLink()) throw new Error(`its salvaged copy ${p} is a symlink in the run folder; restore reads only regular files there`);
  if (!st.isFile()) throw new Error(`its salvaged copy ${p} is not a regular file`);
  const real = realpathSync(p);
  const rootReal = realpathSync(runDir);
  if (real !== path.join(rootReal, path.relative(runDir, p)))
    throw new Error(`its salvaged copy ${p} resolves outside the run folder (to ${real}); restore reads only the run folder's own files`);
  return p;
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

function oldHomeOf(m: ManifestWithRestore): string | null {
  const h = m.restore?.home ?? m.roots.find((r) => r.why === 'home')?.path ?? null;
  return typeof h === 'string' && refusedPath(h) === null ? h : null;
}

function fileMode(m: ManifestWithRestore, it: SalvageItem, localAbs: string): string {
  const cap = m.restore?.modes?.[it.remotePath];
  if (typeof cap === 'string' && /^[0-7]{3,4}$/.test(cap)) return safeMode(cap);
  try {
    return safeMode(lstatSync(localAbs).mode & 0o777);
  } catch {
    return '644';
  }
}

/**
 * The plan from the run folder alone (no node): what goes where. Every remote path is checked as text first
 * (targets.ts); only paths under the run's recorded roots (mapped to the new node) or a `--map` are written;
 * protected paths are kept unless `include` (the user's `--include-dotfiles`) names them.
 */
export function buildLocalPlan(
  runDir: string,
  m: ManifestWithRestore,
  userMaps: FolderMap[],
  newHome: string,
  include: readonly string[] = [],
): LocalPlan {
  const oldHome = oldHomeOf(m);
  const roots = (Array.isArray(m.roots) ? m.roots : []).map((r) => r?.path).filter((p): p is string => typeof p === 'string');
  const mapped = resolveMaps(
    userMaps,
    oldHome,
    newHome,
    roots.filter((r) => refusedPath(r) === null),
  );
  const plan: LocalPlan = { oldHome, mapped, entries: [], kept: [], keptReasons: [], git: [], skipped: [] };
  const includes = resolveIncludes(include, newHome);
  for (const it of m.items) {
    if (it.status !== 'verified' || typeof it.remotePath !== 'string' || !it.remotePath.startsWith('/')) continue;
    if (it.kind === 'server-cmdline' || it.kind === 'cache') continue;
    const bad = refusedPath(it.remotePath);
    if (bad) {
      plan.skipped.push({ path: it.remotePath, reason: `not restored: ${bad}` });
      continue;
    }
    const target = mapPath(it.remotePath, plan.mapped);
    const base = mapOf(it.remotePath, plan.mapped)?.to;
    if (target === null || base === undefined) {
      plan.skipped.push({
        path: it.remotePath,
        reason:
          "not restored: it is under none of the run's recorded folders; restore writes only those (name a folder with --map OLD=NEW)",
      });
      continue;
    }
    const badTarget = refusedPath(target);
    if (badTarget) {
      plan.skipped.push({ path: it.remotePath, reason: `not restored to ${target}: ${badTarget}` });
      continue;
    }
    const prot = protectedReason(target, newHome);
    if (prot && !includedByUser(target, includes)) {
      plan.kept.push(target);
      plan.keptReasons.push({ path: target, reason: `${prot} (--include-dotfiles ${target} restores it)` });
      continue;
    }
    if (it.kind === 'git-state') {
      const dir = it.localPath ? insideDest(runDir, it.localPath) : null;
      const patch = dir ? path.join(dir, 'git-diff.patch') : null;
      plan.git.push({ remotePath: it.remotePath, target, base, patchFile: patch && existsSync(patch) && !isLink(patch) ? patch : null });
      continue;
    }
    const mtime = Date.parse(it.mtime);
    if (it.kind === 'symlink') {
      if (typeof it.linkTarget !== 'string') continue;
      const lt = it.linkTarget.startsWith('/') ? (mapPath(it.linkTarget, plan.mapped) ?? it.linkTarget) : it.linkTarget;
      const badLink = includedByUser(target, includes) ? null : refusedLink(target, lt, newHome);
      if (badLink) {
        plan.skipped.push({ path: it.remotePath, reason: `the symlink was not made: ${badLink}` });
        continue;
      }
      plan.entries.push({
        kind: 'symlink',
        remotePath: it.remotePath,
        target,
        base,
        localAbs: null,
        size: 0,
        sha256: null,
        mode: '777',
        mtime: 0,
        linkTarget: lt,
      });
      continue;
    }
    let localAbs: string;
    try {
      localAbs = localBytesPath(runDir, it);
    } catch (e) {
      plan.skipped.push({ path: it.remotePath, reason: errorMessage(e) });
      continue;
    }
    if (!existsSync(localAbs)) {
      plan.skipped.push({ path: it.remotePath, reason: `its salvaged copy ${localAbs} is missing` });
      continue;
    }
    const sha = it.localSha256 ?? it.sha256;
    plan.entries.push({
      kind: 'file',
      remotePath: it.remotePath,
      target,
      base,
      localAbs,
      size: lstatSync(localAbs).size,
      sha256: sha,
      mode: fileMode(m, it, localAbs),
      mtime: Number.isFinite(mtime) ? mtime / 1000 : Date.now() / 1000,
    });
  }
  return plan;
}

interface ApplyOptions {
  node: string;
  /** The new node's home (protected paths are judged against it). */
  newHome: string;
  force: boolean;
  /** Only compare (no write at all): restore_plan. */
  planOnly?: boolean;
  concurrency?: number;
  signal?: AbortLike;
  onProgress?: (message: string, bytesDone: number, bytesTotal: number) => void;
}

const dirOf = (p: string) => p.slice(0, p.lastIndexOf('/')) || '/';

/** Folders that cannot be written on the node: an error naming the first one and the --map to use. */
export async function checkWritable(t: Transport, plan: LocalPlan, node: string, signal?: AbortLike): Promise<void> {
  const dirs = [...new Set(plan.entries.map((e) => dirOf(e.target)))].sort();
  if (!dirs.length) return;
  const res = await runOperation(t, writableOperation(dirs), signal);
  const bad = dirs.map((d, i) => ({ d, r: res[i] })).filter((x) => !x.r.ok);
  if (!bad.length) return;
  const first = bad[0];
  const mp = mapOf(first.d, plan.mapped);
  const from = mp?.from ?? first.d;
  throw new GpuSessionsError(
    'remote-failed',
    `Cannot write ${first.d} on ${node}: ${first.r.at} is not writable there${bad.length > 1 ? ` (${bad.length} folders in all)` : ''}. ` +
      `Map the folder to one you can write, e.g. --map ${from}=${mp && mp.to !== mp.from ? mp.to : `<a folder on ${node}>`}; nothing was written.`,
    { folder: first.d, notWritable: bad.map((b) => b.d) },
  );
}

/** Compare, then upload what is missing or (with force) different; conflicts are left alone. */
export async function applyFiles(t: Transport, plan: LocalPlan, o: ApplyOptions): Promise<FilesResult> {
  const res: FilesResult = {
    uploaded: 0,
    unchanged: 0,
    bytes: 0,
    conflicts: [],
    kept: [...plan.kept],
    keptReasons: [...plan.keptReasons],
    failed: [],
    git: [],
  };
  for (const s of plan.skipped) res.failed.push(s);
  // git state first: a clean clone with the diff applied then holds the salvaged bytes (no conflict).
  for (const g of plan.git) {
    if (!g.patchFile) {
      res.git.push({ path: g.target, state: 'not-restored', reason: 'the salvage holds no diff for it' });
      continue;
    }
    const patch = readFileSync(g.patchFile);
    if (patch.length === 0) {
      res.git.push({ path: g.target, state: 'clean', reason: 'no uncommitted changes were salvaged' });
      continue;
    }
    const refused = refusedPatch(patch.toString('utf8'), g.target, o.newHome);
    if (refused) {
      res.git.push({ path: g.target, state: 'failed', reason: `the diff was not applied: ${refused}; it is in ${g.patchFile}` });
      continue;
    }
    if (o.planOnly) {
      res.git.push({ path: g.target, state: 'not-restored', reason: `the diff ${g.patchFile} is applied when the restore runs` });
      continue;
    }
    try {
      const [where] = await runOperation(t, safeParentsOperation([{ path: `${g.target}/.git`, base: g.base }]), o.signal);
      if (!where.ok) {
        res.git.push({ path: g.target, state: 'failed', reason: `the diff was not applied: ${where.reason}` });
        continue;
      }
      const r = await runOperation(t, gitApplyOperation(g.target, patch), o.signal);
      res.git.push({
        path: g.target,
        state: r.state,
        reason: r.state === 'no-repository' ? `${r.reason}: the diff is in ${g.patchFile}` : r.reason,
      });
    } catch (e) {
      res.git.push({ path: g.target, state: 'failed', reason: errorMessage(e) });
    }
  }
  // After the git diffs (which can create links): no folder between a mapped folder and a target may resolve
  // through a symlink; such targets fail, named, and nothing is written through them.
  const safe = plan.entries.length
    ? await runOperation(t, safeParentsOperation(plan.entries.map((e) => ({ path: e.target, base: e.base }))), o.signal)
    : [];
  const entries = plan.entries.filter((e, i) => {
    const s = safe[i];
    if (s.ok) return true;
    res.failed.push({ path: e.target, reason: s.reason });
    return false;
  });
  const files = entries.filter((e) => e.kind === 'file');
  const links = entries.filter((e) => e.kind === 'symlink');
  const states = entries.length ? await runOperation(t, targetStateOperation(entries.map((e) => e.target)), o.signal) : [];
  const stateOf = new Map<RestoreFileEntry, TargetState>(entries.map((e, i) => [e, states[i]]));
  // Same size: hash on the node (one exec for all of them).
  const sameSize = files.filter((e) => {
    const s = stateOf.get(e)!;
    return s.t === 'file' && s.size === e.size;
  });
  const hashes = await remoteHashes(
    t,
    sameSize.map((e) => e.target),
    'sha256',
    o.signal,
  );
  const send: RestoreFileEntry[] = [];
  for (const e of files) {
    const s = stateOf.get(e)!;
    if (s.t === 'absent') send.push(e);
    else if (s.t === 'file' && s.size === e.size && hashes.get(e.target) === e.sha256) res.unchanged++;
    else if (s.t === 'other')
      res.conflicts.push({ path: e.target, reason: 'something that is not a regular file (a folder?) is there on the node' });
    else if (!o.force)
      res.conflicts.push({
        path: e.target,
        reason:
          s.t === 'link'
            ? `a symlink (→ ${s.target}) is there on the node; --force replaces it`
            : `the node's file has other bytes (${s.size} B vs ${e.size} B salvaged${s.size === e.size ? ', other SHA-256' : ''}); --force replaces it`,
      });
    else send.push(e);
  }
  const linkRecs: Array<{ e: RestoreFileEntry; replace: boolean }> = [];
  for (const e of links) {
    const s = stateOf.get(e)!;
    if (s.t === 'link' && s.target === e.linkTarget) res.unchanged++;
    else if (s.t === 'absent') linkRecs.push({ e, replace: false });
    else if (s.t === 'other') res.conflicts.push({ path: e.target, reason: 'a folder is there on the node; the symlink was not made' });
    else if (!o.force)
      res.conflicts.push({
        path: e.target,
        reason: `${s.t === 'link' ? `a symlink to ${s.target}` : 'a file'} is there on the node, not the salvaged link to ${e.linkTarget}; --force replaces it`,
      });
    else linkRecs.push({ e, replace: true });
  }
  if (o.planOnly) {
    res.toUpload = send.length + linkRecs.length;
    res.bytes = send.reduce((a, b) => a + b.size, 0);
    return res;
  }
  await uploadFiles(t, send, res, o);
  if (linkRecs.length) {
    const out = await runOperation(
      t,
      symlinkOperation(linkRecs.map((l) => ({ link: l.e.target, target: l.e.linkTarget!, replace: l.replace, base: l.e.base }))),
      o.signal,
    );
    out.forEach((r, i) => {
      if (r.ok) res.uploaded++;
      else res.failed.push({ path: linkRecs[i].e.target, reason: r.reason });
    });
  }
  return res;
}

const SMALL = 8 * 1024 * 1024;
const BATCH_BYTES = 32 * 1024 * 1024;
const BATCH_FILES = 2000;
const PIECE = 32 * 1024 * 1024;

async function uploadFiles(t: Transport, send: RestoreFileEntry[], res: FilesResult, o: ApplyOptions): Promise<void> {
  const nonce = randomBytes(6).toString('hex');
  const total = send.reduce((a, b) => a + b.size, 0);
  let done = 0;
  const tmpOf = (e: RestoreFileEntry, i: number) => `${dirOf(e.target)}/.gs-restore-${nonce}-${i}`;
  const indexed = send.map((e, i) => ({ e, tmp: tmpOf(e, i) }));
  const jobs: Array<typeof indexed> = [];
  let cur: typeof indexed = [];
  let curBytes = 0;
  for (const x of indexed.filter((y) => y.e.size <= SMALL)) {
    if (cur.length && (curBytes + x.e.size > BATCH_BYTES || cur.length >= BATCH_FILES)) {
      jobs.push(cur);
      cur = [];
      curBytes = 0;
    }
    cur.push(x);
    curBytes += x.e.size;
  }
  if (cur.length) jobs.push(cur);
  for (const x of indexed.filter((y) => y.e.size > SMALL)) jobs.push([x]);
  const verify = async (batch: typeof indexed) => {
    const recs: VerifyRecord[] = batch.map((x) => ({
      tmp: x.tmp,
      final: x.e.target,
      base: x.e.base,
      sha256: x.e.sha256 ?? '',
      mode: x.e.mode,
      mtime: x.e.mtime,
    }));
    const out = await runOperation(t, verifyOperation(recs), o.signal);
    out.forEach((r, i) => {
      if (r.ok) {
        res.uploaded++;
        res.bytes += batch[i].e.size;
      } else res.failed.push({ path: batch[i].e.target, reason: r.reason });
    });
  };
  const runJob = async (batch: typeof indexed) => {
    try {
      if (batch.length === 1 && batch[0].e.size > SMALL) {
        const { e, tmp } = batch[0];
        const fd = openSync(e.localAbs!, 'r');
        try {
          let off = 0;
          do {
            const buf = Buffer.alloc(Math.min(PIECE, e.size - off));
            const n = buf.length ? readSync(fd, buf, 0, buf.length, off) : 0;
            await runOperation(t, appendOperation(tmp, buf.subarray(0, n), off === 0, o.node), o.signal);
            off += n;
            done += n;
            o.onProgress?.(`sending ${e.target}`, done, total);
            if (n === 0) break;
          } while (off < e.size);
        } finally {
          closeSync(fd);
        }
      } else {
        const tar = writeTar(
          // Relative to / (tar runs without -P); 0600 until the verify step sets the file's own mode, so no other
          // user reads a temporary copy.
          batch.map((x) => ({ name: x.tmp.slice(1), data: readFileSync(x.e.localAbs!), mode: 0o600, mtime: x.e.mtime })),
        );
        await runOperation(t, extractOperation(tar, o.node), o.signal);
        done += batch.reduce((a, b) => a + b.e.size, 0);
        o.onProgress?.(`sent ${batch.length} file(s)`, done, total);
      }
      await verify(batch);
    } catch (e) {
      for (const x of batch) res.failed.push({ path: x.e.target, reason: errorMessage(e) });
      // Leftover temporary names are removed by the verify step of a later run (they never take a final name).
      await runOperation(
        t,
        verifyOperation(batch.map((x) => ({ tmp: x.tmp, final: x.e.target, base: x.e.base, sha256: '-', mode: '600', mtime: 0 }))),
        o.signal,
      ).catch(() => undefined);
    }
  };
  let next = 0;
  const workers = Array.from({ length: Math.min(o.concurrency ?? 4, jobs.length) }, async () => {
    while (next < jobs.length) await runJob(jobs[next++]);
  });
  await Promise.all(workers);
}
