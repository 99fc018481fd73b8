/**
 * The S3 side of Salvage Node: "what on the node is already safely in S3?".
 *
 * - `inventoryS3` lists every object under s3://bucket/prefix (ListObjectsV2, 1000 a page), bounded and abortable.
 * - `matchToS3` pairs the node's files with those objects (by an explicit mapping, else by the longest common
 *   path suffix) and says present / missing / mismatch / unverified / unknown, with the reason in words.
 *
 * Credentials come only from the AWS SDK default chain (env, shared config and credentials files and profiles,
 * SSO, process, web identity, ECS/IMDS): never stored by us, never logged. `@aws-sdk/client-s3` is loaded
 * lazily (it costs ~170 ms), so importing this module is free.
 */
import type { S3Client, ListObjectsV2CommandOutput } from '@aws-sdk/client-s3';
import { GpuSessionsError } from '../../util/errors';

export interface S3Target {
  bucket: string;
  /** Key prefix, as S3 means it (a plain string prefix; '' = the whole bucket). */
  prefix: string;
  /** S3-compatible store (MinIO, R2, s3rver...): then forcePathStyle defaults to true. */
  endpoint?: string;
  /** Default: AWS_REGION, AWS_DEFAULT_REGION, else us-east-1. */
  region?: string;
  forcePathStyle?: boolean;
  /** A profile of ~/.aws/config; default: AWS_PROFILE or 'default', as the SDK does. */
  profile?: string;
}

export interface S3Object {
  key: string;
  size: number;
  /** Without quotes. A plain 32-hex MD5 for single-part uploads (unless SSE-KMS/SSE-C), `<hex>-N` for multipart. */
  etag: string;
  lastModified: string | null;
}

export interface S3Inventory {
  target: S3Target;
  objects: S3Object[];
  totalBytes: number;
  pages: number;
  /** True when maxObjects stopped the listing before its end. */
  truncated: boolean;
  durationMs: number;
}

export type S3Status = 'present' | 'missing' | 'mismatch' | 'unverified' | 'unknown';

interface S3MatchInput {
  remotePath: string;
  size: number;
  /** Hex MD5 of the file on the node, when known. */
  md5?: string | null;
}

/** e.g. `{ remotePrefix: '/root/completions/', s3Prefix: 'completions/' }`. */
export interface S3Mapping {
  remotePrefix: string;
  /**
   * Relative to the target's prefix (`completions/` under `s3://b/train-dflash/` = `train-dflash/completions/`);
   * one that already starts with the target's prefix, or starts with '/', is taken from the bucket's root.
   */
  s3Prefix: string;
}

interface S3Match {
  remotePath: string;
  status: S3Status;
  key: string | null;
  reason: string;
}

/** Why an S3 call failed, in `GpuSessionsError.detail.s3` (the code is 'remote-failed', or 'cancelled'). */
type S3Problem =
  | 'no-credentials'
  | 'expired-token'
  | 'bad-credentials'
  | 'access-denied'
  | 'no-such-bucket'
  | 'wrong-region'
  | 'unreachable'
  | 'timeout'
  | 'cancelled'
  | 'other';

// ---------------------------------------------------------------------------------------------------------------
// URLs

const BUCKET_RE = /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/i;

/** `s3://bucket/prefix/` → `{ bucket, prefix }` (prefix kept as written; '' when absent); undefined on garbage. */
export function parseS3Url(url: string): { bucket: string; prefix: string } | undefined {
  if (typeof url !== 'string') return undefined;
  const m = /^s3:\/\/([^/]*)(?:\/(.*))?$/is.exec(url.trim());
  if (!m) return undefined;
  const bucket = m[1];
  const prefix = m[2] ?? '';
  if (!BUCKET_RE.test(bucket) || bucket.includes('..') || /^\d+\.\d+\.\d+\.\d+$/.test(bucket)) return undefined;
  // keys are UTF-8 up to 1024 bytes; control characters in a URL typed by a person are garbage
  if (/[\u0000-\u001f\u007f]/.test(prefix) || Buffer.byteLength(prefix) > 1024) return undefined;
  return { bucket, prefix };
}

export function formatS3Url(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Inventory

type S3Module = typeof import('@aws-sdk/client-s3');

function loadSdk(): S3Module {
  // Lazy on purpose: the SDK costs ~170 ms to load and activation must not pay it.
  return require('@aws-sdk/client-s3') as S3Module;
}

export function resolveRegion(t: S3Target, env: NodeJS.ProcessEnv = process.env): string {
  return t.region || env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1';
}

const QUIET_ENV = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

function makeClient(sdk: S3Module, t: S3Target, extra: Partial<import('@aws-sdk/client-s3').S3ClientConfig> = {}): S3Client {
  // The SDK warns on stderr (once per process) that its releases after January 2027 will need Node >= 22.
  // That is for us to act on, not the user of the CLI or of VS Code's extension host: keep it out of their
  // output, for this construction only (the env var is restored at once).
  const had = Object.prototype.hasOwnProperty.call(process.env, QUIET_ENV);
  const prev = process.env[QUIET_ENV];
  if (!had) process.env[QUIET_ENV] = 'true';
  try {
    return newClient(sdk, t, extra);
  } finally {
    if (!had) delete process.env[QUIET_ENV];
    else process.env[QUIET_ENV] = prev;
  }
}

function newClient(sdk: S3Module, t: S3Target, extra: Partial<import('@aws-sdk/client-s3').S3ClientConfig> = {}): S3Client {
  return new sdk.S3Client({
    ...extra,
    region: resolveRegion(t),
    ...(t.endpoint ? { endpoint: t.endpoint } : {}),
    forcePathStyle: t.forcePathStyle ?? !!t.endpoint,
    ...(t.profile ? { profile: t.profile } : {}),
    // on AWS proper, a bucket in another region answers 301: follow it instead of failing
    followRegionRedirects: !t.endpoint,
    // no connect timeout by default: a black-holed endpoint would hang for minutes per attempt
    requestHandler: { connectionTimeout: 10_000, requestTimeout: 120_000 },
    maxAttempts: 3,
  });
}

/**
 * A client for the laptop side of node → S3 uploads (create/complete multipart, presigning). Checksums only
 * when required: presigned URLs then carry nothing the node's curl would have to compute.
 */
export function s3ClientFor(t: S3Target): S3Client {
  return makeClient(loadSdk(), t, { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' });
}

/** The key a node file gets when it is uploaded: the configured mapping, else the node path under the prefix. */
export function uploadKey(remotePath: string, prefix: string, mappings?: S3Mapping[]): string {
  const m = mappedKey(remotePath, prefix, mappings);
  if (m) return m.key;
  return (prefix ? withSlash(prefix) : '') + remotePath.replace(/^\/+/, '');
}

/** `s3://bucket/prefix` or, with a custom endpoint, `s3://bucket/prefix at http://host:port`. */
function describeTarget(t: S3Target): string {
  return formatS3Url(t.bucket, t.prefix) + (t.endpoint ? ` at ${t.endpoint}` : '');
}

function cancelled(t: S3Target): GpuSessionsError {
  return new GpuSessionsError('cancelled', `S3 inventory of ${describeTarget(t)} was cancelled.`, { s3: 'cancelled' satisfies S3Problem });
}

function stripQuotes(etag: string | undefined): string {
  if (!etag) return '';
  let e = etag.trim();
  if (e.startsWith('W/')) e = e.slice(2);
  if (e.length >= 2 && e.startsWith('"') && e.endsWith('"')) e = e.slice(1, -1);
  return e.replace(/^&quot;|&quot;$/g, '');
}

/** S3's `encoding-type=url` is form encoding: '+' is a space. */
function urlDecodeKey(k: string): string {
  try {
    return decodeURIComponent(k.replace(/\+/g, ' '));
  } catch {
    return k;
  }
}

/**
 * List every object under the target's prefix. `onPage` is called after each page with the number of objects
 * listed so far. Stops at `maxObjects` (default 1,000,000) with `truncated: true`.
 * Throws GpuSessionsError: 'remote-failed' with `detail.s3` naming the problem, or 'cancelled'.
 */
export async function inventoryS3(
  t: S3Target,
  opts: { maxObjects?: number; signal?: AbortSignal; onPage?: (n: number) => void } = {},
): Promise<S3Inventory> {
  const maxObjects = Math.max(0, Math.floor(opts.maxObjects ?? 1_000_000));
  const signal = opts.signal;
  if (signal?.aborted) throw cancelled(t);
  const t0 = performance.now();
  const sdk = loadSdk();
  const client = makeClient(sdk, t);
  const objects: S3Object[] = [];
  let totalBytes = 0;
  let pages = 0;
  let truncated = false;
  let token: string | undefined;
  try {
    for (;;) {
      if (signal?.aborted) throw cancelled(t);
      const remaining = maxObjects - objects.length;
      if (remaining <= 0) {
        truncated = true;
        break;
      }
      let out: ListObjectsV2CommandOutput;
      try {
        out = await client.send(
          new sdk.ListObjectsV2Command({
            Bucket: t.bucket,
            Prefix: t.prefix || undefined,
            ContinuationToken: token,
            MaxKeys: Math.min(1000, remaining),
            // as awscli does: keys with characters XML 1.0 cannot carry still list
            EncodingType: 'url',
          }),
          signal ? { abortSignal: signal } : undefined,
        );
      } catch (e) {
        if (signal?.aborted) throw cancelled(t);
        throw s3Error(e, t);
      }
      pages++;
      const encoded = out.EncodingType === 'url';
      for (const c of out.Contents ?? []) {
        if (c.Key === undefined) continue;
        if (objects.length >= maxObjects) {
          truncated = true;
          break;
        }
        const size = Number(c.Size ?? 0);
        objects.push({
          key: encoded ? urlDecodeKey(c.Key) : c.Key,
          size,
          etag: stripQuotes(c.ETag),
          lastModified: c.LastModified instanceof Date && !isNaN(c.LastModified.getTime()) ? c.LastModified.toISOString() : null,
        });
        totalBytes += size;
      }
      opts.onPage?.(objects.length);
      if (truncated) break;
      if (!out.IsTruncated) break;
      if (!out.NextContinuationToken) {
        // A store that says "truncated" but gives no token would loop forever.
        throw new GpuSessionsError(
          'remote-failed',
          `S3 listing of ${describeTarget(t)} is truncated but the store gave no continuation token (page ${pages}); ` +
            `the store does not implement ListObjectsV2 paging.`,
          { s3: 'other' satisfies S3Problem },
        );
      }
      if (objects.length >= maxObjects) {
        truncated = true;
        break;
      }
      token = out.NextContinuationToken;
    }
  } finally {
    client.destroy();
  }
  return { target: { ...t }, objects, totalBytes, pages, truncated, durationMs: Math.round(performance.now() - t0) };
}

/**
 * The size and `x-amz-meta-sha256` of each key (null: no such object), a few requests at a time. Throws as
 * inventoryS3 does when the store cannot be read at all (no credential, no network).
 */
export async function headObjects(
  t: S3Target,
  keys: string[],
  opts: { signal?: AbortSignal; concurrency?: number } = {},
): Promise<Map<string, { size: number; sha256: string | null } | null>> {
  const sdk = loadSdk();
  const client = makeClient(sdk, t);
  const out = new Map<string, { size: number; sha256: string | null } | null>();
  let next = 0;
  const one = async (): Promise<void> => {
    while (next < keys.length) {
      if (opts.signal?.aborted) throw cancelled(t);
      const key = keys[next++];
      try {
        const h = await client.send(new sdk.HeadObjectCommand({ Bucket: t.bucket, Key: key }), { abortSignal: opts.signal });
        out.set(key, { size: Number(h.ContentLength ?? -1), sha256: h.Metadata?.sha256 ?? null });
      } catch (e) {
        const status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
        if (status === 404) out.set(key, null);
        else throw s3Error(e, t);
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.concurrency ?? 8, keys.length)) }, one));
  } finally {
    client.destroy();
  }
  return out;
}

/**
 * One object's bytes into `file` (written as `file.gs-s3.tmp`, then renamed), with their SHA-256. The caller
 * compares the hash before it trusts the bytes. Throws as inventoryS3 does.
 */
export async function getObjectToFile(
  t: S3Target,
  key: string,
  file: string,
  signal?: AbortSignal,
): Promise<{ sha256: string; size: number }> {
  const { createHash } = await import('node:crypto');
  const { createWriteStream, mkdirSync, renameSync, rmSync } = await import('node:fs');
  const { pipeline } = await import('node:stream/promises');
  const { dirname } = await import('node:path');
  const sdk = loadSdk();
  const client = makeClient(sdk, t);
  const tmp = `${file}.gs-s3.tmp`;
  try {
    const out = await client.send(new sdk.GetObjectCommand({ Bucket: t.bucket, Key: key }), { abortSignal: signal });
    const body = out.Body as NodeJS.ReadableStream | undefined;
    if (!body) throw new GpuSessionsError('remote-failed', `S3 gave no body for ${formatS3Url(t.bucket, key)}.`);
    mkdirSync(dirname(file), { recursive: true });
    const h = createHash('sha256');
    let size = 0;
    body.on('data', (b: Buffer) => {
      h.update(b);
      size += b.length;
    });
    await pipeline(body, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }), { signal });
    renameSync(tmp, file);
    return { sha256: h.digest('hex'), size };
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e instanceof GpuSessionsError ? e : s3Error(e, t);
  } finally {
    client.destroy();
  }
}

const NET_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
  'ECONNABORTED',
  'EPROTO',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);
const TIMEOUT_CODES = new Set(['ETIMEDOUT', 'TimeoutError', 'RequestTimeout', 'RequestTimeoutException']);

/**
 * Map an SDK error to a GpuSessionsError whose message names the problem and what to do. Never includes
 * credentials (SDK errors carry none of the secret; we do not copy the error object).
 */
export function s3Error(e: unknown, t: S3Target): GpuSessionsError {
  if (e instanceof GpuSessionsError) return e;
  const err = (e ?? {}) as {
    name?: string;
    message?: string;
    code?: string;
    Code?: string;
    errno?: string;
    $metadata?: { httpStatusCode?: number };
    cause?: { code?: string; message?: string };
  };
  const name = err.name ?? '';
  const awsCode = err.Code ?? (name && name !== 'Error' ? name : '');
  const netCode = err.code ?? err.errno ?? err.cause?.code ?? '';
  const msg = String(err.message ?? e ?? '');
  const status = err.$metadata?.httpStatusCode;
  const where = describeTarget(t);
  const profile = t.profile ?? process.env.AWS_PROFILE;
  const profileHint = profile ? ` --profile ${profile}` : '';
  const profileNote = profile ? ` (profile ${profile})` : '';
  const detail = (s3: S3Problem): Record<string, unknown> => ({
    s3,
    awsCode: awsCode || undefined,
    httpStatus: status,
    netCode: netCode || undefined,
    bucket: t.bucket,
    prefix: t.prefix,
    endpoint: t.endpoint,
  });
  const fail = (s3: S3Problem, m: string): GpuSessionsError =>
    new GpuSessionsError(s3 === 'cancelled' ? 'cancelled' : 'remote-failed', m, detail(s3));

  if (name === 'AbortError' || netCode === 'ABORT_ERR') return fail('cancelled', `S3 inventory of ${where} was cancelled.`);

  // Credentials that could not be had at all, or an SSO session / token that ran out before the request.
  if (name === 'CredentialsProviderError' || name === 'TokenProviderError' || /Could not load credentials/i.test(msg)) {
    if (/expired|refresh|sso session/i.test(msg)) {
      return fail(
        'expired-token',
        `AWS credentials for ${where} have expired (${msg.replace(/\s+/g, ' ').slice(0, 200)}): run \`aws sso login${profileHint}\`, or refresh the session ` +
          `credentials (AWS_SESSION_TOKEN) and try again.`,
      );
    }
    const profileCheck = profile
      ? ` (profile ${profile}: is it in ~/.aws/config or ~/.aws/credentials, with credentials or sso settings?)`
      : '';
    return fail(
      'no-credentials',
      `No AWS credentials found in the default chain for ${where}${profileCheck}: set AWS_PROFILE (a profile ` +
        `in ~/.aws/config or ~/.aws/credentials) or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run \`aws sso ` +
        `login${profileHint}\`; GPU Sessions never stores credentials.`,
    );
  }
  if (
    /^ExpiredToken(Exception)?$/.test(awsCode) ||
    awsCode === 'TokenRefreshRequired' ||
    /security token included in the request is expired|token has expired/i.test(msg)
  ) {
    return fail(
      'expired-token',
      `The AWS session token for ${where} has expired (${awsCode || 'ExpiredToken'}): refresh it (\`aws sso login${profileHint}\`, ` +
        `or new AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY/AWS_SESSION_TOKEN ` +
        `from your identity provider) and try again.`,
    );
  }
  if (
    awsCode === 'InvalidAccessKeyId' ||
    awsCode === 'SignatureDoesNotMatch' ||
    awsCode === 'InvalidToken' ||
    awsCode === 'UnrecognizedClientException'
  ) {
    return fail(
      'bad-credentials',
      `S3 rejected the AWS credentials for ${where} (${awsCode}): the access key or secret from the default chain${profileNote} is wrong or deleted; check ` +
        `AWS_PROFILE / AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY.`,
    );
  }
  if (awsCode === 'AccessDenied' || awsCode === 'AllAccessDisabled' || awsCode === 'Forbidden' || status === 403) {
    return fail(
      'access-denied',
      `Access denied listing ${where} (${awsCode || 'HTTP 403'}): the credentials from the default chain${profileNote} ` +
        `lack s3:ListBucket on bucket ${t.bucket}; use a profile that has ` +
        `it, or ask for the permission.`,
    );
  }
  if (awsCode === 'NoSuchBucket' || (status === 404 && awsCode !== 'NoSuchKey')) {
    return fail(
      'no-such-bucket',
      `No such bucket: ${t.bucket}${t.endpoint ? ` at ${t.endpoint}` : ''}. Check the bucket name in the S3 URL ` +
        `(${formatS3Url(t.bucket, t.prefix)})${t.endpoint ? ' and the endpoint' : ' and the account'}.`,
    );
  }
  if (
    awsCode === 'PermanentRedirect' ||
    awsCode === 'AuthorizationHeaderMalformed' ||
    awsCode === 'IllegalLocationConstraintException' ||
    status === 301
  ) {
    return fail(
      'wrong-region',
      `Bucket ${t.bucket} is in another region than ${resolveRegion(t)} (${awsCode || 'HTTP 301'}): set the region (AWS_REGION) to the bucket's region.`,
    );
  }
  if (NET_CODES.has(netCode) || /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|socket hang up/.test(msg)) {
    const host = t.endpoint ?? `the S3 endpoint for ${resolveRegion(t)}`;
    return fail(
      'unreachable',
      `Cannot reach ${host} to list ${formatS3Url(t.bucket, t.prefix)} (${netCode || msg.slice(0, 120)}): check the endpoint URL, ` +
        `that the store is running, and the network/proxy.`,
    );
  }
  if (TIMEOUT_CODES.has(netCode) || TIMEOUT_CODES.has(name) || TIMEOUT_CODES.has(awsCode)) {
    return fail(
      'timeout',
      `Timed out talking to ${t.endpoint ?? 'S3'} while listing ${formatS3Url(t.bucket, t.prefix)}: check the network and try again.`,
    );
  }
  const codePrefix = awsCode && awsCode !== 'Error' ? awsCode + ': ' : '';
  const http = status ? ` (HTTP ${status})` : '';
  return fail('other', `S3 listing of ${where} failed: ${codePrefix}${msg.replace(/\s+/g, ' ').slice(0, 300)}${http}.`);
}

// ---------------------------------------------------------------------------------------------------------------
// Matching

const MD5_RE = /^[0-9a-f]{32}$/i;
const MULTIPART_RE = /^[0-9a-f]{32}-(\d+)$/i;

function basename(p: string): string {
  const s = p.replace(/\/+$/, '');
  return s.slice(s.lastIndexOf('/') + 1);
}

function withSlash(p: string): string {
  return p === '' || p.endsWith('/') ? p : p + '/';
}

/**
 * The S3 key a mapping sends `remotePath` to, or null when no mapping applies (the longest remotePrefix wins).
 * A remotePrefix is a directory (with or without its trailing '/'), or exactly one file: then s3Prefix is the
 * key, or the folder it goes in when it ends with '/'.
 */
export function mappedKey(
  remotePath: string,
  targetPrefix: string,
  mappings: S3Mapping[] | undefined,
): { key: string; mapping: S3Mapping } | null {
  let best: { key: string; mapping: S3Mapping; len: number } | null = null;
  for (const m of mappings ?? []) {
    if (!m.remotePrefix) continue;
    const dir = withSlash(m.remotePrefix);
    let rel: string;
    if (remotePath.startsWith(dir) && remotePath.length > dir.length) {
      rel = withSlash(m.s3Prefix) + remotePath.slice(dir.length);
    } else if (remotePath === m.remotePrefix && !m.remotePrefix.endsWith('/')) {
      rel = m.s3Prefix === '' || m.s3Prefix.endsWith('/') ? m.s3Prefix + basename(remotePath) : m.s3Prefix;
    } else continue;
    if (best && best.len >= dir.length) continue;
    let key: string;
    if (rel.startsWith('/')) key = rel.replace(/^\/+/, '');
    else if (targetPrefix && rel.startsWith(withSlash(targetPrefix))) key = rel;
    else key = withSlash(targetPrefix) + rel;
    best = { key, mapping: m, len: dir.length };
  }
  return best ? { key: best.key, mapping: best.mapping } : null;
}

/** Number of trailing path components `a` and `b` share ('x/y/z' and '/r/y/z' → 2). */
function commonSuffixDepth(a: string, b: string): number {
  const pa = a.split('/').filter(Boolean);
  const pb = b.split('/').filter(Boolean);
  let n = 0;
  while (n < pa.length && n < pb.length && pa[pa.length - 1 - n] === pb[pb.length - 1 - n]) n++;
  return n;
}

function fmtBytes(n: number): string {
  return n.toLocaleString('en-US') + ' bytes';
}

function judge(item: S3MatchInput, o: S3Object, bucket: string, how: string): S3Match {
  const url = formatS3Url(bucket, o.key);
  if (o.size !== item.size) {
    return {
      remotePath: item.remotePath,
      status: 'mismatch',
      key: o.key,
      reason: `size differs: ${fmtBytes(item.size)} on the node, ${fmtBytes(o.size)} at ${url}${how}`,
    };
  }
  const md5 = item.md5 ? item.md5.trim().toLowerCase() : null;
  const mp = MULTIPART_RE.exec(o.etag);
  if (MD5_RE.test(o.etag)) {
    if (md5) {
      if (md5 === o.etag.toLowerCase()) {
        return {
          remotePath: item.remotePath,
          status: 'present',
          key: o.key,
          reason: `same size (${fmtBytes(o.size)}) and MD5 ${md5} as ${url}${how}`,
        };
      }
      return {
        remotePath: item.remotePath,
        status: 'mismatch',
        key: o.key,
        reason:
          `same size but MD5 differs: ${md5} on the node, ETag ${o.etag} at ${url}${how} (an SSE-KMS/SSE-C encrypted ` +
          `object's ETag is not its MD5: check it by hand if the bucket encrypts with KMS)`,
      };
    }
    return {
      remotePath: item.remotePath,
      status: 'unverified',
      key: o.key,
      reason: `same size (${fmtBytes(o.size)}) as ${url}${how}; content not compared (no MD5 from the node)`,
    };
  }
  if (mp) {
    return {
      remotePath: item.remotePath,
      status: 'unverified',
      key: o.key,
      reason:
        `same size (${fmtBytes(o.size)}) as ${url}${how}; its ETag ${o.etag} is from a ${mp[1]}-part multipart upload, not ` +
        `an MD5 of the content, so only the size was checked`,
    };
  }
  return {
    remotePath: item.remotePath,
    status: 'unverified',
    key: o.key,
    reason: `same size (${fmtBytes(o.size)}) as ${url}${how}; its ETag ${o.etag ? `'${o.etag}' ` : ''}is not an MD5, so only the size was checked`,
  };
}

/**
 * For each file of the node, say whether S3 holds it. With a mapping that applies, only the mapped key counts;
 * otherwise an object whose key ends with `/<basename>` (or is the basename) with the longest common path
 * suffix; ties go to the one whose size (then MD5) matches. `inv` null → every item 'unknown'.
 */
export function matchToS3(items: S3MatchInput[], inv: S3Inventory | null, mappings?: S3Mapping[]): S3Match[] {
  if (!inv) {
    return items.map((it) => ({
      remotePath: it.remotePath,
      status: 'unknown' as const,
      key: null,
      reason: 'S3 was not checked (no inventory: no S3 URL given, or listing it failed)',
    }));
  }
  const { bucket, prefix } = inv.target;
  const where = formatS3Url(bucket, prefix);
  const byKey = new Map<string, S3Object>();
  const byName = new Map<string, S3Object[]>();
  for (const o of inv.objects) {
    if (o.key.endsWith('/')) continue; // "folder" markers
    byKey.set(o.key, o);
    const name = basename(o.key);
    const list = byName.get(name);
    if (list) list.push(o);
    else byName.set(name, [o]);
  }
  const truncNote = inv.truncated
    ? ` (the listing stopped at ${inv.objects.length.toLocaleString('en-US')} objects, so it may be further on)`
    : '';

  return items.map((item): S3Match => {
    const name = basename(item.remotePath);
    const mapped = mappedKey(item.remotePath, prefix, mappings);
    if (mapped) {
      const how = ` (mapping ${mapped.mapping.remotePrefix} → ${mapped.mapping.s3Prefix})`;
      const o = byKey.get(mapped.key);
      if (o) return judge(item, o, bucket, how);
      const elsewhere = (byName.get(name) ?? []).map((x) => x.key);
      const also = elsewhere.length
        ? `; an object of the same name is at ${formatS3Url(bucket, elsewhere[0])}${elsewhere.length > 1 ? ` and ${elsewhere.length - 1} more` : ''}`
        : '';
      return {
        remotePath: item.remotePath,
        status: 'missing',
        key: null,
        reason: `not in S3: expected at ${formatS3Url(bucket, mapped.key)}${how}${also}${truncNote}`,
      };
    }
    const cands = byName.get(name);
    if (!cands || cands.length === 0) {
      return {
        remotePath: item.remotePath,
        status: 'missing',
        key: null,
        reason: `not in S3: no object named ${name} under ${where}${truncNote}`,
      };
    }
    let best: S3Object[] = [];
    let bestDepth = -1;
    for (const o of cands) {
      const d = commonSuffixDepth(item.remotePath, o.key);
      if (d > bestDepth) {
        bestDepth = d;
        best = [o];
      } else if (d === bestDepth) best.push(o);
    }
    let chosen = best[0];
    let tie = '';
    if (best.length > 1) {
      const md5 = item.md5?.toLowerCase();
      const sized = best.filter((o) => o.size === item.size);
      const exact = md5 ? sized.filter((o) => o.etag.toLowerCase() === md5) : [];
      chosen = exact[0] ?? sized[0] ?? best[0];
      const rule = exact.length ? 'with the same size and MD5' : sized.length ? 'with the same size' : 'first by key';
      tie = `; ${best.length} equally good candidates, chose the one ${rule}`;
    }
    const how = ` (matched by name${bestDepth > 1 ? `, ${bestDepth} trailing path parts in common` : ''}${tie})`;
    return judge(item, chosen, bucket, how);
  });
}

export function summarizeS3(
  inv: S3Inventory,
  matches: S3Match[],
): { objects: number; bytes: number; present: number; unverified: number; missing: number; mismatch: number } {
  const s = { objects: inv.objects.length, bytes: inv.totalBytes, present: 0, unverified: 0, missing: 0, mismatch: 0 };
  for (const m of matches) {
    if (m.status === 'present') s.present++;
    else if (m.status === 'unverified') s.unverified++;
    else if (m.status === 'missing') s.missing++;
    else if (m.status === 'mismatch') s.mismatch++;
  }
  return s;
}
