/**
 * What salvage reads of the node's own guard, with ./seen.py (read only: it writes nothing and makes no
 * folder): the guard's `--to` folder, which salvage never lists, and the files it verified in S3, which salvage
 * counts as saved once it has read them back (core/salvage/guardCopies.ts). The node's answer is checked field by
 * field; a node without python3 or without a guard answers null.
 */
import type { RemoteOperation } from '../remote/operation';
import { runOperation } from '../remote/operation';
import type { AbortLike, Transport } from '../ssh/transport';
import type { GuardSeen } from '../salvage/salvageTypes';
import { pyOperation } from './operations';

/** At most this many verified files are read (a bigger journal: the rest is downloaded as usual). */
const MAX_ROWS = 200_000;

const isSha = (v: unknown): v is string => typeof v === 'string' && /^[0-9a-f]{64}$/.test(v);

export function parseGuardSeen(o: Record<string, unknown>): GuardSeen | null {
  if (o.guard !== true) return null;
  const s3o = o.s3 && typeof o.s3 === 'object' && !Array.isArray(o.s3) ? (o.s3 as Record<string, unknown>) : null;
  const s3 =
    s3o && typeof s3o.bucket === 'string' && s3o.bucket && typeof s3o.prefix === 'string'
      ? { bucket: s3o.bucket, prefix: s3o.prefix, endpoint: typeof s3o.endpoint === 'string' && s3o.endpoint ? s3o.endpoint : null }
      : null;
  const verified: GuardSeen['verified'] = [];
  for (const r of Array.isArray(o.verified) ? o.verified.slice(0, MAX_ROWS) : []) {
    if (!Array.isArray(r)) continue;
    const [p, size, mtime, sha256] = r as unknown[];
    if (typeof p !== 'string' || !p.startsWith('/') || p.includes('\0')) continue;
    if (!(typeof size === 'number' && Number.isInteger(size) && size >= 0) || !(typeof mtime === 'number' && Number.isFinite(mtime)))
      continue;
    if (!isSha(sha256)) continue;
    verified.push({ path: p, size, mtime, sha256 });
  }
  const to = typeof o.to === 'string' && o.to.startsWith('/') && o.to !== '/' ? o.to : null;
  return { running: o.running === true, to, s3, verified };
}

export function guardSeenOperation(): RemoteOperation<GuardSeen | null> {
  return {
    ...pyOperation('guard-seen', { limit: MAX_ROWS }, 60_000, parseGuardSeen, 'seen.py'),
    // ours: salvage reads it while the node is listed, and the listing never takes it for a process of the work
    command: 'GPU_SESSIONS_OP=1 python3 -',
    maxOutputBytes: 64 * 1024 * 1024,
    idempotent: true,
  };
}

/** The guard as salvage sees it, or null (no guard, no python3, an answer that is not one). Never throws. */
export async function readGuardSeen(t: Transport, signal?: AbortLike): Promise<GuardSeen | null> {
  try {
    return await runOperation(t, guardSeenOperation(), signal);
  } catch {
    return null;
  }
}
