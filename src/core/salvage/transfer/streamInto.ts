/** A stream operation's output into a writer: shared by the single-file downloads (transfer.ts, oneFramed.ts). */
import { GpuSessionsError } from '../../util/errors';
import { StreamOperation, openStream, streamExitReason } from '../../remote/operation';
import type { AbortLike, ExecStream, Transport } from '../../ssh/transport';

/**
 * Runs a stream operation into a writer: stdout to `onData`, the first 2,000 characters of stderr kept. A run
 * that `accept` refuses (default: exit status 0) discards the writer and returns why; a throw or a cancel
 * discards it and throws. null: the bytes are in the writer.
 */
export async function streamIntoWriter(
  t: Transport,
  op: StreamOperation,
  w: { discard(): void },
  onData: (b: Buffer, s: ExecStream) => void,
  signal: AbortLike | undefined,
  accept: (done: { code: number | null; signal?: string }) => boolean = (done) => done.code === 0,
): Promise<string | null> {
  let stderr = '';
  try {
    const s = await openStream(t, op, signal);
    s.stdout.on('data', (b: Buffer) => onData(b, s));
    s.stderr.on('data', (b: Buffer) => {
      if (stderr.length < 2000) stderr += b.toString();
    });
    const done = await s.done;
    if (!accept(done)) {
      w.discard();
      return streamExitReason(done, stderr);
    }
  } catch (e) {
    w.discard();
    throw e;
  }
  if (signal?.aborted) {
    w.discard();
    throw new GpuSessionsError('cancelled', 'Cancelled.');
  }
  return null;
}
