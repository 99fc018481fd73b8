/**
 * One large file on one stream through the node's single-pass reader (frames.ts): read once on the node and hashed
 * while it is sent, instead of `head` plus a second, hashing read of the whole file on another channel. The bytes go
 * to the caller's VerifiedWriter, whose hash of what arrived must equal the node's hash of what it sent.
 */
import { errorMessage } from '../../util/errors';
import type { AbortLike, ExecStream, Transport } from '../../ssh/transport';
import { FrameReader, frameStreamOperation } from './frames';
import { streamIntoWriter } from './streamInto';
import { TransferResult, VerifiedWriter, failedTransfer } from './verifiedWriter';

export async function downloadFramed(
  t: Transport,
  item: { remotePath: string; size: number },
  /** The most bytes the node may announce for it (transfer.ts: entryLimit). */
  limit: number,
  w: VerifiedWriter,
  onBytes: (n: number) => void,
  signal?: AbortLike,
): Promise<TransferResult> {
  let nodeSha: string | null = null;
  let why: string | null = null;
  let s: ExecStream | null = null;
  const stop = (reason: string) => {
    why ??= reason;
    s?.close();
  };
  const reader = new FrameReader(1, {
    entry: (e) => {
      if (e.size <= limit) return true;
      stop(
        `the node announced ${e.size} B for a file listed at ${item.size} B (more than the ${limit} B allowed ` +
          'for a file that grows while it is read): refused and not written; run salvage again',
      );
      return false;
    },
    data: (b) => {
      w.write(b);
      onBytes(b.length);
    },
    end: (sha) => (nodeSha = sha),
    aborted: (reason) => (why ??= reason),
    notSent: (_i, reason) => (why ??= reason),
  });
  const failed = await streamIntoWriter(
    t,
    frameStreamOperation(Buffer.from(item.remotePath + '\0')),
    w,
    (b, stream) => {
      s = stream;
      if (why) return;
      try {
        reader.push(b);
      } catch (e) {
        stop(`transfer stream broke: ${errorMessage(e)}`);
      }
      if (w.error) stop('local write failed');
    },
    signal,
    (done) => done.code === 0 || why !== null,
  );
  if (failed !== null) return failedTransfer(item.remotePath, failed, w.bytes);
  if (w.error) return { ...w.finish(null, null), remotePath: item.remotePath };
  if (why || !nodeSha) {
    w.discard();
    const reason = why ?? 'the node sent no SHA-256 for the file';
    return failedTransfer(item.remotePath, reason, w.bytes);
  }
  // Fewer bytes than listed: the file was truncated or replaced since the listing (more is a log that grew: kept).
  if (w.bytes < item.size) {
    w.discard();
    const reason = `changed on the node during the transfer (listed ${item.size} B, received ${w.bytes} B); run salvage again`;
    return failedTransfer(item.remotePath, reason, w.bytes);
  }
  return { ...w.finish(nodeSha, w.bytes), remotePath: item.remotePath };
}
