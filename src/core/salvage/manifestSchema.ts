/**
 * The salvage manifest (`salvage-manifest.json`) as it is read back: by the next salvage of the node (its previous
 * run), by restore, by end-rental and the faces. SalvageManifest (salvageTypes.ts) is what a run writes; this schema
 * is what a reader accepts, checked against it at compile time (every manifest written passes). Fields are optional
 * where manifests of earlier versions or hand-made run folders lack them; a field that is present has its type. The
 * reader gets the parsed JSON itself: fields this version does not know are kept, nothing is stripped or defaulted.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { z } from 'zod';
import { type Reads, parseDocument } from '../util/document';
import type { RestoreCapture } from './capture/restoreCapture';
import { type DeadlinePlan, STEPS, type SalvageItem, type SalvageManifest, type StepStatus } from './salvageTypes';
import type { SalvageTimings } from './report/timings';
import type { SalvageDataRecord } from '../data/salvageRecord';

export const MANIFEST_FILE = 'salvage-manifest.json';

const str = z.string();
const num = z.number();
const bool = z.boolean();
const strOrNull = z.string().nullable();
/** A string-valued union (a kind, a reason) recorded by this or another version: a string, typed as the union. */
const tag = <T extends string>() => z.custom<T>((v) => typeof v === 'string', { message: 'expected a string' });
/** A sub-record another module owns and checks: an object here. */
const record = <T>() => z.custom<T>((v) => v !== null && typeof v === 'object' && !Array.isArray(v), { message: 'expected an object' });

const itemSchema = z.object({
  remotePath: str,
  localPath: strOrNull.optional(),
  kind: tag<SalvageItem['kind']>().optional(),
  step: tag<SalvageItem['step']>().optional(),
  size: num.optional(),
  mtime: str.optional(),
  sha256: strOrNull.optional(),
  md5: strOrNull.optional(),
  localSha256: strOrNull.optional(),
  redacted: bool.optional(),
  changedAfterVerify: bool.optional(),
  nodeSize: num.optional(),
  selected: bool.optional(),
  status: z.enum(['verified', 'failed', 'skipped', 'pending']).optional(),
  reason: strOrNull.optional(),
  leftReason: tag<NonNullable<SalvageItem['leftReason']>>().nullable().optional(),
  secrets: z.array(z.object({ line: num, kind: str })).optional(),
  files: num.optional(),
  jobWeights: bool.optional(),
  linkTarget: str.optional(),
  goneFromNode: bool.optional(),
  syncedAt: strOrNull.optional(),
  s3: tag<SalvageItem['s3']>().optional(),
  s3Key: strOrNull.optional(),
  localNote: str.optional(),
  leaveAccepted: bool.optional(),
  guardS3: z.enum(['confirmed', 'journal']).optional(),
});

const restoreSchema = z.object({
  version: num.optional(),
  capturedAt: str.optional(),
  home: strOrNull.optional(),
  /** Checked as a launch profile by restore (flows/restore.ts profileGroups). */
  profile: z.custom<RestoreCapture['profile']>(() => true).optional(),
  profileErrors: z.array(str).optional(),
  servers: z.array(z.object({ port: num, gpus: z.array(num), modelPath: strOrNull })).optional(),
  client: record<NonNullable<RestoreCapture['client']>>().nullable().optional(),
  modes: z.record(str, str).optional(),
  problems: z.array(str).optional(),
});

const guardSchema = z.object({
  running: bool.optional(),
  to: strOrNull.optional(),
  s3: strOrNull.optional(),
  s3Endpoint: strOrNull.optional(),
  verifiedInJournal: num.optional(),
  counted: num.optional(),
  confirmed: num.optional(),
  notCounted: num.optional(),
  s3Error: strOrNull.optional(),
  downloaded: bool.optional(),
});

const sized = z.object({ remotePath: str, size: num });

const salvageManifestSchema = z.object({
  version: num.optional(),
  node: str.optional(),
  /** Hand-made run folders name the host in a string. */
  host: z.union([z.record(str, z.union([str, num]).optional()), str]).optional(),
  startedAt: str.optional(),
  finishedAt: strOrNull.optional(),
  dest: str.optional(),
  /** Manifests written before RootInfo hold the folders as strings. */
  roots: z.array(z.union([z.object({ path: str, why: str.optional() }), str])).optional(),
  sizeThreshold: num.optional(),
  s3: z
    .object({ target: str, endpoint: str.optional(), objects: num.optional(), bytes: num.optional(), error: str.optional() })
    .nullable()
    .optional(),
  steps: z.record(str, z.object({ status: tag<StepStatus>(), reason: str.optional() })).optional(),
  items: z.array(itemSchema),
  verdict: z.enum(['safe', 'unsafe']).nullable().optional(),
  reasons: z.array(tag<SalvageManifest['reasons'][number]>()).optional(),
  reasonDetails: z.array(z.object({ code: str, message: str })).optional(),
  writers: z.array(z.object({ pid: num, command: str.optional(), writes: z.array(str).optional() })).optional(),
  stopped: z.array(z.object({ pid: num, port: num.nullable().optional(), stopped: bool.optional(), message: str.optional() })).optional(),
  listing: z
    .object({
      truncated: bool.optional(),
      notListed: num.optional(),
      bound: strOrNull.optional(),
      maxFiles: num.optional(),
      maxDepth: num.optional(),
    })
    .nullable()
    .optional(),
  stats: z.object({ bytesTransferred: num.optional(), filesTransferred: num.optional() }).optional(),
  redact: bool.optional(),
  lost: z.array(sized.extend({ why: str.optional() })).optional(),
  leftByChoice: z.array(sized.extend({ s3: tag<SalvageItem['s3']>().optional() })).optional(),
  environment: z.object({ json: str, md: str.optional(), summary: str.optional() }).nullable().optional(),
  deadline: record<DeadlinePlan>().nullable().optional(),
  watch: z
    .object({ lastSyncedAt: strOrNull.optional(), atRiskBytes: num.optional(), syncs: num.optional(), intervalS: num.optional() })
    .nullable()
    .optional(),
  uploads: z
    .array(
      z.object({
        remotePath: str,
        s3Object: str.optional(),
        ok: bool.optional(),
        parts: num.optional(),
        bytes: num.optional(),
        reason: strOrNull.optional(),
      }),
    )
    .optional(),
  vanished: z
    .object({
      at: str.optional(),
      lastSyncedAt: strOrNull.optional(),
      atRiskBytes: num.optional(),
      atRiskFiles: num.optional(),
      error: str.optional(),
    })
    .nullable()
    .optional(),
  timings: record<SalvageTimings>().optional(),
  data: record<SalvageDataRecord>().nullable().optional(),
  guard: guardSchema.nullable().optional(),
  restore: restoreSchema.nullable().optional(),
});

/** Every manifest a run writes is one this schema reads (checked at compile time: a field typed apart fails the build). */
type ManifestDocument = Reads<typeof salvageManifestSchema, SalvageManifest>;

/** What to do with a manifest that does not read. */
export const DAMAGED = 'the file is damaged; delete it (or its run folder) to start over';

/** `text` (the contents of `file`) as a salvage manifest, or a GpuSessionsError naming the file and the field. */
export function parseManifest(text: string, file: string, code: 'config' | 'usage' = 'config'): ManifestDocument {
  return parseDocument(salvageManifestSchema, text, file, { hint: DAMAGED, code }) as unknown as ManifestDocument;
}

/**
 * The run folder's manifest; null when there is none or it cannot be read (the run died before writing one). One
 * that reads but is not JSON or not a manifest (written atomically, so damaged after) throws, file and field named:
 * it is never taken for "no manifest" and overwritten.
 */
export function readManifest(dir: string, code: 'config' | 'usage' = 'config'): SalvageManifest | null {
  const file = path.join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  return parseManifest(text, file, code);
}

/** A manifest with nothing in it yet: every step `status`, no items, no verdict. */
export function newManifest(o: {
  node: string;
  host: SalvageManifest['host'];
  startedAt: string;
  finishedAt?: string | null;
  dest: string;
  sizeThreshold: number;
  stepStatus: StepStatus;
  redact?: boolean;
}): SalvageManifest {
  return {
    version: 1,
    node: o.node,
    host: o.host,
    startedAt: o.startedAt,
    finishedAt: o.finishedAt ?? null,
    dest: o.dest,
    roots: [],
    sizeThreshold: o.sizeThreshold,
    s3: null,
    steps: Object.fromEntries(STEPS.map((s) => [s.id, { status: o.stepStatus }])) as SalvageManifest['steps'],
    items: [],
    verdict: null,
    reasons: [],
    reasonDetails: [],
    writers: [],
    stopped: [],
    listing: null,
    stats: { bytesTransferred: 0, filesTransferred: 0 },
    redact: o.redact ?? false,
    lost: [],
    leftByChoice: [],
  };
}
