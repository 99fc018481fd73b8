/**
 * S3: what the bucket already holds (and so may stay on the node), and node → S3 uploads of what it lacks. The
 * phases return what they found; the orchestrator (flows/salvage.ts) applies it to the manifest.
 */
import { readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../util/errors';
import { PendingUpload, UploadResult, UploadResume, uploadPartsSchema } from './upload';
import { parseDocument } from '../../util/document';
import { remoteHashes } from '../transfer/transfer';
import { Settled, unwrap } from '../early';
import { S3Inventory } from './s3';
import { writeAtomic } from '../dest/runDir';
import type { Logger } from '../../util/logger';
import type { ItemPatch, PhaseEnv } from '../phase';
import type { SalvageItem, SalvageManifest } from '../salvageTypes';
import { isFileItem } from '../salvageUtil';

/** What the S3 check found: the step's state, the bucket's record, and each item's place in it. */
export interface S3Check {
  step: SalvageManifest['steps']['s3'];
  record: SalvageManifest['s3'] | null;
  marks: { item: SalvageItem; patch: ItemPatch }[];
}

/** Items whose place in S3 is not known (the node guard's S3 copies keep what this run read of them). */
function unknownIn(items: readonly SalvageItem[]): S3Check['marks'] {
  return items.filter((it) => !it.guardS3).map((item) => ({ item, patch: { s3: 'unknown' } }));
}

/** `early`: the inventory started with the transfer (the first check; after uploads S3 is listed again). */
export async function runS3Step(env: PhaseEnv, items: readonly SalvageItem[], early?: Promise<Settled<S3Inventory>>): Promise<S3Check> {
  const { o } = env;
  const s3 = o.s3;
  if (!s3)
    return {
      step: { status: 'skipped', reason: 'no S3 bucket configured (CLI --s3 s3://bucket/prefix, setting gpuSessions.salvage.s3)' },
      record: null,
      marks: unknownIn(items),
    };
  env.progress('s3', `Checking s3://${s3.bucket}/${s3.prefix}…`);
  const { inventoryS3, matchToS3, summarizeS3 } = await import('./s3');
  let inv;
  try {
    inv = early ? unwrap(await early) : await env.timer.time('s3', () => inventoryS3(s3, { signal: o.signal as AbortSignal | undefined }));
  } catch (e) {
    return {
      step: { status: 'failed', reason: errorMessage(e) },
      record: { target: `s3://${s3.bucket}/${s3.prefix}`, endpoint: s3.endpoint, objects: 0, bytes: 0, error: errorMessage(e) },
      marks: unknownIn(items),
    };
  }
  env.timer.start('s3');
  // MD5 of files we did not download, so single-part ETags can be compared (bounded work on the node).
  const candidates = items.filter((i) => isFileItem(i) && !i.md5 && i.status !== 'verified' && !i.guardS3);
  const pre = matchToS3(
    candidates.map((i) => ({ remotePath: i.remotePath, size: i.size })),
    inv,
    s3.mappings,
  );
  const needMd5 = candidates.filter(
    (_, k) =>
      pre[k].status === 'unverified' && pre[k].key && /^[0-9a-f]{32}$/.test(inv.objects.find((x) => x.key === pre[k].key)?.etag ?? ''),
  );
  let md5s = new Map<string, string>();
  const md5Bytes = needMd5.reduce((a, b) => a + b.size, 0);
  if (needMd5.length && md5Bytes <= 64 * 1024 * 1024 * 1024) {
    try {
      md5s = await remoteHashes(
        o.transport,
        needMd5.map((i) => i.remotePath),
        'md5',
        o.signal,
      );
    } catch (e) {
      env.log.warn(`MD5 on the node failed: ${errorMessage(e)}`);
    }
  }
  const fileItems = items.filter((i) => isFileItem(i) && !i.guardS3);
  const matches = matchToS3(
    fileItems.map((i) => ({ remotePath: i.remotePath, size: i.size, md5: i.md5 ?? md5s.get(i.remotePath) ?? null })),
    inv,
    s3.mappings,
  );
  const sum = summarizeS3(inv, matches);
  env.timer.stop('s3');
  return {
    step: {
      status: 'done',
      reason:
        `${sum.objects} objects (${sum.bytes} B); ${sum.present} present, ${sum.unverified} size-only, ` +
        `${sum.missing} missing, ${sum.mismatch} mismatched`,
    },
    record: { target: `s3://${s3.bucket}/${s3.prefix}`, endpoint: s3.endpoint, objects: sum.objects, bytes: sum.bytes },
    marks: fileItems.map((item, k) => ({ item, patch: { s3: matches[k].status, s3Key: matches[k].key } })),
  };
}

/**
 * Send what S3 is missing (or holds differently) straight from the node: large files the laptop did not
 * pull included; secret stores, caches and re-downloadable weights never. `null`: nothing to send.
 */
export async function uploadMissing(env: PhaseEnv, items: readonly SalvageItem[]): Promise<UploadResult[] | null> {
  const { o } = env;
  const s3 = o.s3;
  if (!s3) return null;
  const { uploadKey } = await import('./s3');
  const { uploadFromNode } = await import('./upload');
  const todo = items.filter(
    (i) =>
      isFileItem(i) &&
      !i.goneFromNode &&
      (i.s3 === 'missing' || i.s3 === 'mismatch') &&
      i.leftReason !== 'secret-store' &&
      i.leftReason !== 'redownloadable-weights' &&
      i.leftReason !== 'on-the-hub',
  );
  if (!todo.length) return null;
  env.progress('s3', `Uploading ${todo.length} file(s) from the node to s3://${s3.bucket}/${s3.prefix}…`);
  return uploadFromNode(
    o.transport,
    s3,
    todo.map((i) => ({
      remotePath: i.remotePath,
      size: i.size,
      key: i.s3 === 'mismatch' && i.s3Key ? i.s3Key : uploadKey(i.remotePath, s3.prefix, s3.mappings),
    })),
    { partSize: o.partSize, signal: o.signal, onProgress: (msg) => env.progress('s3', msg), resume: pendingUploads(env.dir, env.log) },
  );
}

/**
 * After the uploads (and S3 checked again): every part's ETag was checked against the node's MD5 and the object's size
 * read back, while a multipart ETag is not an MD5 of the whole, so the check may only say "unverified" or "mismatch";
 * the uploaded files are present. Returns their patches and the S3 step's state.
 */
export function afterUploads(
  items: readonly SalvageItem[],
  res: readonly UploadResult[],
  checked: SalvageManifest['steps']['s3'],
): { marks: S3Check['marks']; step: SalvageManifest['steps']['s3'] } {
  const byPath = new Map(res.filter((r) => r.ok).map((r) => [r.remotePath, r]));
  const marks: S3Check['marks'] = [];
  for (const item of items) {
    const r = byPath.get(item.remotePath);
    if (r) marks.push({ item, patch: { s3: 'present', s3Key: r.s3Object } });
  }
  const failed = res.filter((r) => !r.ok);
  return {
    marks,
    step: {
      status: failed.length ? 'failed' : 'done',
      reason:
        `${checked.reason ?? ''}; uploaded ${res.length - failed.length} of ${res.length} file(s) from the ` +
        `node${failed.length ? ` (${failed[0].remotePath}: ${failed[0].reason})` : ''}`,
    },
  };
}

/** Unfinished multipart uploads of the run folder `dir` (a rerun continues the folder, so it resumes them per part). */
export function pendingUploads(dir: string, log: Logger): UploadResume {
  const file = path.join(dir, 'upload-parts.json');
  let all: Record<string, PendingUpload> = {};
  let text: string | null = null;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    /* none yet */
  }
  try {
    if (text !== null) all = parseDocument(uploadPartsSchema, text, file);
  } catch (e) {
    // Only resume state: the uploads start again from their first part (as with no file).
    log.warn(`${errorMessage(e)} — the unfinished uploads it named start again from their first part.`);
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
