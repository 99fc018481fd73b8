/**
 * The node guard's S3 copies in a salvage: a file the guard verified in S3 at the size and mtime the
 * node shows now counts as saved (`s3: 'present'`, left with `guard-s3`), and is not downloaded again unless
 * `--download-guarded`. With an S3 credential here each object is read back first (its size and the guard's
 * `x-amz-meta-sha256`); an object missing or different is downloaded as any other file. Without one, the guard's
 * journal alone counts (`guardS3: 'journal'`, said in the manifest's `guard.s3Error`).
 */
import { errorMessage } from '../../util/errors';
import { formatS3Url, headObjects, uploadKey } from '../s3/s3';
import type { ItemPatch, PhaseEnv } from '../phase';
import { GuardSeen, LEFT_REASON_TEXT, SalvageGuardRecord, SalvageItem, SalvageManifest } from '../salvageTypes';
import { isFileItem } from '../salvageUtil';

/** The listed mtime (ISO, ms) and the guard's (seconds, float) are the same stat, printed differently. */
function sameStat(it: SalvageItem, v: GuardSeen['verified'][number]): boolean {
  return v.size === it.size && Math.abs(Date.parse(it.mtime) / 1000 - v.mtime) < 0.002;
}

/** What the guard's S3 copy holds: the record for `manifest.guard`, and the items it counts as saved (their patch). */
interface GuardCount {
  record: SalvageGuardRecord | null;
  counted: { item: SalvageItem; patch: ItemPatch }[];
}

/** Which of `items` the guard's S3 copy holds (read back from S3 when a credential is here). */
export async function countGuardCopies(env: PhaseEnv, items: readonly SalvageItem[], seen: GuardSeen | null): Promise<GuardCount> {
  const counted: GuardCount['counted'] = [];
  if (!seen) return { record: null, counted };
  const rec: SalvageGuardRecord = {
    running: seen.running,
    to: seen.to,
    s3: seen.s3 ? formatS3Url(seen.s3.bucket, seen.s3.prefix) : null,
    s3Endpoint: seen.s3?.endpoint ?? null,
    verifiedInJournal: seen.verified.length,
    counted: 0,
    confirmed: 0,
    notCounted: 0,
    s3Error: null,
    downloaded: Boolean(env.o.downloadGuarded),
  };
  const s3 = seen.s3;
  if (!s3 || !seen.verified.length || rec.downloaded) return { record: rec, counted };
  const byPath = new Map(seen.verified.map((v) => [v.path, v]));
  const named = items.filter((i) => isFileItem(i) && i.selected && i.status === 'pending' && byPath.has(i.remotePath));
  const fresh = named.filter((i) => sameStat(i, byPath.get(i.remotePath)!));
  rec.notCounted = named.length - fresh.length;
  const keyOf = (i: SalvageItem) => uploadKey(i.remotePath, s3.prefix);
  let heads: Awaited<ReturnType<typeof headObjects>> | null = null;
  if (fresh.length) {
    env.progress('plan', `Reading back ${fresh.length} file(s) the node's guard verified in ${rec.s3}…`);
    try {
      heads = await headObjects({ bucket: s3.bucket, prefix: s3.prefix, endpoint: s3.endpoint ?? undefined }, fresh.map(keyOf), {
        signal: env.o.signal as AbortSignal | undefined,
      });
    } catch (e) {
      rec.s3Error = errorMessage(e);
      env.log.warn(`The guard's S3 copy could not be read back (${rec.s3Error}); its journal alone counts.`);
    }
  }
  for (const it of fresh) {
    const v = byPath.get(it.remotePath)!;
    let how: 'confirmed' | 'journal' = 'journal';
    if (heads) {
      const h = heads.get(keyOf(it));
      if (!h || h.size !== it.size || h.sha256 !== v.sha256) {
        rec.notCounted++;
        continue;
      }
      how = 'confirmed';
      rec.confirmed++;
    }
    rec.counted++;
    counted.push({
      item: it,
      patch: {
        selected: false,
        status: 'skipped',
        leftReason: 'guard-s3',
        reason: LEFT_REASON_TEXT['guard-s3'] + (how === 'journal' ? ' (its journal; S3 could not be read back here)' : ''),
        sha256: v.sha256,
        s3: 'present',
        s3Key: keyOf(it),
        guardS3: how,
      },
    });
  }
  return { record: rec, counted };
}

/** A counted file that changed on the node since: it is a file to download again, as any other. */
export function uncountGuardCopy(m: SalvageManifest, it: SalvageItem): void {
  if (!it.guardS3) return;
  if (m.guard) {
    m.guard.counted--;
    if (it.guardS3 === 'confirmed') m.guard.confirmed--;
    m.guard.notCounted++;
  }
  Object.assign(it, { selected: true, status: 'pending', leftReason: null, reason: null, sha256: null, s3: 'unknown', s3Key: null });
  delete it.guardS3;
}
