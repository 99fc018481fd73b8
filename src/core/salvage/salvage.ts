/**
 * Salvage Node: the checklist the seeds ran by hand before a rented node was shut down.
 *
 *   plan → (review) → scripts → logs & progress → configs & patches → data → final pass → S3 → environment → verdict
 *
 * Everything lands in `<base>/<node>/<timestamp>/`: the files mirrored under `files/` (the node's bytes,
 * exactly), git state under `git/`, `running-servers.sh`, `environment.json|md`, `salvage-manifest.json`
 * (rewritten atomically as items finish, so a cancelled or crashed run leaves a consistent manifest),
 * `SALVAGE.md` and a `.gitignore` holding `*`. A rerun continues in the latest folder of the node: verified
 * files whose local bytes still hash the same and whose remote size and mtime did not change are not
 * transferred again; files that only grew get their appended bytes (the prefix verified first).
 *
 * The verdict is `safe` only when every selected item is verified, the listing is complete, and nothing
 * under the folders is still being written: while SGLang servers or other writers run it is `unsafe` with
 * the reason `still-running`, however quiet their logs happen to be. `stopServers` / `stopWriters` stop
 * them first (after writing the servers' command lines), then a final pass fetches what changed.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { formatBytes } from '../util/format';
import type { Logger } from '../util/logger';
import { nullLogger } from '../util/logger';
import { runOperation } from '../remote/operation';
import type { SglangServer } from '../sglang/serverArgv';
import { shComment, shq, shJoin } from '../remote/quote';
import { mdCodeCell, mdText } from '../util/terminal';
import { redactArgv, redactText } from '../util/redact';
import type { S3Mapping, S3Status, S3Target } from './s3';
import type { AbortLike, Transport } from '../ssh/transport';
import type { PendingUpload, UploadResume } from './upload';
import {
  LeftReason,
  ListedFile,
  ListingOptions,
  RootInfo,
  SalvageKind,
  SalvageListing,
  Writer,
  insideRoots,
  isRedownloadable,
  isSecretStore,
  salvageListOperation,
} from './listing';
import { gitStateOperation } from './gitState';
import { LocalNames, ensureParent, insideDest, localRelPath } from './paths';
import { TransferResult, downloadAppend, downloadBatch, downloadOne, remoteHashes, remoteStats } from './transfer';
import { SecretHit, looksLikeText, scanSecrets } from './secretScan';
import { BatchWriter } from './batchWriter';

export type StepId = 'scripts' | 'logs' | 'configs' | 'data' | 's3' | 'environment';
export type StepStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped';
export type ItemStatus = 'verified' | 'failed' | 'skipped' | 'pending';

export const STEPS: Array<{ id: StepId; title: string }> = [
  { id: 'scripts', title: 'Scripts (launch, shell, Python) and the running servers’ command lines' },
  { id: 'logs', title: 'Logs and progress data' },
  { id: 'configs', title: 'Configs, patches and git state' },
  { id: 'data', title: 'Data and every other file under the size threshold' },
  { id: 's3', title: 'S3: what is already safely stored' },
  { id: 'environment', title: 'Environment snapshot' },
];

/** Why the verdict is not safe. */
export type ReasonCode = 'still-running' | 'changed-during-run' | 'listing-truncated' | 'failed-items' | 'lost-items';

export interface SalvageItem {
  remotePath: string;
  localPath: string | null;
  kind: SalvageKind | 'git-state' | 'server-cmdline';
  step: StepId;
  size: number;
  mtime: string;
  sha256: string | null;
  md5?: string | null;
  /** SHA-256 of the local file when it differs from the remote one (written redacted with --redact). */
  localSha256?: string | null;
  redacted?: boolean;
  /** The node's copy changed after it was verified (a live log still growing, a rewritten file). */
  changedAfterVerify?: boolean;
  selected: boolean;
  status: ItemStatus;
  reason: string | null;
  /** Why it stays on the node (null: selected). */
  leftReason: LeftReason | null;
  /** Secrets found in the copy: line numbers and kinds, never values. */
  secrets?: SecretHit[];
  /** Cache folders: how many files they hold. */
  files?: number;
  /** Weights the job wrote (checkpoints, adapters, a trained drafter): not re-downloadable. */
  jobWeights?: boolean;
  linkTarget?: string;
  /** The file was removed from the node after it was saved (nothing left there to lose). */
  goneFromNode?: boolean;
  /** When this item was last verified against the node. */
  syncedAt?: string | null;
  s3: S3Status;
  s3Key?: string | null;
  /** Why the local name differs from the remote one (a case or Unicode-normalisation twin). */
  localNote?: string;
}

export interface WriterInfo {
  pid: number;
  /** Command line, secrets redacted. */
  command: string;
  writes: string[];
  server: boolean;
}

export interface SalvageManifest {
  version: 1;
  node: string;
  host: Record<string, string | number | undefined>;
  startedAt: string;
  finishedAt: string | null;
  dest: string;
  roots: RootInfo[];
  sizeThreshold: number;
  s3: { target: string; endpoint?: string; objects: number; bytes: number; error?: string } | null;
  steps: Record<StepId, { status: StepStatus; reason?: string }>;
  items: SalvageItem[];
  verdict: 'safe' | 'unsafe' | null;
  reasons: ReasonCode[];
  reasonDetails: Array<{ code: ReasonCode; message: string }>;
  writers: WriterInfo[];
  stopped: Array<{ pid: number; port: number | null; stopped: boolean; message: string }>;
  listing: { truncated: boolean; notListed: number; bound: string | null; maxFiles: number; maxDepth: number } | null;
  stats: { bytesTransferred: number; filesTransferred: number };
  redact: boolean;
  lost: Array<{ remotePath: string; size: number; why: string }>;
  leftByChoice: Array<{ remotePath: string; size: number; s3: S3Status }>;
  environment?: { json: string; md: string; summary: string } | null;
  /** With a rental deadline: the bulk data's plan against it, stated before the bulk data starts. */
  deadline?: DeadlinePlan | null;
  /** Keep Node Salvaged: when the last sync finished and what was written on the node since. */
  watch?: { lastSyncedAt: string | null; atRiskBytes: number; syncs: number; intervalS: number } | null;
  /** The node vanished during a watch: the last synced state is final. */
  /** Node → S3 uploads of this run. */
  uploads?: Array<{ remotePath: string; s3Object: string; ok: boolean; parts: number; bytes: number; reason: string | null }>;
  vanished?: { at: string; lastSyncedAt: string | null; atRiskBytes: number; atRiskFiles: number; error: string } | null;
}

export interface SalvageProgress {
  step: StepId | 'plan' | 'verdict' | 'stop' | 'final';
  message: string;
  bytesDone: number;
  bytesTotal: number;
  filesDone: number;
  filesTotal: number;
}

/** What a review answers: the paths to take, `undefined` for the preselection, `null` to download nothing. */
export type ReviewAnswer = string[] | undefined | null;

export interface SalvageOptions {
  node: string;
  transport: Transport;
  /** Base folder; the run goes to `<base>/<node>/<timestamp>/`. */
  base: string;
  /** Replace the folder list (`--roots`). */
  roots?: string[];
  /** Add folders to the evidence (`--add-root`). */
  addRoots?: string[];
  /** Provider volumes to look at (default /workspace, /data, /scratch, /ephemeral, /mnt/*). */
  volumes?: string[];
  maxDepth?: number;
  maxFiles?: number;
  /** Files above this size are listed but not downloaded unless chosen. Default 256 MiB. */
  sizeThreshold?: number;
  /** Servers from the probe (richer: GPUs); only those of this user's processes are used. */
  servers?: SglangServer[];
  s3?: (S3Target & { mappings?: S3Mapping[] }) | null;
  /**
   * The face's review of the plan (`run()` calls it between plan and execute): the remote paths to download,
   * `undefined` to take the preselection as it is, or `null` to stop there (nothing is downloaded).
   */
  review?: (items: SalvageItem[], manifest: SalvageManifest) => Promise<ReviewAnswer>;
  /** Preselect the large files and re-downloadable weights too (`--include-large`). */
  includeLarge?: boolean;
  /** Write redacted copies of files with secrets (marked in the manifest). Default: the node's exact bytes. */
  redact?: boolean;
  /** @deprecated copies are exact unless `redact`; kept for callers of the old option. */
  keepSecrets?: boolean;
  /** Write `.gitignore` (`*`) into the run folder. Default true. */
  gitignore?: boolean;
  /** Stop the SGLang servers (after writing their command lines) before the final pass. */
  stopServers?: boolean;
  /** Drain the servers (running requests reach 0) before stopping them. */
  drain?: boolean;
  /** Also stop the other processes that write under the folders. */
  stopWriters?: boolean;
  /** Asked before other writers are stopped (VS Code names each); false leaves them running. */
  confirmStopWriters?: (writers: WriterInfo[]) => Promise<boolean>;
  /** Upload what S3 is missing or holds differently, from the node, with presigned URLs (needs `s3`). */
  uploadMissing?: boolean;
  /** Multipart above this many bytes (default 64 MiB). */
  partSize?: number;
  /** The node's rental deadline: work goes in order of value per byte, and what will not make it is named. */
  deadline?: Date | null;
  concurrency?: number;
  signal?: AbortLike;
  onProgress?: (p: SalvageProgress) => void;
  log?: Logger;
  now?: Date;
  /** Environment snapshot; injected so the core stays testable. Default: ../snapshot takeSnapshot. */
  snapshot?: (t: Transport, node: string, servers: SglangServer[]) => Promise<{ json: unknown; markdown: string; summary: string }>;
}

const SMALL_FILE = 4 * 1024 * 1024;
export const BATCH_BYTES = 48 * 1024 * 1024;
export const BATCH_FILES = 2000;
/** Below this many files per stream, fewer streams (a batch costs a few round trips to start). */
const BATCH_MIN_FILES = 50;
const SCAN_LIMIT = 32 * 1024 * 1024;

export const LEFT_REASON_TEXT: Record<LeftReason, string> = {
  cache: 'cache or installed software (re-creatable)',
  large: 'larger than the size threshold',
  'redownloadable-weights': 'model weights that can be downloaded again',
  'secret-store': 'private key or credentials store: never copied',
  deselected: 'not selected',
};

/** The bulk data against the rental deadline, from the rate measured on the steps before it. */
export interface DeadlinePlan {
  at: string;
  secondsLeft: number;
  /** Bytes per second measured so far in this run; null when too little has travelled to tell. */
  rateBps: number | null;
  remainingBytes: number;
  /** Seconds the remaining bytes need at that rate; null when the rate is unknown. */
  etaS: number | null;
  fits: boolean | null;
  /** In transfer order, what would still be travelling when the rental ends. */
  wontMakeIt: Array<{ remotePath: string; size: number }>;
}

/**
 * Small files (in transfer order) into tar batches: each at most BATCH_FILES files and BATCH_BYTES, as
 * few as that allows but at least one per parallel stream when there are enough files, their number a
 * multiple of the streams and their file counts even, so the streams run side by side and end together.
 */
export function planBatches<T extends { size: number }>(small: T[], streams: number): T[][] {
  if (small.length === 0) return [];
  const bytes = small.reduce((a, b) => a + b.size, 0);
  const s = Math.max(1, Math.min(streams, Math.floor(small.length / BATCH_MIN_FILES)));
  let nb = Math.max(Math.ceil(small.length / BATCH_FILES), Math.ceil(bytes / BATCH_BYTES), s);
  nb = Math.ceil(nb / s) * s;
  const out: T[][] = [];
  let cur: T[] = [];
  let curBytes = 0;
  let part = 0;
  small.forEach((f, i) => {
    // File i belongs to batch floor(i·nb/N) (sizes differ by at most one), cut earlier by the byte bound.
    const p = Math.floor((i * nb) / small.length);
    if (cur.length && (p !== part || curBytes + f.size > BATCH_BYTES)) {
      out.push(cur);
      cur = [];
      curBytes = 0;
    }
    part = p;
    cur.push(f);
    curBytes += f.size;
  });
  if (cur.length) out.push(cur);
  return out;
}

/** Value per byte: scripts, configs, progress before logs, logs before bulk data; smaller first within a class. */
export function byValuePerByte(a: SalvageItem, b: SalvageItem): number {
  const rank = (i: SalvageItem) =>
    i.kind === 'progress' ? 0 : i.step === 'scripts' || i.step === 'configs' ? 1 : i.step === 'logs' ? 2 : 3;
  return rank(a) - rank(b) || a.size - b.size;
}

/**
 * What fits before the deadline at `rateBps`, items in transfer order (`items` already sorted): the first
 * item whose cumulative bytes would finish after `secondsLeft`, and all after it, will not make it.
 */
export function planAgainstDeadline(items: SalvageItem[], at: Date, nowMs: number, rateBps: number | null): DeadlinePlan {
  const secondsLeft = Math.round((at.getTime() - nowMs) / 1000);
  const remainingBytes = items.reduce((a, b) => a + b.size, 0);
  const etaS = rateBps && rateBps > 0 ? remainingBytes / rateBps : null;
  const wontMakeIt: DeadlinePlan['wontMakeIt'] = [];
  if (secondsLeft <= 0) wontMakeIt.push(...items.map((i) => ({ remotePath: i.remotePath, size: i.size })));
  else if (etaS !== null) {
    let cum = 0;
    for (const i of items) {
      cum += i.size;
      if (cum / rateBps! > secondsLeft) wontMakeIt.push({ remotePath: i.remotePath, size: i.size });
    }
  }
  return {
    at: at.toISOString(),
    secondsLeft,
    rateBps: rateBps && rateBps > 0 ? Math.round(rateBps) : null,
    remainingBytes,
    etaS: etaS === null ? null : Math.round(etaS),
    fits: secondsLeft <= 0 ? remainingBytes === 0 : etaS === null ? null : wontMakeIt.length === 0,
    wontMakeIt,
  };
}

export function stepOf(kind: SalvageItem['kind']): StepId {
  switch (kind) {
    case 'script':
    case 'launch-script':
    case 'python':
    case 'server-cmdline':
      return 'scripts';
    case 'log':
    case 'progress':
      return 'logs';
    case 'config':
    case 'patch':
    case 'git-repo':
    case 'git-state':
      return 'configs';
    default:
      return 'data';
  }
}

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

export function safeNodeName(n: string): string {
  return n.replace(/[^A-Za-z0-9._@-]+/g, '_').replace(/^\.+/, '_') || 'node';
}

/**
 * The folder to use: the latest run of this node is continued (a rerun on an unchanged node transfers
 * nothing); a new timestamped folder only for the first run.
 */
export function chooseRunDir(base: string, node: string, now: Date): { dir: string; previous: SalvageManifest | null } {
  const nodeDir = path.join(path.resolve(base), safeNodeName(node));
  if (existsSync(nodeDir)) {
    const runs = readdirSync(nodeDir)
      .filter((d) => /^\d{8}-\d{6}$/.test(d))
      .sort();
    const last = runs[runs.length - 1];
    if (last) {
      const mf = path.join(nodeDir, last, 'salvage-manifest.json');
      try {
        return { dir: path.join(nodeDir, last), previous: JSON.parse(readFileSync(mf, 'utf8')) as SalvageManifest };
      } catch {
        // No readable manifest: the run died before writing one; reuse the folder.
        return { dir: path.join(nodeDir, last), previous: null };
      }
    }
  }
  return { dir: path.join(nodeDir, stamp(now)), previous: null };
}

async function sha256File(abs: string, limit?: number): Promise<string | null> {
  return new Promise((resolve) => {
    const h = createHash('sha256');
    const s = createReadStream(abs, limit !== undefined ? { start: 0, end: limit - 1 } : {});
    s.on('data', (b) => h.update(b));
    s.on('end', () => resolve(h.digest('hex')));
    s.on('error', () => resolve(null));
  });
}

function writeAtomic(abs: string, content: string): void {
  const tmp = abs + '.gs-tmp';
  writeFileSync(tmp, content);
  renameSync(tmp, abs);
}

/** A launch script that reproduces the running servers (argv redacted). */
export function renderServersScript(node: string, servers: SglangServer[]): string {
  const L = [
    '#!/bin/bash',
    `# SGLang servers that were running on ${shComment(node)} when it was salvaged (${new Date().toISOString()}).`,
    '# Secrets in flags are redacted. Review before running.',
    'set -e',
    '',
  ];
  for (const s of servers) {
    const argv = redactArgv(s.args);
    // Comments hold numbers and shComment() text only: a log path with a newline cannot end the comment.
    L.push(
      `# pid ${s.pid}, port ${s.port}${s.gpus.length ? `, GPU ${s.gpus.join(',')}` : ''}${s.logFile ? `, log ${shComment(s.logFile)}` : ''}`,
    );
    if (s.cwd) L.push(`cd ${shq(s.cwd)}`);
    const env =
      s.cudaVisibleDevices !== null && s.cudaVisibleDevices !== undefined ? `CUDA_VISIBLE_DEVICES=${shq(s.cudaVisibleDevices)} ` : '';
    L.push(`${env}nohup ${shJoin(argv)} > ${shq(s.logFile ?? `sglang_${s.port}.log`)} 2>&1 &`, '');
  }
  return L.join('\n');
}

export function writerInfo(w: Writer): WriterInfo {
  return { pid: w.pid, command: redactText(redactArgv(w.argv).join(' ')).slice(0, 400), writes: w.writes.slice(0, 50), server: w.server };
}

/** What a listed file is: selected, or left on the node with a reason. */
export function classifyFile(
  f: ListedFile,
  threshold: number,
  modelDirs: string[],
): { leftReason: LeftReason | null; jobWeights: boolean; reason: string | null } {
  if (isSecretStore(f.path)) return { leftReason: 'secret-store', jobWeights: false, reason: LEFT_REASON_TEXT['secret-store'] };
  if (isRedownloadable(f.path, modelDirs))
    return {
      leftReason: 'redownloadable-weights',
      jobWeights: false,
      reason: 'in a model folder the servers only read (or a Hugging Face cache): can be downloaded again',
    };
  const jobWeights = f.kind === 'model';
  if (f.size > threshold)
    return {
      leftReason: 'large',
      jobWeights,
      reason: `larger than the ${formatBytes(threshold)} threshold${jobWeights ? ' — weights the job wrote, NOT re-downloadable' : ''}: listed, not downloaded unless chosen (--include-large)`,
    };
  return { leftReason: null, jobWeights, reason: null };
}
interface LocalBase {
  /** Bytes of the verified local copy. */
  size: number;
  mtime: string;
  sha256: string;
  /** SHA-256 of the local file (differs from sha256 when it was written redacted). */
  localSha256: string;
  redacted: boolean;
  md5: string | null;
  /** Trusted without re-hashing (written by this run). */
  trusted: boolean;
}

export class Salvager {
  readonly manifest: SalvageManifest;
  readonly dir: string;
  private readonly log: Logger;
  private bytesDone = 0;
  private bytesTotal = 0;
  private filesDone = 0;
  private filesTotal = 0;
  private lastWrite = 0;
  private writer: BatchWriter | null = null;
  /** How long the last manifest write took (ms). */
  private lastSaveMs = 0;
  private fatal: string | null = null;
  private listing: SalvageListing | null = null;
  private readonly previous: SalvageManifest | null;
  private readonly bases = new Map<string, LocalBase>();
  private servers: SglangServer[] = [];
  private modelDirs: string[] = [];
  private readonly redact: boolean;

  constructor(private readonly o: SalvageOptions) {
    this.log = o.log ?? nullLogger;
    const now = o.now ?? new Date();
    const c = chooseRunDir(o.base, o.node, now);
    this.dir = c.dir;
    this.previous = c.previous && Array.isArray(c.previous.items) ? c.previous : null;
    this.redact = o.redact ?? false;
    const steps = Object.fromEntries(STEPS.map((s) => [s.id, { status: 'pending' as StepStatus }])) as SalvageManifest['steps'];
    this.manifest = {
      version: 1,
      node: o.node,
      host: o.transport.describe(),
      startedAt: now.toISOString(),
      finishedAt: null,
      dest: this.dir,
      roots: [],
      sizeThreshold: o.sizeThreshold ?? 256 * 1024 * 1024,
      s3: null,
      steps,
      items: [],
      verdict: null,
      reasons: [],
      reasonDetails: [],
      writers: [],
      stopped: [],
      listing: null,
      stats: { bytesTransferred: 0, filesTransferred: 0 },
      redact: this.redact,
      lost: [],
      leftByChoice: [],
      environment: null,
    };
  }

  private progress(step: SalvageProgress['step'], message: string): void {
    this.o.onProgress?.({
      step,
      message,
      bytesDone: this.bytesDone,
      bytesTotal: this.bytesTotal,
      filesDone: this.filesDone,
      filesTotal: this.filesTotal,
    });
  }

  /**
   * The manifest, atomically. Unforced saves are throttled: at most one per 300 ms, and never more than a
   * tenth of the time (a manifest of thousands of files takes tens of milliseconds to write).
   */
  private save(force = false): void {
    const now = Date.now();
    if (!force && now - this.lastWrite < Math.max(300, 10 * this.lastSaveMs)) return;
    this.lastWrite = now;
    try {
      writeAtomic(path.join(this.dir, 'salvage-manifest.json'), JSON.stringify(this.manifest, null, 2) + '\n');
      this.lastSaveMs = Date.now() - now;
    } catch (e) {
      this.log.error(`Could not write the manifest: ${errorMessage(e)}`);
      if (!this.fatal) this.fatal = `cannot write to ${this.dir}: ${errorMessage(e)}`;
    }
  }

  private checkCancel(): void {
    if (this.o.signal?.aborted) throw new GpuSessionsError('cancelled', 'Salvage cancelled.');
  }

  /** Folders and model folders an earlier run of this node found (their evidence may be gone: servers stopped). */
  private listingOptions(extraRoots: string[] = []): ListingOptions {
    const prevRoots = (this.previous?.roots ?? []).map((r) => (typeof r === 'string' ? r : r.path)).filter((r) => r.startsWith('/'));
    return {
      roots: this.o.roots,
      addRoots: this.o.addRoots,
      previousRoots: this.o.roots && this.o.roots.length ? [] : [...new Set([...prevRoots, ...extraRoots])],
      volumes: this.o.volumes,
      maxDepth: this.o.maxDepth,
      maxFiles: this.o.maxFiles,
      // When the node is this machine (the demo node), never salvage the salvage folder itself.
      exclude: [path.resolve(this.o.base)],
      excludePids:
        this.o.transport.describe().transport === 'local' || isLoopback(String(this.o.transport.describe().host ?? ''))
          ? [process.pid]
          : [],
    };
  }

  private async list(extraRoots: string[] = []): Promise<SalvageListing> {
    const l = await runOperation(this.o.transport, salvageListOperation(this.listingOptions(extraRoots)), this.o.signal);
    const prevWhy = new Map((this.previous?.roots ?? []).filter((r) => typeof r !== 'string').map((r) => [r.path, r.why]));
    for (const r of l.roots) {
      if (r.why.startsWith(PREVIOUS_WHY)) {
        const w = prevWhy.get(r.path) ?? this.manifest.roots.find((x) => x.path === r.path)?.why;
        if (w && !w.startsWith(PREVIOUS_WHY)) r.why = `${w} (found earlier)`;
      }
    }
    const prevModels = (this.previous as (SalvageManifest & { modelDirs?: string[] }) | null)?.modelDirs ?? [];
    this.modelDirs = [...new Set([...this.modelDirs, ...l.modelDirs, ...prevModels])].sort();
    (this.manifest as SalvageManifest & { modelDirs?: string[] }).modelDirs = this.modelDirs;
    return l;
  }

  /** List the node and build the plan (with preselection). */
  async plan(): Promise<SalvageItem[]> {
    try {
      mkdirSync(this.dir, { recursive: true });
      if (this.o.gitignore !== false)
        writeFileSync(path.join(this.dir, '.gitignore'), '# Written by GPU Sessions salvage: keep salvaged files out of git.\n*\n');
      writeAtomic(path.join(this.dir, 'salvage-manifest.json'), JSON.stringify(this.manifest, null, 2) + '\n');
    } catch (e0) {
      const e = diagnoseWrite(this.dir, e0);
      const code = (e as NodeJS.ErrnoException).code ?? '';
      throw new GpuSessionsError(
        'io',
        `Cannot write the salvage folder ${this.dir} (${code || errorMessage(e)}): ${code === 'ENOSPC' ? 'the disk is full' : code === 'EROFS' ? 'the file system is read-only' : code === 'EACCES' || code === 'EPERM' ? 'permission denied' : errorMessage(e)}. Choose another destination (CLI --dest, setting gpuSessions.salvage.folder); nothing was downloaded.`,
      );
    }
    this.lastWrite = Date.now();
    this.progress('plan', 'Listing files on the node…');
    this.listing = await this.list();
    const L = this.listing;
    this.manifest.roots = L.roots;
    this.servers = this.ownServers(L);
    const items: SalvageItem[] = [];
    for (const f of L.files) items.push(this.itemFor(f));
    for (const c of L.caches) items.push(this.cacheItem(c));
    if (L.truncated) this.log.warn(`Listing incomplete: ${L.notListed} entries not listed (${L.bound} bound).`);
    if (this.servers.length) {
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
      const prev = this.previous?.items.find((i) => i.kind === 'server-cmdline' && i.status === 'verified');
      if (prev && existsSync(path.join(this.dir, 'running-servers.sh')))
        items.push({ ...prev, reason: 'written by an earlier run (no server runs now)' });
    }
    this.manifest.items = items;
    this.manifest.writers = L.writers.map(writerInfo);
    this.save(true);
    return items;
  }

  /** Servers of this user: the probe's (with GPUs) when they match the listing's own scan. */
  private ownServers(L: SalvageListing): SglangServer[] {
    const own = new Set(L.servers.map((s) => s.pid));
    const fromProbe = (this.o.servers ?? []).filter((s) => own.has(s.pid));
    return fromProbe.length === L.servers.length ? fromProbe : L.servers;
  }

  private cacheItem(c: { path: string; files: number; bytes: number }): SalvageItem {
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

  /** Local names given so far (case- and normalisation-folded), so two remote files never share one. */
  private readonly localNames = new LocalNames();

  private itemFor(f: ListedFile): SalvageItem {
    const threshold = this.manifest.sizeThreshold;
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
        f.linkTarget && f.linkTarget.startsWith('/') && this.listing && !insideRoots(f.linkTarget, this.listing.realRoots)
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
        return { ...base, kind: 'git-state', localPath: this.localNames.claim(localRelPath(f.path, 'git'), f.path).localPath };
      } catch (e) {
        return { ...base, kind: 'git-state', selected: false, status: 'failed', reason: errorMessage(e) };
      }
    }
    try {
      const named = this.localNames.claim(localRelPath(f.path), f.path);
      base.localPath = named.localPath;
      if (named.note) {
        base.localNote = named.note;
        this.log.warn(`${f.path}: ${named.note}`);
      }
    } catch (e) {
      return { ...base, selected: false, status: 'skipped', reason: errorMessage(e), leftReason: 'deselected' };
    }
    const c = classifyFile(f, threshold, this.modelDirs);
    if (c.jobWeights) base.jobWeights = true;
    const taken = this.o.includeLarge && (c.leftReason === 'large' || c.leftReason === 'redownloadable-weights');
    if (c.leftReason && !taken) return { ...base, selected: false, leftReason: c.leftReason, reason: c.reason };
    return base;
  }

  /** Run everything after the plan (call plan() first, or run()). */
  async execute(selectedPaths?: string[]): Promise<SalvageManifest> {
    const m = this.manifest;
    const fixed = (it: SalvageItem) => it.kind === 'symlink' || it.kind === 'cache' || it.leftReason === 'secret-store';
    if (selectedPaths) {
      const sel = new Set(selectedPaths);
      for (const it of m.items) {
        if (fixed(it) || (it.status === 'skipped' && !it.localPath)) continue;
        it.selected = sel.has(it.remotePath);
        if (!it.selected) {
          it.status = 'skipped';
          it.leftReason ??= 'deselected';
          it.reason ??= LEFT_REASON_TEXT.deselected;
        } else {
          it.leftReason = null;
          if (it.status === 'skipped') {
            it.status = 'pending';
            it.reason = null;
          }
        }
      }
    } else {
      for (const it of m.items) {
        if (it.selected && it.leftReason === null) continue;
        if (!it.selected && it.status === 'pending') it.status = 'skipped';
      }
    }
    for (const it of m.items) {
      if (it.kind === 'symlink' && it.selected) Object.assign(it, { status: 'verified', syncedAt: new Date().toISOString() });
      if (it.leftReason === 'secret-store') Object.assign(it, { selected: false, status: 'skipped' });
    }
    try {
      this.resumeFromPrevious();
      const files = m.items.filter((i) => i.selected && i.status === 'pending' && isFileItem(i));
      this.filesTotal = m.items.filter((i) => i.selected).length;
      this.filesDone = m.items.filter((i) => i.selected && i.status === 'verified').length;
      this.bytesTotal = files.reduce((a, b) => a + b.size, 0);
      const started = { ms: Date.now(), bytes: m.stats.bytesTransferred };
      // With a deadline, configs (small, and what reproduces the run) before the logs.
      const order: StepId[] = this.o.deadline ? ['scripts', 'configs', 'logs', 'data'] : ['scripts', 'logs', 'configs', 'data'];
      try {
        for (const step of order) {
          this.checkCancel();
          let mine = files.filter((f) => f.step === step);
          if (this.o.deadline) {
            mine = mine.sort(byValuePerByte);
            if (step === 'data') this.planDeadline(this.o.deadline, mine, started);
          }
          await this.runFileStep(step, mine);
        }
      } finally {
        await this.closeBatchWriter();
      }
      this.checkCancel();
      await this.finalPass();
      this.checkCancel();
      await this.runS3Step();
      this.checkCancel();
      if (this.o.uploadMissing) await this.runUploadStep();
      this.checkCancel();
      await this.runEnvironmentStep();
    } catch (e) {
      const cancelled = e instanceof GpuSessionsError && e.code === 'cancelled';
      for (const it of m.items) {
        if (it.status === 'pending') {
          it.status = 'skipped';
          it.reason = cancelled ? 'cancelled before it was downloaded' : `not done: ${errorMessage(e)}`;
        }
      }
      for (const s of STEPS) {
        const st = m.steps[s.id];
        if (st.status === 'pending' || st.status === 'running')
          m.steps[s.id] = { status: cancelled ? 'skipped' : 'failed', reason: cancelled ? 'cancelled' : errorMessage(e) };
      }
      this.finish();
      if (!cancelled) throw e;
      return m;
    }
    this.finish();
    return m;
  }

  /**
   * The one salvage flow every face drives: plan → the face's review → execute. Resolves to `null` when the
   * review stops it (the run folder then holds only the plan's manifest; nothing was downloaded).
   */
  async run(): Promise<SalvageManifest | null> {
    const items = await this.plan();
    const chosen = this.o.review ? await this.o.review(items, this.manifest) : undefined;
    if (chosen === null) {
      this.log.info(`Salvage of ${this.o.node} stopped at the review; nothing downloaded.`);
      return null;
    }
    this.checkCancel();
    return this.execute(chosen);
  }

  /** Local copies a previous run verified: candidates for "unchanged" (no transfer) or "grew" (append only). */
  private resumeFromPrevious(): void {
    const prev = this.previous;
    if (!prev) return;
    const byPath = new Map(prev.items.map((i) => [i.remotePath, i]));
    for (const it of this.manifest.items) {
      if (!it.selected || it.status !== 'pending' || !isFileItem(it)) continue;
      const p = byPath.get(it.remotePath);
      if (!p || p.status !== 'verified' || p.localPath !== it.localPath || !p.sha256) continue;
      if (!existsSync(insideDest(this.dir, it.localPath!))) continue;
      this.bases.set(it.remotePath, {
        size: p.size,
        mtime: p.mtime,
        sha256: p.sha256,
        localSha256: p.localSha256 ?? p.sha256,
        redacted: !!p.redacted,
        md5: p.md5 ?? null,
        trusted: false,
      });
      if (p.secrets) it.secrets = p.secrets;
    }
  }

  /**
   * The final pass: stop servers / writers when asked, list again (one exec), fetch only what changed
   * (appended bytes from the verified offset, new files, rewritten files), check the fetched ones once more.
   */
  private async finalPass(): Promise<void> {
    const m = this.manifest;
    const t = this.o.transport;
    const L1 = this.listing;
    if (!L1) return;
    if (this.o.stopServers && L1.writers.some((w) => w.server)) {
      // The command lines are written before anything is stopped.
      for (const it of m.items) if (it.kind === 'server-cmdline' && it.status !== 'verified') this.writeServersScript(it);
      const { stopServer } = await import('../launch/launch');
      this.checkCancel();
      this.progress('stop', `Stopping ${this.servers.length} SGLang server(s)${this.o.drain ? ' after draining them' : ''}…`);
      // In parallel: each waits for its own process to end (SIGTERM, then SIGKILL after the timeout).
      const results = await Promise.all(
        this.servers.map(async (srv) => {
          try {
            const r = await stopServer(t, {
              port: srv.port,
              pid: srv.pid,
              drain: this.o.drain,
              signal: this.o.signal,
              onProgress: (msg) => this.progress('stop', msg),
            });
            return { pid: srv.pid, port: srv.port, stopped: r.stopped, message: redactText(r.message) };
          } catch (e) {
            return { pid: srv.pid, port: srv.port, stopped: false, message: redactText(errorMessage(e)) };
          }
        }),
      );
      m.stopped.push(...results);
      this.save(true);
    }
    if (this.o.stopWriters) {
      const others = L1.writers.filter((w) => !w.server);
      const infos = others.map(writerInfo);
      if (others.length && (!this.o.confirmStopWriters || (await this.o.confirmStopWriters(infos)))) {
        const { buildKillScript } = await import('../launch/launch');
        for (const w of others) {
          this.checkCancel();
          this.progress('stop', `Stopping pid ${w.pid} (${writerInfo(w).command.slice(0, 60)})…`);
          try {
            const gone = await runOperation(
              t,
              {
                name: 'stop-writer',
                command: 'sh -s',
                stdin: buildKillScript(w.pid, { group: false, descendants: [], termTimeoutMs: 10_000 }),
                timeoutMs: 40_000,
                maxOutputBytes: 64 * 1024,
                parse: (r) => /GS-GONE/.test(r.stdout.toString()),
              },
              this.o.signal,
            );
            m.stopped.push({
              pid: w.pid,
              port: null,
              stopped: gone,
              message: gone ? `stopped pid ${w.pid}` : `pid ${w.pid} is still alive`,
            });
          } catch (e) {
            m.stopped.push({ pid: w.pid, port: null, stopped: false, message: redactText(errorMessage(e)) });
          }
        }
        this.save(true);
      }
    }
    this.checkCancel();
    try {
      await this.catchUp(L1.roots.map((r) => r.path));
    } catch (e) {
      if (e instanceof GpuSessionsError && e.code === 'cancelled') throw e;
      this.log.warn(`The final listing failed: ${errorMessage(e)}`);
      for (const it of m.items)
        if (it.status === 'verified' && isFileItem(it)) {
          it.changedAfterVerify = true;
          it.reason = `could not be checked again after it was saved: ${errorMessage(e)}`;
        }
    }
    this.save(true);
  }

  /**
   * List again (one exec) and fetch only what changed since it was saved: appended bytes from the verified
   * offset (prefix hash first: a truncated or rotated file is fetched whole), new files, rewritten files;
   * then check the fetched ones once more. Throws when the node cannot be listed.
   */
  private async catchUp(
    extraRoots: string[],
  ): Promise<{ listedAt: string; changedBytes: number; fetchedBytes: number; fetchedFiles: number }> {
    const m = this.manifest;
    const t = this.o.transport;
    const before = { bytes: m.stats.bytesTransferred, files: m.stats.filesTransferred };
    this.progress('final', 'Final pass: listing what changed since it was saved…');
    const L2 = await this.list(extraRoots);
    const listedAt = new Date().toISOString();
    this.listing = L2;
    m.roots = mergeRoots(m.roots, L2.roots);
    let atRisk = 0;
    const now = new Map(L2.files.map((f) => [f.path, f]));
    const known = new Set(m.items.map((i) => i.remotePath));
    const catchUp: SalvageItem[] = [];
    for (const it of m.items) {
      if (!isFileItem(it)) continue;
      const f = now.get(it.remotePath);
      if (!f) {
        if (it.status === 'verified') {
          it.goneFromNode = true;
          it.reason = 'removed from the node after it was saved (the saved copy is kept)';
        } else if (it.selected) {
          Object.assign(it, { status: 'skipped', goneFromNode: true, reason: 'no longer on the node (nothing left there to save)' });
        }
        continue;
      }
      if (it.status === 'verified' && (f.size !== it.size || f.mtime !== it.mtime)) {
        atRisk += f.size > it.size ? f.size - it.size : f.size;
        this.bases.set(it.remotePath, {
          size: it.size,
          mtime: it.mtime,
          sha256: it.sha256!,
          localSha256: it.localSha256 ?? it.sha256!,
          redacted: !!it.redacted,
          md5: it.md5 ?? null,
          trusted: true,
        });
        Object.assign(it, { size: f.size, mtime: f.mtime, status: 'pending', changedAfterVerify: false, reason: null });
        catchUp.push(it);
      } else if (it.selected && it.status === 'failed' && !this.fatal) {
        Object.assign(it, { size: f.size, mtime: f.mtime, status: 'pending', reason: null });
        catchUp.push(it);
      }
    }
    for (const f of L2.files) {
      if (known.has(f.path)) continue;
      const it = this.itemFor(f);
      m.items.push(it);
      if (it.kind === 'symlink') Object.assign(it, { status: 'verified', syncedAt: new Date().toISOString() });
      else if (it.selected && it.status === 'pending' && isFileItem(it)) {
        atRisk += it.size;
        catchUp.push(it);
      } else if (!it.selected && it.status === 'pending') it.status = 'skipped';
    }
    for (const c of L2.caches) if (!known.has(c.path)) m.items.push(this.cacheItem(c));
    m.writers = L2.writers.map(writerInfo);
    if (catchUp.length) {
      this.filesTotal += catchUp.length;
      this.bytesTotal += catchUp.reduce((a, b) => a + b.size - (this.bases.get(b.remotePath)?.size ?? 0), 0);
      this.progress('final', `Final pass: ${catchUp.length} file(s) changed or new`);
      await this.transferItems(catchUp, 'final');
      // Anything that moved again while we fetched it is still changing.
      const fetched = catchUp.filter((i) => i.status === 'verified');
      try {
        const st = await remoteStats(
          t,
          fetched.map((i) => i.remotePath),
          this.o.signal,
        );
        for (const it of fetched) {
          const s = st.get(it.remotePath);
          if (!s) continue;
          const listedMtime = Math.floor(Date.parse(it.mtime) / 1000);
          if (s.size !== it.size || s.mtime > listedMtime + 1) {
            it.changedAfterVerify = true;
            it.reason = `verified at ${it.size} B, but it changed again on the node (now ${s.size} B): still being written`;
          }
        }
      } catch (e) {
        this.log.warn(`Could not re-check files after the final pass: ${errorMessage(e)}`);
      }
    }
    this.save(true);
    return {
      listedAt,
      changedBytes: atRisk,
      fetchedBytes: m.stats.bytesTransferred - before.bytes,
      fetchedFiles: m.stats.filesTransferred - before.files,
    };
  }

  /**
   * One round of "Keep Node Salvaged": the catch-up pass over the folders found so far, then the manifest
   * (atomically) and SALVAGE.md. Throws when the node cannot be reached.
   */
  async sync(): Promise<{ listedAt: string; changedBytes: number; fetchedBytes: number; fetchedFiles: number }> {
    if (!this.listing) throw new GpuSessionsError('usage', 'sync() needs a finished salvage first (run()).');
    this.fatal = null;
    try {
      const r = await this.catchUp(this.manifest.roots.map((x) => x.path));
      this.finish();
      return r;
    } catch (e) {
      this.restorePending(e);
      throw e;
    }
  }

  /** A sync that stopped half-way: what was verified before stays verified (its local copy was not touched). */
  private restorePending(e: unknown): void {
    for (const it of this.manifest.items) {
      if (it.status !== 'pending') continue;
      const b = this.bases.get(it.remotePath);
      if (b) {
        Object.assign(it, { status: 'verified', size: b.size, mtime: b.mtime, sha256: b.sha256, changedAfterVerify: true });
        it.reason = `changed on the node; the copy verified earlier (${b.size} B) is kept (${errorMessage(e)})`;
        this.bases.delete(it.remotePath);
      } else Object.assign(it, { status: 'skipped', reason: `not fetched: ${errorMessage(e)}` });
    }
    this.save(true);
  }

  /** The node is gone: the last synced state becomes final; SALVAGE.md says what was saved, when, and what is at risk. */
  finalizeVanished(info: { lastSyncedAt: string | null; atRiskBytes: number; atRiskFiles: number; error: string }): SalvageManifest {
    const m = this.manifest;
    m.vanished = { at: new Date().toISOString(), ...info };
    this.finish();
    return m;
  }

  /** The writer thread of the run's file steps: started with the first batch, kept for the next steps. */
  private batchWriter(): BatchWriter {
    if (!this.writer?.alive) this.writer = BatchWriter.start(this.dir, { md5: !!this.o.s3, scanLimit: SCAN_LIMIT });
    return this.writer;
  }

  private async closeBatchWriter(): Promise<void> {
    const w = this.writer;
    this.writer = null;
    await w?.close();
  }

  /** `r.secrets`: the scan of the exact bytes, done where they were written (else the local copy is read). */
  private markItem(it: SalvageItem, r: TransferResult & { secrets?: SecretHit[] }): void {
    if (r.ok) {
      if (r.bytes !== it.size) {
        it.reason = `grew on the node while being read: verified the first ${r.bytes} B (listed ${it.size} B)`;
        it.size = r.bytes;
      } else it.reason = null;
      it.sha256 = r.remoteSha256;
      it.md5 = r.md5;
      it.status = 'verified';
      it.redacted = false;
      it.localSha256 = null;
      it.syncedAt = new Date().toISOString();
      this.manifest.stats.filesTransferred++;
      if (it.localPath && it.size <= SCAN_LIMIT) this.scanItem(it, r.secrets);
    } else {
      it.status = 'failed';
      it.reason = r.reason;
      if (r.fatal && !this.fatal) this.fatal = r.reason;
    }
    this.filesDone++;
    this.save();
  }

  /** Secrets scan of the exact copy; with --redact the local copy is then rewritten redacted (marked). */
  private scanItem(it: SalvageItem, scanned?: SecretHit[]): void {
    const abs = insideDest(this.dir, it.localPath!);
    try {
      // Already scanned from the bytes that were written (and verified): read the copy only to redact it.
      if (scanned && !(this.redact && scanned.length)) {
        if (scanned.length) it.secrets = scanned;
        else delete it.secrets;
        return;
      }
      const buf = readFileSync(abs);
      if (!looksLikeText(buf)) {
        delete it.secrets;
        return;
      }
      const text = buf.toString('utf8');
      const hits = scanSecrets(text);
      if (hits.length) it.secrets = hits;
      else delete it.secrets;
      if (this.redact && hits.length) {
        const red = redactText(text);
        if (red !== text) {
          writeAtomic(abs, red);
          it.redacted = true;
          it.localSha256 = createHash('sha256').update(red).digest('hex');
          it.reason = 'verified against the node, then written redacted (--redact)';
        }
      }
    } catch (e) {
      this.log.warn(`Could not scan ${it.remotePath} for secrets: ${errorMessage(e)}`);
    }
  }

  private writeServersScript(it: SalvageItem): void {
    const content = renderServersScript(this.manifest.node, this.servers);
    const abs = insideDest(this.dir, it.localPath!);
    try {
      writeAtomic(abs, content);
      it.sha256 = createHash('sha256').update(content).digest('hex');
      it.size = Buffer.byteLength(content);
      it.status = 'verified';
      it.reason = 'generated from the running processes (flags with secrets redacted)';
      it.syncedAt = new Date().toISOString();
    } catch (e) {
      it.status = 'failed';
      it.reason = errorMessage(e);
    }
  }

  /** States, before the bulk data starts, whether it will be saved before the rental ends, and names what will not. */
  private planDeadline(at: Date, data: SalvageItem[], started: { ms: number; bytes: number }): void {
    const m = this.manifest;
    const moved = m.stats.bytesTransferred - started.bytes;
    const secs = (Date.now() - started.ms) / 1000;
    // Too little has travelled (or too briefly) to tell a rate from it.
    const rate = moved >= 64 * 1024 && secs >= 0.2 ? moved / secs : null;
    const plan = planAgainstDeadline(
      data.filter((i) => i.status === 'pending'),
      at,
      Date.now(),
      rate,
    );
    m.deadline = plan;
    this.save(true);
    const names = plan.wontMakeIt
      .slice(0, 3)
      .map((w) => w.remotePath.split('/').pop())
      .join(', ');
    const msg =
      plan.fits === true
        ? `The rental ends in ${Math.round(plan.secondsLeft / 60)} min: the remaining ${formatBytes(plan.remainingBytes)} need about ${plan.etaS} s — everything will be saved in time`
        : plan.fits === null
          ? `The rental ends in ${Math.round(plan.secondsLeft / 60)} min; the transfer rate is not known yet (most valuable first)`
          : `The rental ends ${plan.secondsLeft > 0 ? `in ${Math.round(plan.secondsLeft / 60)} min` : '— it is already over'}: ${plan.wontMakeIt.length} file(s), ${formatBytes(plan.wontMakeIt.reduce((a, b) => a + b.size, 0))}, will not make it (${names}${plan.wontMakeIt.length > 3 ? ', …' : ''}); the most valuable go first`;
    this.log.warn(msg);
    this.progress('data', msg);
  }

  private async runFileStep(step: StepId, files: SalvageItem[]): Promise<void> {
    const m = this.manifest;
    const gitItems = step === 'configs' ? m.items.filter((i) => i.kind === 'git-state' && i.selected && i.status === 'pending') : [];
    const cmdItems = step === 'scripts' ? m.items.filter((i) => i.kind === 'server-cmdline' && i.selected && i.status === 'pending') : [];
    if (files.length === 0 && gitItems.length === 0 && cmdItems.length === 0) {
      const already = m.items.some((i) => i.step === step && i.status === 'verified');
      m.steps[step] = already
        ? { status: 'done', reason: 'already salvaged by a previous run' }
        : { status: 'skipped', reason: 'nothing of this kind selected on the node' };
      this.save(true);
      return;
    }
    m.steps[step] = { status: 'running' };
    this.save(true);
    this.progress(step, STEPS.find((s) => s.id === step)!.title);
    for (const it of cmdItems) {
      this.writeServersScript(it);
      this.filesDone++;
    }
    await this.transferItems(files, step);
    for (const it of gitItems) {
      this.checkCancel();
      await this.salvageGit(it);
      this.filesDone++;
    }
    const mine = [...files, ...gitItems, ...cmdItems];
    const failed = mine.filter((i) => i.status === 'failed');
    m.steps[step] = failed.length
      ? { status: 'failed', reason: `${failed.length} of ${mine.length} item(s) failed${this.fatal ? `: ${this.fatal}` : ''}` }
      : { status: 'done' };
    this.save(true);
  }

  /**
   * Fetch files: unchanged verified local copies are re-hashed and kept (no transfer), grown ones get
   * their appended bytes, large files travel alone, small ones in tar batches; a few channels in parallel.
   */
  private async transferItems(files: SalvageItem[], step: StepId | 'final', retry = false): Promise<void> {
    const t = this.o.transport;
    const todo: SalvageItem[] = [];
    const appends: SalvageItem[] = [];
    for (const it of files) {
      const b = this.bases.get(it.remotePath);
      if (b && b.size === it.size && b.mtime === it.mtime) {
        const h = b.trusted ? b.localSha256 : await sha256File(insideDest(this.dir, it.localPath!));
        if (h && h === b.localSha256) {
          Object.assign(it, {
            sha256: b.sha256,
            md5: b.md5,
            localSha256: b.redacted ? b.localSha256 : null,
            redacted: b.redacted,
            status: 'verified',
            reason: b.redacted
              ? 'verified by a previous run, written redacted (--redact)'
              : 'verified by a previous run; local copy re-hashed and intact',
            syncedAt: new Date().toISOString(),
          });
          this.bases.delete(it.remotePath);
          this.filesDone++;
          this.bytesTotal -= it.size;
          continue;
        }
      }
      if (b && it.size > b.size && !b.redacted) appends.push(it);
      else todo.push(it);
    }
    const big = todo.filter((f) => f.size > SMALL_FILE);
    const small = todo.filter((f) => f.size <= SMALL_FILE);
    const n = Math.max(1, Math.min(this.o.concurrency ?? 3, 4));
    const batches = planBatches(small, n);
    type Job = { kind: 'one'; item: SalvageItem } | { kind: 'append'; item: SalvageItem } | { kind: 'batch'; items: SalvageItem[] };
    const jobs: Job[] = [
      ...appends.map((item): Job => ({ kind: 'append', item })),
      // With a deadline, value per byte: the small files (already sorted) before the large ones.
      ...(this.o.deadline ? [] : big.map((item): Job => ({ kind: 'one', item }))),
      ...batches.map((items): Job => ({ kind: 'batch', items })),
      ...(this.o.deadline ? big.map((item): Job => ({ kind: 'one', item })) : []),
    ];
    const title = step === 'final' ? 'Final pass' : STEPS.find((s) => s.id === step)!.title;
    const onBytes = (n: number) => {
      this.bytesDone += n;
      this.manifest.stats.bytesTransferred += n;
      this.progress(step, title);
    };
    const byPath = new Map(todo.map((i) => [i.remotePath, i]));
    const md5 = !!this.o.s3;
    // One writer thread for the batches running in parallel: file writes stay off this thread.
    const writer = batches.length ? this.batchWriter() : null;
    const one = async (item: SalvageItem) => {
      const r = await downloadOne(
        t,
        this.dir,
        { remotePath: item.remotePath, localPath: item.localPath!, size: item.size },
        onBytes,
        this.o.signal,
        { md5 },
      );
      this.markItem(item, r);
    };
    const worker = async () => {
      for (;;) {
        if (this.fatal) return;
        this.checkCancel();
        const job = jobs.shift();
        if (!job) return;
        if (job.kind === 'append') {
          const b = this.bases.get(job.item.remotePath)!;
          const r = await downloadAppend(
            t,
            this.dir,
            {
              remotePath: job.item.remotePath,
              localPath: job.item.localPath!,
              size: job.item.size,
              baseSize: b.size,
              baseSha256: b.sha256,
            },
            onBytes,
            this.o.signal,
            { md5 },
          );
          this.bases.delete(job.item.remotePath);
          if (!r.ok && r.prefixChanged) await one(job.item);
          else {
            this.markItem(job.item, r);
            if (r.ok) job.item.reason = `appended ${r.appended} B to the copy verified earlier (${b.size} B); whole file verified`;
          }
        } else if (job.kind === 'one') {
          await one(job.item);
        } else {
          await downloadBatch(
            t,
            this.dir,
            job.items.map((i) => ({ remotePath: i.remotePath, localPath: i.localPath!, size: i.size })),
            onBytes,
            (r) => {
              const it = byPath.get(r.remotePath);
              if (!it) return;
              if (!r.ok && r.reason === 'vanished from the node') {
                Object.assign(it, {
                  status: 'skipped',
                  goneFromNode: true,
                  reason: 'vanished from the node before it was copied (nothing left there to save)',
                });
                this.filesDone++;
                return;
              }
              this.markItem(it, r);
            },
            this.o.signal,
            { md5, writer: writer!, scanLimit: SCAN_LIMIT },
          );
        }
      }
    };
    await Promise.all(Array.from({ length: n }, worker));
    this.checkCancel();
    // A channel that closed without an exit status (the connection dropped and came back): once more, whole.
    if (!retry && !this.fatal) {
      const again = files.filter((i) => i.status === 'failed' && /exit null|connection dropped|interrupted/.test(i.reason ?? ''));
      if (again.length) {
        for (const it of again) Object.assign(it, { status: 'pending', reason: null });
        this.filesDone -= again.length;
        await this.transferItems(again, step, true);
      }
    }
    if (this.fatal) {
      for (const it of files) if (it.status === 'pending') Object.assign(it, { status: 'failed', reason: `not attempted: ${this.fatal}` });
    }
  }
  /** `git status` and `git diff` (staged and unstaged) of a repository, as text files. */
  private async salvageGit(it: SalvageItem): Promise<void> {
    try {
      const g = await runOperation(this.o.transport, gitStateOperation(it.remotePath), this.o.signal);
      if (!g.ok) {
        it.status = 'failed';
        it.reason = g.reason;
        return;
      }
      const { status, diff } = g;
      const dirAbs = insideDest(this.dir, it.localPath!);
      const statusText = redactText(status ?? '');
      const diffText = this.redact ? redactText(diff ?? '') : (diff ?? '');
      ensureParent(this.dir, path.join(dirAbs, 'x'));
      writeAtomic(path.join(dirAbs, 'git-status.txt'), statusText);
      writeAtomic(path.join(dirAbs, 'git-diff.patch'), diffText);
      it.sha256 = createHash('sha256').update(statusText).update(diffText).digest('hex');
      it.size = Buffer.byteLength(statusText) + Buffer.byteLength(diffText);
      it.status = 'verified';
      it.reason = `git status and diff saved (${Buffer.byteLength(diffText)} B of diff)`;
    } catch (e) {
      it.status = 'failed';
      it.reason = errorMessage(e);
    }
    this.save();
  }

  private async runS3Step(): Promise<void> {
    const m = this.manifest;
    const s3 = this.o.s3;
    if (!s3) {
      m.steps.s3 = { status: 'skipped', reason: 'no S3 bucket configured (CLI --s3 s3://bucket/prefix, setting gpuSessions.salvage.s3)' };
      for (const it of m.items) it.s3 = 'unknown';
      this.save(true);
      return;
    }
    m.steps.s3 = { status: 'running' };
    this.progress('s3', `Checking s3://${s3.bucket}/${s3.prefix}…`);
    const { inventoryS3, matchToS3, summarizeS3 } = await import('./s3');
    let inv;
    try {
      inv = await inventoryS3(s3, { signal: this.o.signal as AbortSignal | undefined });
    } catch (e) {
      m.s3 = { target: `s3://${s3.bucket}/${s3.prefix}`, endpoint: s3.endpoint, objects: 0, bytes: 0, error: errorMessage(e) };
      m.steps.s3 = { status: 'failed', reason: errorMessage(e) };
      for (const it of m.items) it.s3 = 'unknown';
      this.save(true);
      return;
    }
    // MD5 of files we did not download, so single-part ETags can be compared (bounded work on the node).
    const candidates = m.items.filter((i) => isFileItem(i) && !i.md5 && i.status !== 'verified');
    const pre = matchToS3(
      candidates.map((i) => ({ remotePath: i.remotePath, size: i.size })),
      inv,
      s3.mappings,
    );
    const needMd5 = candidates.filter(
      (_, k) =>
        pre[k].status === 'unverified' && pre[k].key && /^[0-9a-f]{32}$/.test(inv.objects.find((o) => o.key === pre[k].key)?.etag ?? ''),
    );
    let md5s = new Map<string, string>();
    const md5Bytes = needMd5.reduce((a, b) => a + b.size, 0);
    if (needMd5.length && md5Bytes <= 64 * 1024 * 1024 * 1024) {
      try {
        md5s = await remoteHashes(
          this.o.transport,
          needMd5.map((i) => i.remotePath),
          'md5',
          this.o.signal,
        );
      } catch (e) {
        this.log.warn(`MD5 on the node failed: ${errorMessage(e)}`);
      }
    }
    const fileItems = m.items.filter((i) => isFileItem(i));
    const matches = matchToS3(
      fileItems.map((i) => ({ remotePath: i.remotePath, size: i.size, md5: i.md5 ?? md5s.get(i.remotePath) ?? null })),
      inv,
      s3.mappings,
    );
    fileItems.forEach((it, k) => {
      it.s3 = matches[k].status;
      it.s3Key = matches[k].key;
    });
    const sum = summarizeS3(inv, matches);
    m.s3 = { target: `s3://${s3.bucket}/${s3.prefix}`, endpoint: s3.endpoint, objects: sum.objects, bytes: sum.bytes };
    m.steps.s3 = {
      status: 'done',
      reason: `${sum.objects} objects (${sum.bytes} B); ${sum.present} present, ${sum.unverified} size-only, ${sum.missing} missing, ${sum.mismatch} mismatched`,
    };
    this.save(true);
  }

  /**
   * Send what S3 is missing (or holds differently) straight from the node: large files the laptop did not
   * pull included; secret stores, caches and re-downloadable weights never. Then S3 is checked again.
   */
  private async runUploadStep(): Promise<void> {
    const m = this.manifest;
    const s3 = this.o.s3;
    if (!s3 || !m.s3 || m.s3.error) return;
    const { uploadKey } = await import('./s3');
    const { uploadFromNode } = await import('./upload');
    const todo = m.items.filter(
      (i) =>
        isFileItem(i) &&
        !i.goneFromNode &&
        (i.s3 === 'missing' || i.s3 === 'mismatch') &&
        i.leftReason !== 'secret-store' &&
        i.leftReason !== 'redownloadable-weights',
    );
    if (!todo.length) return;
    this.progress('s3', `Uploading ${todo.length} file(s) from the node to s3://${s3.bucket}/${s3.prefix}…`);
    const res = await uploadFromNode(
      this.o.transport,
      s3,
      todo.map((i) => ({
        remotePath: i.remotePath,
        size: i.size,
        key: i.s3 === 'mismatch' && i.s3Key ? i.s3Key : uploadKey(i.remotePath, s3.prefix, s3.mappings),
      })),
      { partSize: this.o.partSize, signal: this.o.signal, onProgress: (msg) => this.progress('s3', msg), resume: this.pendingUploads() },
    );
    m.uploads = res;
    this.save(true);
    await this.runS3Step();
    // Every part's ETag was checked against the node's MD5 and the object's size read back: a multipart
    // ETag is not an MD5 of the whole, so the check above may only say "unverified" or "mismatch".
    const byPath = new Map(res.filter((r) => r.ok).map((r) => [r.remotePath, r]));
    for (const it of m.items) {
      const r = byPath.get(it.remotePath);
      if (!r) continue;
      it.s3 = 'present';
      it.s3Key = r.s3Object;
    }
    const failed = res.filter((r) => !r.ok);
    m.steps.s3 = {
      status: failed.length ? 'failed' : 'done',
      reason: `${m.steps.s3.reason ?? ''}; uploaded ${res.length - failed.length} of ${res.length} file(s) from the node${failed.length ? ` (${failed[0].remotePath}: ${failed[0].reason})` : ''}`,
    };
    this.save(true);
  }

  /** Unfinished multipart uploads of this run folder (a rerun continues the folder, so it resumes them per part). */
  private pendingUploads(): UploadResume {
    const file = path.join(this.dir, 'upload-parts.json');
    let all: Record<string, PendingUpload> = {};
    try {
      all = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      /* none yet */
    }
    return {
      get: (key) => all[key],
      set: (key, p) => {
        if (p) all[key] = p;
        else delete all[key];
        if (Object.keys(all).length) writeAtomic(file, JSON.stringify(all, null, 2) + '\n');
        else rmSync(file, { force: true });
      },
    };
  }

  private async runEnvironmentStep(): Promise<void> {
    const m = this.manifest;
    m.steps.environment = { status: 'running' };
    this.progress('environment', 'Recording the environment…');
    try {
      const snap = this.o.snapshot ?? defaultSnapshot;
      const s = await snap(this.o.transport, m.node, this.o.servers ?? []);
      const jsonText = redactText(JSON.stringify(s.json, null, 2)) + '\n';
      writeAtomic(insideDest(this.dir, 'environment.json'), jsonText);
      writeAtomic(insideDest(this.dir, 'environment.md'), redactText(s.markdown));
      m.environment = { json: 'environment.json', md: 'environment.md', summary: s.summary };
      m.steps.environment = { status: 'done' };
    } catch (e) {
      m.steps.environment = { status: 'failed', reason: errorMessage(e) };
    }
    this.save(true);
  }

  private finish(): void {
    const m = this.manifest;
    const lost: SalvageManifest['lost'] = [];
    for (const it of m.items) {
      if (!it.selected || it.goneFromNode) continue;
      const inS3 = it.s3 === 'present';
      if ((it.status === 'verified' && !it.changedAfterVerify) || inS3) continue;
      lost.push({ remotePath: it.remotePath, size: it.size, why: it.reason ?? it.status });
    }
    m.lost = lost;
    m.leftByChoice = m.items
      .filter((i) => !i.selected && i.kind !== 'symlink' && i.s3 !== 'present')
      .map((i) => ({ remotePath: i.remotePath, size: i.size, s3: i.s3 }));
    const details: SalvageManifest['reasonDetails'] = [];
    if (m.writers.length) {
      const servers = m.writers.filter((w) => w.server).length;
      const others = m.writers.length - servers;
      details.push({
        code: 'still-running',
        message: `${[servers ? `${servers} SGLang server(s)` : '', others ? `${others} other process(es)` : ''].filter(Boolean).join(' and ')} still running and writing under the folders; stop them (--stop-servers${others ? ', --stop-writers' : ''}) or wait until they finish, then salvage again`,
      });
    }
    const changed = m.items.filter((i) => i.changedAfterVerify && !i.goneFromNode);
    if (changed.length)
      details.push({ code: 'changed-during-run', message: `${changed.length} file(s) changed on the node after they were verified` });
    const L = this.listing;
    if (L?.truncated)
      details.push({
        code: 'listing-truncated',
        message: `the listing is incomplete: at least ${L.notListed} entr${L.notListed === 1 ? 'y was' : 'ies were'} not listed because the ${L.bound === 'max-depth' ? `depth bound (${L.maxDepth} levels; raise --max-depth)` : `entry bound (${L.maxFiles}; raise --max-files)`} was hit, or choose narrower --roots`,
      });
    const failed = m.items.filter((i) => i.selected && i.status === 'failed');
    if (failed.length) details.push({ code: 'failed-items', message: `${failed.length} selected item(s) failed to download or verify` });
    const byPath = new Map(m.items.map((i) => [i.remotePath, i]));
    const otherLost = lost.filter((l) => {
      const it = byPath.get(l.remotePath);
      return it && it.status !== 'failed' && !it.changedAfterVerify;
    });
    if (otherLost.length)
      details.push({ code: 'lost-items', message: `${otherLost.length} selected item(s) were not saved (${otherLost[0].why})` });
    m.reasonDetails = details;
    m.reasons = details.map((d) => d.code);
    if (L) m.listing = { truncated: L.truncated, notListed: L.notListed, bound: L.bound, maxFiles: L.maxFiles, maxDepth: L.maxDepth };
    m.verdict = details.length === 0 ? 'safe' : 'unsafe';
    m.finishedAt = new Date().toISOString();
    this.save(true);
    try {
      writeAtomic(insideDest(this.dir, 'SALVAGE.md'), renderSalvageReport(m));
    } catch (e) {
      this.log.error(`Could not write SALVAGE.md: ${errorMessage(e)}`);
    }
    this.progress('verdict', m.verdict === 'safe' ? 'Safe to shut down.' : `Not safe: ${details.map((d) => d.code).join(', ')}.`);
  }
}

const PREVIOUS_WHY = 'found by an earlier salvage';

function isLoopback(h: string): boolean {
  return h === 'localhost' || h === '::1' || /^127\./.test(h);
}

/** Files the salvage copies (not git state, generated scripts, caches or symlinks). */
export function isFileItem(i: SalvageItem): boolean {
  return !!i.localPath && i.kind !== 'git-state' && i.kind !== 'server-cmdline' && i.kind !== 'cache' && i.kind !== 'symlink';
}

function mergeRoots(a: RootInfo[], b: RootInfo[]): RootInfo[] {
  const out = [...a];
  for (const r of b) if (!out.some((x) => x.path === r.path)) out.push(r);
  return out;
}

/** Node's recursive mkdir can report ENOENT for a read-only or unwritable parent: find the real cause. */
function diagnoseWrite(dir: string, e: unknown): unknown {
  if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return e;
  let p = path.dirname(dir);
  while (!existsSync(p) && path.dirname(p) !== p) p = path.dirname(p);
  try {
    mkdirSync(path.join(p, `.gs-write-test-${process.pid}`));
    rmSync(path.join(p, `.gs-write-test-${process.pid}`), { recursive: true, force: true });
  } catch (e2) {
    return e2;
  }
  return e;
}

async function defaultSnapshot(
  t: Transport,
  node: string,
  servers: SglangServer[],
): Promise<{ json: unknown; markdown: string; summary: string }> {
  const { takeSnapshot, renderSnapshotMarkdown } = await import('./snapshot');
  const s = await takeSnapshot(
    t,
    node,
    servers.map((x) => ({ pid: x.pid, port: x.port, host: x.host, enableMetrics: x.enableMetrics })),
  );
  const gpus = (s.gpus.smiQ.match(/Product Name\s*:\s*(.*)/g) ?? []).length;
  const summary = `${s.hostname ?? node}: ${s.os ?? '?'}, driver ${s.gpus.driverVersion ?? '—'}, CUDA ${s.gpus.cudaVersion ?? '—'}, ${gpus} GPU(s), Python ${s.python.version ?? '?'}, sglang ${s.keyPackages['sglang'] ?? '—'}, torch ${s.keyPackages['torch'] ?? '—'}`;
  return { json: s, markdown: renderSnapshotMarkdown(s), summary };
}

/** Node strings in SALVAGE.md: escaped text (no markup, HTML, links or controls) or fenced code spans. */
const mdCell = mdText;

const REASON_TITLE: Record<ReasonCode, string> = {
  'still-running': 'still running',
  'changed-during-run': 'files changed during the run',
  'listing-truncated': 'listing incomplete',
  'failed-items': 'items failed',
  'lost-items': 'items not saved',
};

export function renderSalvageReport(m: SalvageManifest): string {
  const L: string[] = [];
  const code = (p: string) => mdCodeCell(p);
  L.push(`# Salvage of ${mdCell(m.node)}`, '');
  L.push(
    m.verdict === 'safe'
      ? `## ✅ Safe to shut down`
      : `## ❌ Not safe to shut down — ${(m.reasons ?? []).map((r) => REASON_TITLE[r] ?? r).join(', ') || `${m.lost.length} item(s) would be lost`}`,
    '',
  );
  if (m.vanished) {
    L.push(
      '## ⚠️ The node vanished during the watch',
      '',
      `- Gone since ${m.vanished.at} (${mdCell(m.vanished.error)})`,
      `- Last synced ${m.vanished.lastSyncedAt ?? 'never'}: everything listed below as verified was saved as of then`,
      `- Estimated lost (written on the node after the last sync): ${formatBytes(m.vanished.atRiskBytes)} in ${m.vanished.atRiskFiles} file(s)`,
      '',
    );
  }
  for (const d of m.reasonDetails ?? []) L.push(`- **${d.code}**: ${mdCell(d.message)}`);
  if (m.reasonDetails?.length) L.push('');
  if (m.deadline) {
    const d = m.deadline;
    L.push(
      `## ⏱ Rental deadline ${d.at}`,
      '',
      `- Planned with ${d.secondsLeft > 0 ? `${Math.round(d.secondsLeft / 60)} min left` : 'the rental already over'}: ${formatBytes(d.remainingBytes)} of bulk data, most valuable per byte first (scripts, configs, progress, logs, then data, smaller first)`,
      `- Measured rate: ${d.rateBps ? `${formatBytes(d.rateBps)}/s, about ${d.etaS} s for the bulk data` : 'not known yet'}; ${d.fits === true ? 'everything fits in time' : d.fits === false ? `${d.wontMakeIt.length} file(s) were not expected to make it:` : 'whether it fits could not be told'}`,
    );
    for (const w of d.wontMakeIt.slice(0, 50)) L.push(`  - ${code(w.remotePath)} (${formatBytes(w.size)})`);
    if (d.wontMakeIt.length > 50) L.push(`  - … and ${d.wontMakeIt.length - 50} more`);
    L.push('');
  }
  const jobWeights = m.items.filter((i) => i.jobWeights && !i.selected);
  if (jobWeights.length) {
    L.push('> ⚠️ **Weights the job wrote are left on the node** (above the size threshold; they cannot be downloaded again):', '>');
    for (const i of jobWeights.slice(0, 50)) L.push(`> - ${code(i.remotePath)} (${formatBytes(i.size)})`);
    L.push('>', '> Take them with `--include-large` (or select them in the review), or upload them.', '');
  }
  if (m.writers?.length) {
    L.push('## Still running', '', '| pid | command | writes |', '|---|---|---|');
    for (const w of m.writers)
      L.push(
        `| ${w.pid}${w.server ? ' (SGLang)' : ''} | ${code(w.command.slice(0, 160))} | ${w.writes.slice(0, 5).map(code).join('<br>') || '—'} |`,
      );
    L.push('');
  }
  L.push(`- Started ${m.startedAt}, finished ${m.finishedAt ?? '—'}`);
  L.push(
    `- Node: ${mdCell(String(m.host.user ?? ''))}@${mdCell(String(m.host.host ?? ''))}:${m.host.port ?? ''}${m.host.hostKeyFingerprint ? ` (host key ${mdCell(String(m.host.hostKeyFingerprint))})` : ''}`,
  );
  L.push(
    `- Size threshold ${formatBytes(m.sizeThreshold)}; copies are ${m.redact ? 'redacted where secrets were found (--redact)' : "the node's exact bytes"}`,
  );
  const verified = m.items.filter((i) => i.status === 'verified');
  L.push(`- Saved and verified: ${verified.length} item(s), ${formatBytes(verified.reduce((a, b) => a + b.size, 0))}`);
  if (m.stats) L.push(`- Transferred in this run: ${m.stats.filesTransferred} file(s), ${formatBytes(m.stats.bytesTransferred)}`);
  if (m.s3)
    L.push(
      `- S3: ${mdCell(m.s3.target)}${m.s3.endpoint ? ` (${mdCell(m.s3.endpoint)})` : ''} — ${m.s3.error ? `error: ${mdCell(m.s3.error)}` : `${m.s3.objects} objects, ${formatBytes(m.s3.bytes)}`}`,
    );
  if (m.environment) L.push(`- Environment: ${mdCell(m.environment.summary)} — see [environment.md](environment.md)`);
  for (const s of m.stopped ?? []) L.push(`- Stopped: ${mdCell(s.message)}`);
  L.push('');
  L.push('## Folders', '', '| folder | why |', '|---|---|');
  for (const r of m.roots) L.push(`| ${code(typeof r === 'string' ? r : r.path)} | ${mdCell(typeof r === 'string' ? '' : r.why)} |`);
  L.push('');
  L.push('## Checklist', '');
  for (const s of STEPS) {
    const st = m.steps[s.id];
    const icon = st.status === 'done' ? '✅' : st.status === 'failed' ? '❌' : st.status === 'skipped' ? '⏭️' : '…';
    L.push(`- ${icon} **${s.title}** — ${st.status}${st.reason ? `: ${mdCell(st.reason)}` : ''}`);
  }
  L.push('');
  if (m.lost.length) {
    L.push('## Would be lost', '', '| remote path | size | why |', '|---|---|---|');
    for (const l of m.lost) L.push(`| ${code(l.remotePath)} | ${formatBytes(l.size)} | ${mdCell(l.why)} |`);
    L.push('');
  }
  const withSecrets = m.items.filter((i) => i.secrets?.length);
  if (withSecrets.length) {
    L.push(
      '## Secrets found in saved files',
      '',
      'Line numbers and kinds only; the copies hold the original bytes unless written with `--redact`.',
      '',
    );
    L.push('| file | lines | kinds |', '|---|---|---|');
    for (const i of withSecrets.slice(0, 500))
      L.push(
        `| ${code(i.remotePath)}${i.redacted ? ' (copy redacted)' : ''} | ${i
          .secrets!.map((x) => x.line)
          .slice(0, 20)
          .join(', ')} | ${[...new Set(i.secrets!.map((x) => x.kind))].join(', ')} |`,
      );
    L.push('');
  }
  const left = m.items.filter((i) => i.leftReason);
  if (left.length) {
    L.push('## Left on the node', '', '| reason | remote path | size | S3 |', '|---|---|---|---|');
    const order: LeftReason[] = ['secret-store', 'large', 'redownloadable-weights', 'deselected', 'cache'];
    left.sort((a, b) => order.indexOf(a.leftReason!) - order.indexOf(b.leftReason!));
    for (const i of left.slice(0, 1000))
      L.push(
        `| ${i.leftReason}${i.kind === 'cache' ? ` (${i.files ?? 0} files)` : ''} | ${code(i.remotePath)} | ${formatBytes(i.size)} | ${i.s3} |`,
      );
    if (left.length > 1000) L.push(`| … | ${left.length - 1000} more (see salvage-manifest.json) | | |`);
    L.push('');
  }
  L.push('## Items', '', '| status | kind | remote path | size | sha256 | S3 |', '|---|---|---|---|---|---|');
  for (const it of m.items.filter((i) => !i.leftReason).slice(0, 2000)) {
    L.push(
      `| ${it.status}${it.redacted ? ' (redacted copy)' : ''}${it.goneFromNode ? ' (gone from node)' : ''} | ${it.kind} | ${code(it.remotePath)} | ${formatBytes(it.size)} | ${it.sha256 ? '`' + it.sha256.slice(0, 16) + '…`' : '—'} | ${it.s3} |`,
    );
  }
  if (m.items.length > 2000) L.push(`| … | | ${m.items.length - 2000} more items in salvage-manifest.json | | | |`);
  L.push('');
  return redactText(L.join('\n'));
}
