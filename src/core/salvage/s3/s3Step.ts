/**
 * S3: what the bucket already holds (and so may stay on the node), and node → S3 uploads of what it lacks.
 */
import { readFileSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../util/errors';
import { PendingUpload, UploadResume, uploadPartsSchema } from './upload';
import { parseDocument } from '../../util/document';
import { remoteHashes } from '../transfer/transfer';
import { Settled, unwrap } from '../early';
import { S3Inventory } from './s3';
import { writeAtomic } from '../dest/runDir';
import type { SalvageRun } from '../salvageRun';
import { isFileItem } from '../salvageUtil';

/** `early`: the inventory started with the transfer (the first check; after uploads S3 is listed again). */
export async function runS3Step(sv: SalvageRun, early?: Promise<Settled<S3Inventory>>): Promise<void> {
  const m = sv.manifest;
  const s3 = sv.o.s3;
  if (!s3) {
    m.steps.s3 = { status: 'skipped', reason: 'no S3 bucket configured (CLI --s3 s3://bucket/prefix, setting gpuSessions.salvage.s3)' };
    // the node guard's S3 copies (./guardCopies) keep what this run read of them
    for (const it of m.items) if (!it.guardS3) it.s3 = 'unknown';
    sv.save(true);
    return;
  }
  m.steps.s3 = { status: 'running' };
  sv.progress('s3', `Checking s3://${s3.bucket}/${s3.prefix}…`);
  const { inventoryS3, matchToS3, summarizeS3 } = await import('./s3');
  let inv;
  try {
    inv = early
      ? unwrap(await early)
      : await sv.timer.time('s3', () => inventoryS3(s3, { signal: sv.o.signal as AbortSignal | undefined }));
  } catch (e) {
    m.s3 = { target: `s3://${s3.bucket}/${s3.prefix}`, endpoint: s3.endpoint, objects: 0, bytes: 0, error: errorMessage(e) };
    m.steps.s3 = { status: 'failed', reason: errorMessage(e) };
    for (const it of m.items) if (!it.guardS3) it.s3 = 'unknown';
    sv.save(true);
    return;
  }
  sv.timer.start('s3');
  // MD5 of files we did not download, so single-part ETags can be compared (bounded work on the node).
  const candidates = m.items.filter((i) => isFileItem(i) && !i.md5 && i.status !== 'verified' && !i.guardS3);
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
        sv.o.transport,
        needMd5.map((i) => i.remotePath),
        'md5',
        sv.o.signal,
      );
    } catch (e) {
      sv.log.warn(`MD5 on the node failed: ${errorMessage(e)}`);
    }
  }
  const fileItems = m.items.filter((i) => isFileItem(i) && !i.guardS3);
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
  sv.timer.stop('s3');
  sv.save(true);
}

/**
 * Send what S3 is missing (or holds differently) straight from the node: large files the laptop did not
 * pull included; secret stores, caches and re-downloadable weights never. Then S3 is checked again.
 */
export async function runUploadStep(sv: SalvageRun): Promise<void> {
  const m = sv.manifest;
  const s3 = sv.o.s3;
  if (!s3 || !m.s3 || m.s3.error) return;
  const { uploadKey } = await import('./s3');
  const { uploadFromNode } = await import('./upload');
  const todo = m.items.filter(
    (i) =>
      isFileItem(i) &&
      !i.goneFromNode &&
      (i.s3 === 'missing' || i.s3 === 'mismatch') &&
      i.leftReason !== 'secret-store' &&
      i.leftReason !== 'redownloadable-weights' &&
      i.leftReason !== 'on-the-hub',
  );
  if (!todo.length) return;
  sv.progress('s3', `Uploading ${todo.length} file(s) from the node to s3://${s3.bucket}/${s3.prefix}…`);
  const res = await uploadFromNode(
    sv.o.transport,
    s3,
    todo.map((i) => ({
      remotePath: i.remotePath,
      size: i.size,
      key: i.s3 === 'mismatch' && i.s3Key ? i.s3Key : uploadKey(i.remotePath, s3.prefix, s3.mappings),
    })),
    { partSize: sv.o.partSize, signal: sv.o.signal, onProgress: (msg) => sv.progress('s3', msg), resume: pendingUploads(sv) },
  );
  m.uploads = res;
  sv.save(true);
  await runS3Step(sv);
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
    reason:
      `${m.steps.s3.reason ?? ''}; uploaded ${res.length - failed.length} of ${res.length} file(s) from the ` +
      `node${failed.length ? ` (${failed[0].remotePath}: ${failed[0].reason})` : ''}`,
  };
  sv.save(true);
}

/** Unfinished multipart uploads of this run folder (a rerun continues the folder, so it resumes them per part). */
export function pendingUploads(sv: SalvageRun): UploadResume {
  const file = path.join(sv.dir, 'upload-parts.json');
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
    sv.log.warn(`${errorMessage(e)} — the unfinished uploads it named start again from their first part.`);
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
