/**
 * Restore from the node guard's S3 copy: a salvage counts the files the guard verified in S3 as saved
 * and does not download them (core/salvage/guardCopies.ts). Restoring that run reads those files back from the
 * guard's S3 place into the run folder (each checked against the SHA-256 the guard verified), so the plan sends
 * them as any other verified file. A file already there with that hash is not read again; one that cannot be read
 * or hashes differently stays out of the plan, named with why.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { errorMessage } from '../util/errors';
import type { SalvageManifest } from '../salvage/salvageTypes';
import { getObjectToFile, parseS3Url } from '../salvage/s3/s3';
import { localBytesPath } from './files';

export interface GuardFetch {
  /** Read from S3 now, and already in the run folder from an earlier restore. */
  fetched: number;
  present: number;
  failed: Array<{ path: string; reason: string }>;
}

const isSha = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);

export async function fetchGuardCopies(
  runDir: string,
  m: SalvageManifest,
  o: { signal?: AbortSignal; onProgress?: (m: string) => void } = {},
): Promise<GuardFetch> {
  const res: GuardFetch = { fetched: 0, present: 0, failed: [] };
  const items = m.items.filter((i) => i.guardS3 && i.leftReason === 'guard-s3' && i.status !== 'verified');
  if (!items.length) return res;
  const u = m.guard?.s3 ? parseS3Url(m.guard.s3) : undefined;
  if (!u) {
    for (const it of items) res.failed.push({ path: it.remotePath, reason: "the salvage names no S3 place of the node's guard" });
    return res;
  }
  const target = { bucket: u.bucket, prefix: u.prefix, endpoint: m.guard?.s3Endpoint ?? undefined };
  o.onProgress?.(`Reading ${items.length} file(s) from the guard's copy in ${m.guard!.s3}…`);
  for (const it of items) {
    try {
      if (!isSha(it.sha256) || !it.s3Key || !it.s3Key.startsWith(u.prefix)) throw new Error('its record names no key or SHA-256');
      const file = localBytesPath(runDir, it);
      if (existsSync(file) && createHash('sha256').update(readFileSync(file)).digest('hex') === it.sha256) res.present++;
      else {
        rmSync(file, { force: true });
        const got = await getObjectToFile(target, it.s3Key, file, o.signal);
        if (got.sha256 !== it.sha256) {
          rmSync(file, { force: true });
          throw new Error(`the S3 copy hashes ${got.sha256.slice(0, 12)}…, not the ${it.sha256.slice(0, 12)}… the guard verified`);
        }
        res.fetched++;
      }
      // in memory only: the salvage record stays as it was written
      it.status = 'verified';
    } catch (e) {
      res.failed.push({ path: it.remotePath, reason: `not restored from the guard's S3 copy: ${errorMessage(e)}` });
    }
  }
  return res;
}
