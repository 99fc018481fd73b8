/**
 * Salvage Node types: the manifest, its items and steps, the options, reasons and the transfer constants.
 */
import type { Logger } from '../util/logger';
import type { SglangServer } from '../sglang/serverArgv';
import type { SalvageDataRecord } from '../data/salvageRecord';
import type { S3Mapping, S3Status, S3Target } from './s3/s3';
import type { AbortLike, Transport } from '../ssh/transport';
import type { LeftReason, RootInfo, SalvageKind } from './plan/listing';
import type { SecretHit } from './transfer/secretScan';
import type { PhaseTimer, SalvageTimings } from './report/timings';

export type StepId = 'scripts' | 'logs' | 'configs' | 'data' | 's3' | 'environment';
export type StepStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped';
type ItemStatus = 'verified' | 'failed' | 'skipped' | 'pending';

export const STEPS: Array<{ id: StepId; title: string }> = [
  { id: 'scripts', title: 'Scripts (launch, shell, Python) and the running servers’ command lines' },
  { id: 'logs', title: 'Logs and progress data' },
  { id: 'configs', title: 'Configs, patches and git state' },
  { id: 'data', title: 'Data and every other file under the size threshold' },
  { id: 's3', title: 'S3: what is already safely stored' },
  { id: 'environment', title: 'Environment snapshot' },
];

/** Why the verdict is not safe. */
export type ReasonCode =
  | 'still-running'
  | 'changed-during-run'
  | 'listing-truncated'
  | 'failed-items'
  | 'lost-items'
  | 'unique-weights'
  /** The listing found no work folder or no file in them: nothing shows the work is safe. */
  | 'nothing-listed';

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
  /** With changedAfterVerify: the size the node last showed (the verified copy holds `size`); absent: unknown. */
  nodeSize?: number;
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
  /** Weights of unknown origin the user accepted leaving on the node (`--leave`, the VS Code review). */
  leaveAccepted?: boolean;
  /**
   * The node's guard verified this file, at this size and mtime, in S3: `confirmed` when this run read
   * the object back (size and the guard's sha256 metadata), `journal` when no S3 credential could read it.
   */
  guardS3?: 'confirmed' | 'journal';
}

/** What this salvage found of the node's own guard. */
export interface SalvageGuardRecord {
  running: boolean;
  /** The guard's `--to` folder on the node (never listed), or its S3 place. */
  to: string | null;
  s3: string | null;
  /** The S3-compatible endpoint the guard uploads to (null: AWS); restore reads the copies back from there. */
  s3Endpoint?: string | null;
  /** Files its journal names as verified in S3. */
  verifiedInJournal: number;
  /** Items counted safe from the guard's S3 copy (not downloaded): all, and those read back from S3. */
  counted: number;
  confirmed: number;
  /** Named by the guard but not counted: changed on the node since, missing or different in S3. */
  notCounted: number;
  /** Why the S3 copy could not be read back (then the journal alone counts), or null. */
  s3Error: string | null;
  /** `--download-guarded`: the guard's copies were downloaded too. */
  downloaded: boolean;
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
  /** Where the time went (ms per phase; see timings.ts). */
  timings?: SalvageTimings;
  /** The data verdict of each generation output file (core/data): informs, never changes the verdict. */
  data?: SalvageDataRecord | null;
  /** The node's own guard: its folders left out of the listing, its verified S3 copies counted. */
  guard?: SalvageGuardRecord | null;
  /** What `restore` needs to carry the job to another node (launch profile, client, old home, modes). */
  restore?: import('./capture/restoreCapture').RestoreCapture | null;
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
type ReviewAnswer = string[] | undefined | null;

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
  /** Servers from the probe (richer: GPUs); only those of this user's processes are used. A promise lets the probe run with the listing. */
  servers?: SglangServer[] | Promise<SglangServer[]>;
  /** The run's phase timer (a face that connected first passes its own, with `connect` and the origin of `total`). */
  timer?: PhaseTimer;
  s3?: (S3Target & { mappings?: S3Mapping[] }) | null;
  /**
   * The face's review of the plan (`run()` calls it between plan and execute): the remote paths to download,
   * `undefined` to take the preselection as it is, or `null` to stop there (nothing is downloaded).
   */
  review?: (items: SalvageItem[], manifest: SalvageManifest) => Promise<ReviewAnswer>;
  /** Preselect the large files and model weights too (`--include-large`). */
  includeLarge?: boolean;
  /** Folders or files whose weights of unknown origin the user accepts leaving on the node (`--leave PATH`). */
  leave?: string[];
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
  /** false: do not judge the generation output files (core/data). Default true. */
  dataCheck?: boolean;
  /**
   * The node's own guard: read once before the listing (flows/salvage.ts reads it by default; false:
   * not at all). Its folders are never listed; the files it verified in S3 count as saved.
   */
  guard?: false | ((signal?: AbortLike) => Promise<GuardSeen | null>);
  /** Download the files the guard verified in S3 too (`--download-guarded`). */
  downloadGuarded?: boolean;
}

/** The node guard's own folders and S3 copies, as salvage reads them (core/guard/seen.ts). */
export interface GuardSeen {
  running: boolean;
  /** The `--to` folder, resolved on the node. */
  to: string | null;
  s3: { bucket: string; prefix: string; endpoint: string | null } | null;
  verified: Array<{ path: string; size: number; mtime: number; sha256: string }>;
}

export const SMALL_FILE = 4 * 1024 * 1024;
export const BATCH_BYTES = 48 * 1024 * 1024;
export const BATCH_FILES = 2000;
/** Below this many files per stream, fewer streams (a batch costs a few round trips to start). */
export const BATCH_MIN_FILES = 50;
export const SCAN_LIMIT = 32 * 1024 * 1024;

export const LEFT_REASON_TEXT: Record<LeftReason, string> = {
  cache: 'cache or installed software (re-creatable)',
  large: 'larger than the size threshold',
  'redownloadable-weights': 'model weights that can be downloaded again',
  'on-the-hub': 'model weights on the Hugging Face Hub (cache entry or download metadata)',
  'in-s3': 'model weights the S3 check found',
  'origin-unknown': 'model weights that nothing shows exist anywhere else',
  'secret-store': 'private key or credentials store: never copied',
  deselected: 'not selected',
  'guard-s3': "verified in S3 by the node's guard (not downloaded again; --download-guarded takes them)",
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
