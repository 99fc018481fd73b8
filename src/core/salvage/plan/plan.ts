/**
 * Listing and plan: the listing options, the listing, and each listed file as an item (kept, left, or a cache).
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError, errorMessage } from '../../util/errors';
import { formatBytes } from '../../util/format';
import { runOperation } from '../../remote/operation';
import { SglangServer } from '../../sglang/serverArgv';
import { ListedFile, ListingOptions, SalvageListing, insideRoots, salvageListOperation } from './listing';
import { describeDestRules, destPolicy, probeDestNames } from '../dest/destNames';
import { usableRecordedPath } from '../dest/localNames';
import { accepted as acceptedLeave } from './weights';
import { LEFT_REASON_TEXT, SalvageItem, SalvageManifest } from '../salvageTypes';
import { stepOf } from './stepOf';
import { writeAtomic } from '../dest/runDir';
import { MANIFEST_FILE } from '../manifestSchema';
import { classifyFile, writerInfo } from './classify';
import type { SalvageRun } from '../salvageRun';
import type { GuardSeen } from '../salvageTypes';
import { PREVIOUS_WHY, diagnoseWrite } from '../salvageUtil';
import { isLoopback } from '../../util/net';

/** Folders and model folders an earlier run of this node found (their evidence may be gone: servers stopped). */
function listingOptions(sv: SalvageRun, extraRoots: string[] = []): ListingOptions {
  const prevRoots = (sv.previous?.roots ?? []).map((r) => (typeof r === 'string' ? r : r.path)).filter((r) => r.startsWith('/'));
  return {
    roots: sv.o.roots,
    addRoots: sv.o.addRoots,
    previousRoots: sv.o.roots && sv.o.roots.length ? [] : [...new Set([...prevRoots, ...extraRoots])],
    previousModelDirs: [...new Set([...sv.modelDirs, ...previousModelDirs(sv)])],
    volumes: sv.o.volumes,
    maxDepth: sv.o.maxDepth,
    maxFiles: sv.o.maxFiles,
    // When the node is this machine (the demo node), never salvage the salvage folder itself.
    exclude: [path.resolve(sv.o.base)],
    // the node guard's own state and its --to copy of the work
    prune: sv.guardSeen?.to ? [sv.guardSeen.to] : [],
    excludePids:
      sv.o.transport.describe().transport === 'local' || isLoopback(String(sv.o.transport.describe().host ?? '')) ? [process.pid] : [],
  };
}

/** The model folders the previous run of this node recorded. */
function previousModelDirs(sv: SalvageRun): string[] {
  return (sv.previous as (SalvageManifest & { modelDirs?: string[] }) | null)?.modelDirs ?? [];
}

export async function list(sv: SalvageRun, extraRoots: string[] = []): Promise<SalvageListing> {
  return useListing(sv, await listNode(sv, extraRoots));
}

/** The listing as the node answers it (listingOptions read now), before useListing takes it. */
function listNode(sv: SalvageRun, extraRoots: string[] = []): Promise<SalvageListing> {
  return runOperation(sv.o.transport, salvageListOperation(listingOptions(sv, extraRoots)), sv.o.signal);
}

/** A listing becomes the run's: roots found earlier keep their reasons, model folders add up. */
function useListing(sv: SalvageRun, l: SalvageListing): SalvageListing {
  const prevWhy = new Map((sv.previous?.roots ?? []).filter((r) => typeof r !== 'string').map((r) => [r.path, r.why]));
  for (const r of l.roots) {
    if (r.why.startsWith(PREVIOUS_WHY)) {
      const w = prevWhy.get(r.path) ?? sv.manifest.roots.find((x) => x.path === r.path)?.why;
      if (w && !w.startsWith(PREVIOUS_WHY)) r.why = `${w} (found earlier)`;
    }
  }
  sv.modelDirs = [...new Set([...sv.modelDirs, ...l.modelDirs, ...previousModelDirs(sv)])].sort();
  (sv.manifest as SalvageManifest & { modelDirs?: string[] }).modelDirs = sv.modelDirs;
  return l;
}

/**
 * The plan: the listing starts first, and the node guard's record (`seen`) and the local folder's first writes happen
 * while it runs (three waits become one). The listing leaves out the guard's `--to` copy; when the guard names one,
 * the node is listed again with it left out (rare: the guard runs with `--to`).
 */
export async function planNow(sv: SalvageRun, seen: Promise<GuardSeen | null> = Promise.resolve(null)): Promise<SalvageItem[]> {
  sv.progress('plan', 'Listing files on the node…');
  const listed = listNode(sv);
  // handled below (awaited, or dropped for a second listing); never an unhandled rejection meanwhile
  listed.catch(() => undefined);
  seen.catch(() => undefined);
  try {
    mkdirSync(sv.dir, { recursive: true });
    if (sv.o.gitignore !== false)
      writeFileSync(path.join(sv.dir, '.gitignore'), '# Written by GPU Sessions salvage: keep salvaged files out of git.\n*\n');
    writeAtomic(path.join(sv.dir, MANIFEST_FILE), JSON.stringify(sv.manifest, null, 2) + '\n');
  } catch (e0) {
    const e = diagnoseWrite(sv.dir, e0);
    const code = (e as NodeJS.ErrnoException).code ?? '';
    const why =
      code === 'ENOSPC'
        ? 'the disk is full'
        : code === 'EROFS'
          ? 'the file system is read-only'
          : code === 'EACCES' || code === 'EPERM'
            ? 'permission denied'
            : errorMessage(e);
    throw new GpuSessionsError(
      'io',
      `Cannot write the salvage folder ${sv.dir} (${code || errorMessage(e)}): ${why}. ` +
        `Choose another destination (CLI --dest, setting gpuSessions.salvage.folder); nothing was downloaded.`,
    );
  }
  sv.lastWrite = Date.now();
  await useDestNames(sv);
  sv.guardSeen = await seen;
  sv.listing = useListing(sv, sv.guardSeen?.to ? await listNode(sv) : await listed);
  const L = sv.listing;
  sv.manifest.roots = L.roots;
  // The probe's servers (with their GPUs) are matched with the listing's own now only when it found servers; else
  // nothing waits for the probe here, and the environment snapshot takes them once they come (flows/salvage.ts).
  sv.probed = Promise.resolve(sv.o.servers).then((s) => (sv.probeServers = s ?? []));
  if (L.servers.length) await sv.probed;
  else sv.probed.catch(() => undefined);
  sv.servers = ownServers(sv, L);
  const items: SalvageItem[] = [];
  for (const f of L.files) items.push(itemFor(sv, f));
  for (const c of L.caches) items.push(cacheItem(sv, c));
  if (L.truncated) sv.log.warn(`Listing incomplete: ${L.notListed} entries not listed (${L.bound} bound).`);
  if (sv.servers.length) {
    items.push({
      remotePath: '(running SGLang servers)',
      localPath: 'running-servers.sh',
      kind: 'server-cmdline',
      step: 'scripts',
      size: 0,
      mtime: new Date().toISOString(),
      sha256: null,
      selected: true,
      status: 'pending',
      reason: null,
      leftReason: null,
      s3: 'unknown',
    });
  } else {
    const prev = sv.previous?.items.find((i) => i.kind === 'server-cmdline' && i.status === 'verified');
    if (prev && existsSync(path.join(sv.dir, 'running-servers.sh')))
      items.push({ ...prev, reason: 'written by an earlier run (no server runs now)' });
  }
  sv.manifest.items = items;
  sv.manifest.writers = L.writers.map(writerInfo);
  // The plan's manifest: the base a cut run resumes from with the journal over it (kept until the verdict).
  sv.writeManifest(false);
  return items;
}

/**
 * Probe what the run folder takes as names (case folding, refused characters) once per run, before the first local
 * name is given: names stay byte-exact where it accepts them. Windows keeps its own encoding (it refuses the same
 * everywhere, and 8.3 aliases cannot be probed).
 */
async function useDestNames(sv: SalvageRun): Promise<void> {
  if (sv.localNames.probed || sv.localNames.style === 'win32') return;
  const rules = await probeDestNames(sv.dir);
  sv.localNames.usePolicy(destPolicy(rules));
  const what = describeDestRules(rules);
  if (what)
    sv.log.info(
      `The destination ${sv.dir} ${what}: the names it cannot hold are %-encoded, twins get a suffix (localPath in the manifest).`,
    );
}

/** Servers of this user: the probe's (with GPUs) when they match the listing's own scan. */
function ownServers(sv: SalvageRun, L: SalvageListing): SglangServer[] {
  const own = new Set(L.servers.map((s) => s.pid));
  const fromProbe = sv.probeServers.filter((s) => own.has(s.pid));
  return fromProbe.length === L.servers.length ? fromProbe : L.servers;
}

export function cacheItem(sv: SalvageRun, c: { path: string; files: number; bytes: number }): SalvageItem {
  return {
    remotePath: c.path,
    localPath: null,
    kind: 'cache',
    step: 'data',
    size: c.bytes,
    files: c.files,
    mtime: new Date(0).toISOString(),
    sha256: null,
    selected: false,
    status: 'skipped',
    leftReason: 'cache',
    reason: `${LEFT_REASON_TEXT.cache}: ${c.files} file(s), ${formatBytes(c.bytes)}`,
    s3: 'unknown',
  };
}

/** The local name of a remote path: the one an earlier run of this folder gave it (so it resumes), else a new one. */
function localName(sv: SalvageRun, remotePath: string, area: 'files' | 'git'): string {
  sv.previousLocal ??= new Map((sv.previous?.items ?? []).map((i) => [i.remotePath, i.localPath]));
  const prev = sv.previousLocal.get(remotePath);
  return usableRecordedPath(prev, area) ? prev : sv.localNames.relPath(remotePath, area);
}

export function itemFor(sv: SalvageRun, f: ListedFile): SalvageItem {
  const threshold = sv.manifest.sizeThreshold;
  const base: SalvageItem = {
    remotePath: f.path,
    localPath: null,
    kind: f.kind,
    step: stepOf(f.kind),
    size: f.size,
    mtime: f.mtime,
    sha256: null,
    selected: true,
    status: 'pending',
    reason: null,
    leftReason: null,
    s3: 'unknown',
  };
  if (f.kind === 'symlink') {
    const outside =
      f.linkTarget && f.linkTarget.startsWith('/') && sv.listing && !insideRoots(f.linkTarget, sv.listing.realRoots)
        ? ', and this one leads outside the folders'
        : '';
    return {
      ...base,
      linkTarget: f.linkTarget,
      reason: `symlink → ${f.linkTarget ?? '?'}; the link is recorded in the manifest, never followed (salvage never follows links${outside})`,
    };
  }
  if (f.kind === 'git-repo') {
    // a bad record (a path with `..`) fails this item, not the plan
    try {
      return { ...base, kind: 'git-state', localPath: sv.localNames.claim(localName(sv, f.path, 'git'), f.path).localPath };
    } catch (e) {
      return { ...base, kind: 'git-state', status: 'failed', reason: `cannot be mapped to a local name: ${errorMessage(e)}` };
    }
  }
  try {
    const named = sv.localNames.claim(localName(sv, f.path, 'files'), f.path);
    base.localPath = named.localPath;
    if (named.note) {
      base.localNote = named.note;
      sv.log.warn(`${f.path}: ${named.note}`);
    }
  } catch (e) {
    // accounted for: a record that cannot be mapped is a failed item (the verdict says so), never dropped
    return { ...base, status: 'failed', reason: `cannot be mapped to a local name: ${errorMessage(e)}` };
  }
  const c = classifyFile(f, threshold, sv.modelDirs, sv.listing?.hubMeta);
  if (c.jobWeights) base.jobWeights = true;
  if (c.leftReason === 'origin-unknown' && acceptedLeave(f.path, sv.o.leave)) base.leaveAccepted = true;
  const taken = sv.o.includeLarge && (c.leftReason === 'large' || c.leftReason === 'on-the-hub' || c.leftReason === 'origin-unknown');
  if (c.leftReason && !taken) return { ...base, selected: false, leftReason: c.leftReason, reason: c.reason };
  return base;
}
