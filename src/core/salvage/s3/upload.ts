/**
 * Node → S3 uploads with no credentials on the node: the laptop signs short-lived presigned URLs with the
 * user's credentials (AWS default chain) and the node sends the bytes with `curl` (Python's standard library
 * where curl is missing), over the node's bandwidth. The URL reaches the uploader through a here-document on
 * file descriptor 3 (`-K /dev/fd/3`), never through its argv, a file or the environment. Above the part size
 * the upload is multipart: one presigned URL per part, the node sends each part, its ETag is checked against
 * the part's MD5 (computed on the node), then the laptop completes the object. With `resume`, an unfinished
 * multipart upload is kept (its upload id and each part's checked ETag on the laptop): a rerun checks each
 * recorded part against the MD5 of the node's bytes now and sends only the parts that are missing or differ.
 * Without it, a failed multipart upload is aborted.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { GpuSessionsError, errorMessage } from '../../util/errors';
import { RemoteOperation, runOperation } from '../../remote/operation';
import { nodeScript } from '../../util/nodeScripts';
import { shq } from '../../util/quote';
import type { AbortLike, Transport } from '../../ssh/transport';
import type { S3Target } from './s3';

interface UploadItem {
  remotePath: string;
  size: number;
  key: string;
}

export interface UploadResult {
  remotePath: string;
  /** The object's key (named s3Object: output redaction treats members named "key" or "…Key" as a secret). */
  s3Object: string;
  ok: boolean;
  parts: number;
  /** Parts of an earlier, unfinished run that were checked and not sent again. */
  resumedParts?: number;
  bytes: number;
  reason: string | null;
}

/** An unfinished multipart upload as the laptop keeps it: the upload id and each sent part's ETag. */
const pendingUploadSchema = z.object({
  uploadId: z.string(),
  size: z.number(),
  partSize: z.number(),
  /** part number → ETag (the part's MD5, checked when it was sent) */
  etags: z.record(z.string(), z.string()),
});
export type PendingUpload = z.infer<typeof pendingUploadSchema>;

/** `upload-parts.json` of a run folder: the unfinished multipart uploads by object key. */
export const uploadPartsSchema = z.record(z.string(), pendingUploadSchema);

/** Where unfinished multipart uploads are kept between runs (by object key). */
export interface UploadResume {
  get(key: string): PendingUpload | undefined;
  set(key: string, p: PendingUpload | undefined): void;
}

interface UploadOptions {
  /** Objects above this go multipart (S3 requires it above 5 GiB). Default 64 MiB; at least 5 MiB. */
  partSize?: number;
  /** Lifetime of each presigned URL, seconds. Default 900. */
  expiresIn?: number;
  signal?: AbortLike;
  onProgress?: (message: string, bytesDone: number) => void;
  /** Keep unfinished multipart uploads and resume them per part (see the file's header). */
  resume?: UploadResume;
}

const MIN_PART = 5 * 1024 * 1024;

/** A presigned URL as a curl config line; refuses anything that could break out of the quoted value. */
export function curlConfig(url: string): string {
  if (!/^https?:\/\/[^\s"\\]+$/.test(url))
    throw new GpuSessionsError('remote-failed', 'Refusing a presigned URL with unexpected characters.');
  return `url = "${url}"`;
}

function bytesOf(range: { offset: number; length: number } | null): string {
  return range ? `tail -c +${Math.floor(range.offset) + 1} -- "$f" | head -c ${Math.floor(range.length)}` : `cat -- "$f"`;
}

/** The node-side script that only hashes: `GS-MD5 <hex>` of the bytes (a recorded part is checked before it is skipped). */
export function buildMd5Script(remotePath: string, range: { offset: number; length: number } | null): string {
  return [
    `f=${shq(remotePath)}`,
    `[ -f "$f" ] || exit 3`,
    `m=$(${bytesOf(range)} | md5sum) || exit 5`,
    `printf 'GS-MD5 %s\\n' "\${m%% *}"`,
    '',
  ].join('\n');
}

/** The MD5 of a file's byte range on the node (null when it cannot be read). */
export function md5Operation(remotePath: string, range: { offset: number; length: number }): RemoteOperation<string | null> {
  return {
    name: 'md5',
    command: 'sh -s',
    stdin: buildMd5Script(remotePath, range),
    timeoutMs: 3600_000,
    maxOutputBytes: 4096,
    idempotent: true,
    parse: (r) => (r.code === 0 ? parsePutOutput(r.stdout.toString('utf8')).md5 : null),
  };
}

/**
 * The node-side script: MD5 of the bytes, then a PUT of the same bytes with curl, or with Python's standard
 * library where curl is missing; prints `GS-MD5 <hex>` and the response headers.
 */
export function buildPutScript(remotePath: string, url: string, range: { offset: number; length: number } | null): string {
  const tag = `GSURL${randomBytes(6).toString('hex')}`;
  const f = shq(remotePath);
  const bytes = bytesOf(range);
  const urlDoc = [curlConfig(url), tag];
  return [
    `f=${f}`,
    `[ -f "$f" ] || { echo "not a regular file" >&2; exit 3; }`,
    `if command -v curl >/dev/null 2>&1; then up=curl`,
    `elif command -v python3 >/dev/null 2>&1; then up=python3`,
    `else echo "neither curl nor python3 is installed on the node" >&2; exit 4; fi`,
    `m=$(${bytes} | md5sum) || exit 5`,
    `printf 'GS-MD5 %s\\n' "\${m%% *}"`,
    `if [ "$up" = curl ]; then`,
    `${bytes} | curl -sS --fail -X PUT -T - -D - -o /dev/null -K /dev/fd/3 3<<'${tag}'`,
    ...urlDoc,
    'else',
    range ? `n=${Math.floor(range.length)}` : `n=$(wc -c < "$f") || exit 5`,
    `${bytes} | python3 -c ${shq(nodeScript('salvage/s3/put.py'))} "$n" 3<<'${tag}'`,
    ...urlDoc,
    'fi',
    '',
  ].join('\n');
}

function parsePutOutput(out: string): { md5: string | null; etag: string | null; status: number | null } {
  const md5 = /^GS-MD5 ([0-9a-f]{32})$/m.exec(out)?.[1] ?? null;
  const statuses = [...out.matchAll(/^HTTP\/[\d.]+ (\d{3})/gm)].map((m) => Number(m[1]));
  const etag = /^etag:\s*"?([^"\r\n]+)"?/im.exec(out)?.[1]?.trim() ?? null;
  return { md5, etag, status: statuses.length ? statuses[statuses.length - 1] : null };
}

/** One PUT from the node (a whole file or a part): the ETag S3 returned, checked against the MD5 the node computed. */
export function putOperation(
  remotePath: string,
  url: string,
  range: { offset: number; length: number } | null,
): RemoteOperation<{ etag: string }> {
  return {
    name: 'upload',
    command: 'sh -s',
    stdin: buildPutScript(remotePath, url, range),
    timeoutMs: 6 * 3600_000,
    maxOutputBytes: 1024 * 1024,
    parse: (r) => {
      const p = parsePutOutput(r.stdout.toString('utf8'));
      if (r.code !== 0 || p.status !== 200) {
        const http = p.status ? `, HTTP ${p.status}` : '';
        const stderrTail = r.stderr.toString('utf8').trim().split('\n').slice(-2).join(' ') || 'no message';
        throw new Error(`the node's upload failed (exit ${r.code}${http}): ${stderrTail}`);
      }
      if (!p.etag || !p.md5 || p.etag.toLowerCase() !== p.md5)
        throw new Error(`ETag ${p.etag ?? '—'} does not match the MD5 ${p.md5 ?? '—'} of the bytes the node sent`);
      return { etag: p.etag };
    },
  };
}

const putFromNode = (t: Transport, remotePath: string, url: string, range: { offset: number; length: number } | null, signal?: AbortLike) =>
  runOperation(t, putOperation(remotePath, url, range), signal);

/** Upload node files to S3 (one by one; parts in order). Never throws for one item: its result says why. */
export async function uploadFromNode(t: Transport, target: S3Target, items: UploadItem[], o: UploadOptions = {}): Promise<UploadResult[]> {
  const { s3ClientFor } = await import('./s3');
  const sdk = await import('@aws-sdk/client-s3');
  const { getSignedUrl } = await import('@aws-sdk/s3-request-presigner');
  const client = s3ClientFor(target);
  const partSize = Math.max(MIN_PART, Math.floor(o.partSize ?? 64 * 1024 * 1024));
  const expiresIn = Math.max(60, Math.floor(o.expiresIn ?? 900));
  const out: UploadResult[] = [];
  let done = 0;
  const abortUpload = (key: string, uploadId: string) =>
    client.send(new sdk.AbortMultipartUploadCommand({ Bucket: target.bucket, Key: key, UploadId: uploadId })).catch(() => undefined);
  try {
    for (const it of items) {
      if (o.signal?.aborted) throw new GpuSessionsError('cancelled', 'Upload cancelled.');
      const res: UploadResult = { remotePath: it.remotePath, s3Object: it.key, ok: false, parts: 0, bytes: 0, reason: null };
      out.push(res);
      try {
        if (it.size <= partSize) {
          const url = await getSignedUrl(client, new sdk.PutObjectCommand({ Bucket: target.bucket, Key: it.key }), { expiresIn });
          o.onProgress?.(`uploading ${it.remotePath} → s3://${target.bucket}/${it.key}`, done);
          await putFromNode(t, it.remotePath, url, null, o.signal);
          res.parts = 1;
        } else {
          const n = Math.ceil(it.size / partSize);
          let pending = o.resume?.get(it.key);
          if (pending && (pending.size !== it.size || pending.partSize !== partSize)) {
            await abortUpload(it.key, pending.uploadId);
            pending = undefined;
          }
          const uploadId =
            pending?.uploadId ??
            (await client.send(new sdk.CreateMultipartUploadCommand({ Bucket: target.bucket, Key: it.key }))).UploadId!;
          const state: PendingUpload = pending ?? { uploadId, size: it.size, partSize, etags: {} };
          o.resume?.set(it.key, state);
          const parts: Array<{ ETag: string; PartNumber: number }> = [];
          let resumed = 0;
          try {
            for (let i = 0; i < n; i++) {
              if (o.signal?.aborted) throw new GpuSessionsError('cancelled', 'Upload cancelled.');
              const offset = i * partSize;
              const length = Math.min(partSize, it.size - offset);
              const had = state.etags[String(i + 1)];
              // A part sent by an earlier run is kept when the node's bytes still hash to its ETag.
              if (had && (await runOperation(t, md5Operation(it.remotePath, { offset, length }), o.signal)) === had.toLowerCase()) {
                parts.push({ ETag: `"${had}"`, PartNumber: i + 1 });
                resumed++;
                continue;
              }
              const url = await getSignedUrl(
                client,
                new sdk.UploadPartCommand({ Bucket: target.bucket, Key: it.key, UploadId: uploadId, PartNumber: i + 1 }),
                { expiresIn },
              );
              o.onProgress?.(`uploading ${it.remotePath}: part ${i + 1}/${n}`, done + offset);
              let r: { etag: string };
              try {
                r = await putFromNode(t, it.remotePath, url, { offset, length }, o.signal);
              } catch (e) {
                if (o.signal?.aborted) throw e;
                r = await putFromNode(t, it.remotePath, url, { offset, length }, o.signal); // one retry per part
              }
              parts.push({ ETag: `"${r.etag}"`, PartNumber: i + 1 });
              state.etags[String(i + 1)] = r.etag;
              o.resume?.set(it.key, state);
            }
            await client.send(
              new sdk.CompleteMultipartUploadCommand({
                Bucket: target.bucket,
                Key: it.key,
                UploadId: uploadId,
                MultipartUpload: { Parts: parts },
              }),
            );
            o.resume?.set(it.key, undefined);
            res.parts = parts.length;
            res.resumedParts = resumed;
          } catch (e) {
            // Kept for a rerun, unless S3 no longer knows the upload (expired or aborted): then it starts over.
            const gone = /NoSuchUpload|HTTP 404/.test(errorMessage(e)) || (e as { name?: string })?.name === 'NoSuchUpload';
            if (!o.resume || gone) {
              o.resume?.set(it.key, undefined);
              await abortUpload(it.key, uploadId);
            } else if (!(e instanceof GpuSessionsError && e.code === 'cancelled'))
              throw new Error(`${errorMessage(e)} (${Object.keys(state.etags).length} of ${n} parts sent; a rerun resumes)`);
            throw e;
          }
        }
        const head = await client.send(new sdk.HeadObjectCommand({ Bucket: target.bucket, Key: it.key }));
        if (head.ContentLength !== it.size)
          throw new Error(`S3 holds ${head.ContentLength} B after the upload, the node's file has ${it.size} B`);
        res.ok = true;
        res.bytes = it.size;
        done += it.size;
      } catch (e) {
        if (e instanceof GpuSessionsError && e.code === 'cancelled') throw e;
        res.reason = errorMessage(e);
      }
    }
  } finally {
    client.destroy();
  }
  return out;
}
