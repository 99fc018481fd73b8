/**
 * Listing and plan: the listing options, the listing, and each listed file as an item (kept, left, or a cache).
 * Functions of their inputs; the orchestrator (flows/salvage.ts) keeps what they return.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError, errorMessage } from '../../util/errors';
import { formatBytes } from '../../util/format';
import { runOperation } from '../../remote/operation';
import { SglangServer } from '../../sglang/serverArgv';
import { ListedFile, ListingOptions, RootInfo, SalvageListing, insideRoots, salvageListOperation } from './listing';
import { describeDestRules, destPolicy, probeDestNames } from '../dest/destNames';
import { usableRecordedPath } from '../dest/localNames';
import { accepted as acceptedLeave } from './weights';
import { LEFT_REASON_TEXT, SalvageItem, SalvageManifest, SalvageOptions } from '../salvageTypes';
import { stepOf } from './stepOf';
import { writeAtomic } from '../dest/runDir';
import { MANIFEST_FILE } from '../manifestSchema';
import { classifyFile } from './classify';
import type { PhaseEnv } from '../phase';
import type { Logger } from '../../util/logger';
import type { LocalNames } from '../dest/paths';
import { PREVIOUS_WHY, diagnoseWrite } from '../salvageUtil';
import { isLoopback } from '../../util/net';

/** What the listing needs of the run: what an earlier run of this node found, and the node guard's copy to leave out. */
export interface ListingInput {
  readonly previous: SalvageManifest | null;
  /** Model folders found so far (this run's listings and the previous run's). */
  readonly modelDirs: readonly string[];
  /** The node guard's `--to` copy of the work: never listed. */
  readonly guardTo: string | null;
}

/** Folders and model folders an earlier run of this node found (their evidence may be gone: servers stopped). */
function listingOptions(env: PhaseEnv, input: ListingInput, extraRoots: string[] = []): ListingOptions {
  const { o } = env;
  const prevRoots = (input.previous?.roots ?? []).map((r) => (typeof r === 'string' ? r : r.path)).filter((r) => r.startsWith('/'));
  return {
    roots: o.roots,
    addRoots: o.addRoots,
    previousRoots: o.roots && o.roots.length ? [] : [...new Set([...prevRoots, ...extraRoots])],
    previousModelDirs: [...new Set([...input.modelDirs, ...previousModelDirs(input.previous)])],
    volumes: o.volumes,
    maxDepth: o.maxDepth,
    maxFiles: o.maxFiles,
    // When the node is this machine (the demo node), never salvage the salvage folder itself.
    exclude: [path.resolve(o.base)],
    // the node guard's own state and its --to copy of the work
    prune: input.guardTo ? [input.guardTo] : [],
    excludePids: o.transport.describe().transport === 'local' || isLoopback(String(o.transport.describe().host ?? '')) ? [process.pid] : [],
  };
}

/** The model folders the previous run of this node recorded. */
function previousModelDirs(previous: SalvageManifest | null): string[] {
  return (previous as (SalvageManifest & { modelDirs?: string[] }) | null)?.modelDirs ?? [];
}

/** The listing as the node answers it (before `takeListing`). */
export function listNode(env: PhaseEnv, input: ListingInput, extraRoots: string[] = []): Promise<SalvageListing> {
  return runOperation(env.o.transport, salvageListOperation(listingOptions(env, input, extraRoots)), env.o.signal);
}

/**
 * A listing as the run takes it: roots found earlier keep their reasons (`roots`: the run's so far), and the model
 * folders add up (returned, for the run to keep).
 */
export function takeListing(
  input: ListingInput,
  roots: readonly RootInfo[],
  l: SalvageListing,
): { listing: SalvageListing; modelDirs: string[] } {
  const prevWhy = new Map((input.previous?.roots ?? []).filter((r) => typeof r !== 'string').map((r) => [r.path, r.why]));
  for (const r of l.roots) {
    if (r.why.startsWith(PREVIOUS_WHY)) {
      const w = prevWhy.get(r.path) ?? roots.find((x) => x.path === r.path)?.why;
      if (w && !w.startsWith(PREVIOUS_WHY)) r.why = `${w} (found earlier)`;
    }
  }
  const modelDirs = [...new Set([...input.modelDirs, ...l.modelDirs, ...previousModelDirs(input.previous)])].sort();
  return { listing: l, modelDirs };
}

/**
 * The run folder's first writes, made while the node is listed: the folder, its `.gitignore`, and the plan's first
 * manifest. A folder that cannot be written stops the salvage before anything is downloaded, saying why.
 */
export function prepareRunFolder(dir: string, manifest: SalvageManifest, gitignore: boolean): void {
  try {
    mkdirSync(dir, { recursive: true });
    if (gitignore) writeFileSync(path.join(dir, '.gitignore'), '# Written by GPU Sessions salvage: keep salvaged files out of git.\n*\n');
    writeAtomic(path.join(dir, MANIFEST_FILE), JSON.stringify(manifest, null, 2) + '\n');
  } catch (e0) {
    const e = diagnoseWrite(dir, e0);
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
      `Cannot write the salvage folder ${dir} (${code || errorMessage(e)}): ${why}. ` +
        `Choose another destination (CLI --dest, setting gpuSessions.salvage.folder); nothing was downloaded.`,
    );
  }
}

/** What the plan found: its items, the run's SGLang servers, and the probe's servers once it answers. */
interface PlanResult {
  items: SalvageItem[];
  servers: SglangServer[];
  /** The probe's servers (with their GPUs); awaited here only when the listing found servers. */
  probed: Promise<SglangServer[]>;
}

/** The plan of a listing (taken by the run): each listed file as an item, kept, left or a cache. */
export async function planItems(env: PhaseEnv, cx: ItemContext, previous: SalvageManifest | null): Promise<PlanResult> {
  const L = cx.listing;
  // The probe's servers (with their GPUs) are matched with the listing's own now only when it found servers; else
  // nothing waits for the probe here, and the environment snapshot takes them once they come (flows/salvage.ts).
  const probed = Promise.resolve(env.o.servers).then((s) => s ?? []);
  let servers: SglangServer[] = [];
  if (L.servers.length) servers = ownServers(L, await probed);
  else probed.catch(() => undefined);
  const items: SalvageItem[] = [];
  for (const f of L.files) items.push(itemFor(cx, f));
  for (const c of L.caches) items.push(cacheItem(c));
  if (L.truncated) env.log.warn(`Listing incomplete: ${L.notListed} entries not listed (${L.bound} bound).`);
  if (servers.length) {
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
    const prev = previous?.items.find((i) => i.kind === 'server-cmdline' && i.status === 'verified');
    if (prev && existsSync(path.join(env.dir, 'running-servers.sh')))
      items.push({ ...prev, reason: 'written by an earlier run (no server runs now)' });
  }
  return { items, servers, probed };
}

/**
 * Probe what the run folder takes as names (case folding, refused characters) once per run, before the first local
 * name is given: names stay byte-exact where it accepts them. Windows keeps its own encoding (it refuses the same
 * everywhere, and 8.3 aliases cannot be probed).
 */
export async function useDestNames(env: PhaseEnv, localNames: LocalNames): Promise<void> {
  if (localNames.probed || localNames.style === 'win32') return;
  const rules = await probeDestNames(env.dir);
  localNames.usePolicy(destPolicy(rules));
  const what = describeDestRules(rules);
  if (what)
    env.log.info(
      `The destination ${env.dir} ${what}: the names it cannot hold are %-encoded, twins get a suffix (localPath in the manifest).`,
    );
}

/** Servers of this user: the probe's (with GPUs) when they match the listing's own scan. */
function ownServers(L: SalvageListing, probeServers: SglangServer[]): SglangServer[] {
  const own = new Set(L.servers.map((s) => s.pid));
  const fromProbe = probeServers.filter((s) => own.has(s.pid));
  return fromProbe.length === L.servers.length ? fromProbe : L.servers;
}

export function cacheItem(c: { path: string; files: number; bytes: number }): SalvageItem {
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

/**
 * Local names, given once per remote path: the one an earlier run of this folder gave it (so it resumes), else a new
 * one from `LocalNames` (which keeps two remote files from ever sharing one).
 */
export class ItemNamer {
  private previousLocal: Map<string, string | null> | null = null;
  constructor(
    readonly localNames: LocalNames,
    private readonly previous: SalvageManifest | null,
  ) {}

  private localName(remotePath: string, area: 'files' | 'git'): string {
    this.previousLocal ??= new Map((this.previous?.items ?? []).map((i) => [i.remotePath, i.localPath]));
    const prev = this.previousLocal.get(remotePath);
    return usableRecordedPath(prev, area) ? prev : this.localNames.relPath(remotePath, area);
  }

  claim(remotePath: string, area: 'files' | 'git'): ReturnType<LocalNames['claim']> {
    return this.localNames.claim(this.localName(remotePath, area), remotePath);
  }
}

/** What turning a listed file into an item reads: the listing it came from and the run's choices. */
export interface ItemContext {
  readonly listing: SalvageListing;
  readonly namer: ItemNamer;
  readonly modelDirs: readonly string[];
  readonly sizeThreshold: number;
  readonly o: Pick<SalvageOptions, 'leave' | 'includeLarge'>;
  readonly log: Logger;
}

export function itemFor(cx: ItemContext, f: ListedFile): SalvageItem {
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
      f.linkTarget && f.linkTarget.startsWith('/') && !insideRoots(f.linkTarget, cx.listing.realRoots)
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
      return { ...base, kind: 'git-state', localPath: cx.namer.claim(f.path, 'git').localPath };
    } catch (e) {
      return { ...base, kind: 'git-state', status: 'failed', reason: `cannot be mapped to a local name: ${errorMessage(e)}` };
    }
  }
  try {
    const named = cx.namer.claim(f.path, 'files');
    base.localPath = named.localPath;
    if (named.note) {
      base.localNote = named.note;
      cx.log.warn(`${f.path}: ${named.note}`);
    }
  } catch (e) {
    // accounted for: a record that cannot be mapped is a failed item (the verdict says so), never dropped
    return { ...base, status: 'failed', reason: `cannot be mapped to a local name: ${errorMessage(e)}` };
  }
  const c = classifyFile(f, cx.sizeThreshold, cx.modelDirs, cx.listing.hubMeta);
  if (c.jobWeights) base.jobWeights = true;
  if (c.leftReason === 'origin-unknown' && acceptedLeave(f.path, cx.o.leave)) base.leaveAccepted = true;
  const taken = cx.o.includeLarge && (c.leftReason === 'large' || c.leftReason === 'on-the-hub' || c.leftReason === 'origin-unknown');
  if (c.leftReason && !taken) return { ...base, selected: false, leftReason: c.leftReason, reason: c.reason };
  return base;
}
