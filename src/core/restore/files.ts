/**
 * Restore's file half: from a salvage run's manifest to the files on the new node. Every verified file goes
 * byte-exact under its exact old name (the manifest's remote path, mapped; never a local encoding), with its
 * mode; identical files are not sent again; a file that differs is a conflict left alone unless forced; the new
 * home's own shell and ssh setup is kept. Bytes travel as tar streams (PAX names) or appended pieces, written
 * under temporary names and renamed only after the node's SHA-256 matches.
 */
import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import * as path from 'node:path';
import { runOperation } from '../remote/operation';
import type { AbortLike, Transport } from '../ssh/transport';
import type { SalvageItem, SalvageManifest } from '../salvage/salvage';
import { insideDest, localRelPath } from '../salvage/paths';
import { remoteHashes } from '../salvage/transfer';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { FolderMap, isUnder, mapOf, mapPath, resolveMaps } from './mapping';
import type { RestoreCapture } from './capture';
import {
  GitRestoreState,
  TargetState,
  VerifyRecord,
  appendOperation,
  extractOperation,
  gitApplyOperation,
  symlinkOperation,
  targetStateOperation,
  verifyOperation,
  writableOperation,
} from './nodeOps';
import { writeTar } from './tarWrite';

export interface RestoreFileEntry {
  kind: 'file' | 'symlink';
  /** The path on the old node (the manifest's). */
  remotePath: string;
  /** The path on the new node. */
  target: string;
  localAbs: string | null;
  size: number;
  /** SHA-256 of the salvaged bytes (what the node must end up holding). */
  sha256: string | null;
  mode: string;
  mtime: number;
  linkTarget?: string;
}

export interface GitEntry {
  remotePath: string;
  target: string;
  patchFile: string | null;
}

export interface LocalPlan {
  oldHome: string | null;
  mapped: FolderMap[];
  entries: RestoreFileEntry[];
  kept: string[];
  git: GitEntry[];
  skipped: Array<{ path: string; reason: string }>;
}

export interface Conflict {
  path: string;
  reason: string;
}

export interface FilesResult {
  uploaded: number;
  unchanged: number;
  bytes: number;
  conflicts: Conflict[];
  kept: string[];
  failed: Conflict[];
  git: Array<{ path: string; state: GitRestoreState | 'not-restored'; reason: string }>;
  /** Files that would be sent (plan only) */
  toUpload?: number;
}

type ManifestWithRestore = SalvageManifest & { restore?: RestoreCapture | null };

/** Shell and ssh setup of the new home that restore never replaces. */
export function isKeptShellFile(target: string, newHome: string): boolean {
  if (!isUnder(target, newHome) || target === newHome) return false;
  const rel = target.slice(newHome.length + 1);
  return rel === '.bashrc' || rel === '.profile' || rel === '.bash_logout' || rel === '.ssh' || rel.startsWith('.ssh/');
}

/** Where the salvaged bytes of an item are: its localPath (relative to the run folder), else salvage's name mapping. */
export function localBytesPath(runDir: string, it: SalvageItem): string {
  return insideDest(runDir, it.localPath ?? localRelPath(it.remotePath));
}

export function oldHomeOf(m: ManifestWithRestore): string | null {
  return m.restore?.home ?? m.roots.find((r) => r.why === 'home')?.path ?? null;
}

function fileMode(m: ManifestWithRestore, it: SalvageItem, localAbs: string): string {
  const cap = m.restore?.modes?.[it.remotePath];
  if (cap && /^[0-7]{3,4}$/.test(cap)) return cap;
  try {
    return (statSync(localAbs).mode & 0o777).toString(8);
  } catch {
    return '644';
  }
}

/** The plan from the run folder alone (no node): what goes where. */
export function buildLocalPlan(runDir: string, m: ManifestWithRestore, userMaps: FolderMap[], newHome: string): LocalPlan {
  const oldHome = oldHomeOf(m);
  const mapped = resolveMaps(
    userMaps,
    oldHome,
    newHome,
    m.roots.map((r) => r.path),
  );
  const plan: LocalPlan = { oldHome, mapped, entries: [], kept: [], git: [], skipped: [] };
  const addFolderMapFor = (p: string) => {
    if (mapPath(p, plan.mapped)) return;
    const dir = p.slice(0, p.lastIndexOf('/')) || '/';
    plan.mapped.push({ from: dir, to: dir });
  };
  for (const it of m.items) {
    if (it.status !== 'verified' || !it.remotePath.startsWith('/')) continue;
    if (it.kind === 'server-cmdline' || it.kind === 'cache') continue;
    addFolderMapFor(it.remotePath);
    const target = mapPath(it.remotePath, plan.mapped)!;
    if (target.split('/').some((c) => c === '..' || c === '.')) {
      plan.skipped.push({ path: it.remotePath, reason: 'the path has "." or ".." components' });
      continue;
    }
    if (it.kind === 'git-state') {
      const dir = it.localPath ? insideDest(runDir, it.localPath) : null;
      const patch = dir ? path.join(dir, 'git-diff.patch') : null;
      plan.git.push({ remotePath: it.remotePath, target, patchFile: patch && existsSync(patch) ? patch : null });
      continue;
    }
    if (isKeptShellFile(target, newHome)) {
      plan.kept.push(target);
      continue;
    }
    const mtime = Date.parse(it.mtime);
    if (it.kind === 'symlink') {
      if (it.linkTarget === undefined) continue;
      const lt = it.linkTarget.startsWith('/') ? (mapPath(it.linkTarget, plan.mapped) ?? it.linkTarget) : it.linkTarget;
      plan.entries.push({
        kind: 'symlink',
        remotePath: it.remotePath,
        target,
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
      localAbs,
      size: statSync(localAbs).size,
      sha256: sha,
      mode: fileMode(m, it, localAbs),
      mtime: Number.isFinite(mtime) ? mtime / 1000 : Date.now() / 1000,
    });
  }
  return plan;
}

export interface ApplyOptions {
  node: string;
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
  const res: FilesResult = { uploaded: 0, unchanged: 0, bytes: 0, conflicts: [], kept: [...plan.kept], failed: [], git: [] };
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
    if (o.planOnly) {
      res.git.push({ path: g.target, state: 'not-restored', reason: `the diff ${g.patchFile} is applied when the restore runs` });
      continue;
    }
    try {
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
  const files = plan.entries.filter((e) => e.kind === 'file');
  const links = plan.entries.filter((e) => e.kind === 'symlink');
  const states = plan.entries.length ? await runOperation(t, targetStateOperation(plan.entries.map((e) => e.target)), o.signal) : [];
  const stateOf = new Map<RestoreFileEntry, TargetState>(plan.entries.map((e, i) => [e, states[i]]));
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
      symlinkOperation(linkRecs.map((l) => ({ link: l.e.target, target: l.e.linkTarget!, replace: l.replace }))),
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
          batch.map((x) => ({ name: x.tmp, data: readFileSync(x.e.localAbs!), mode: Number.parseInt(x.e.mode, 8), mtime: x.e.mtime })),
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
        verifyOperation(batch.map((x) => ({ tmp: x.tmp, final: x.e.target, sha256: '-', mode: '644', mtime: 0 }))),
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
