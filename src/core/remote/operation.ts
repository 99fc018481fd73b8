/**
 * Remote operations are descriptions: the command to run (plus optional stdin) and a parser for its
 * output. One runner executes them on any transport, so every parser is unit-tested on real outputs
 * with no network (the pattern of Microsoft's Container Tools).
 */
import type { AbortLike, ExecResult, Transport } from '../ssh/transport';

export interface RemoteOperation<T> {
  /** Short name for logs ("probe", "sha256"). */
  readonly name: string;
  /** Shell command line, built only from quoted arguments (see quote.ts). */
  readonly command: string;
  readonly stdin?: string;
  readonly timeoutMs?: number;
  readonly maxOutputBytes?: number;
  /** Safe to run again after a dropped connection. */
  readonly idempotent?: boolean;
  parse(result: ExecResult): T;
}

export async function runOperation<T>(t: Transport, op: RemoteOperation<T>, signal?: AbortLike): Promise<T> {
  const r = await t.exec(op.command, {
    stdin: op.stdin,
    timeoutMs: op.timeoutMs ?? 60_000,
    maxOutputBytes: op.maxOutputBytes,
    retryOnDrop: op.idempotent ?? false,
    signal,
  });
  return op.parse(r);
}
