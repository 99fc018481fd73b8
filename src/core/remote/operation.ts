/**
 * The one runner. Every remote command of the core is a described operation — the command (a fixed
 * line such as `sh -s`, the script travelling on stdin, or a line built only from quoted arguments), its
 * parser, its timeout and its output bound — run by `runOperation`; long-running commands whose output
 * is consumed as it arrives (tails, tar and `head -c` downloads) are described stream operations opened
 * by `openStream`. Apart from this file only the transport calls `exec`/`stream`, so every parser is
 * unit-tested on real outputs with no network (the pattern of Microsoft's Container Tools).
 *
 * A run whose output hit its bound fails with code `remote-truncated` (unless the operation accepts
 * partial output); a parser that finds the output cut short throws `remote-incomplete`, one that cannot
 * make sense of it `remote-malformed` (see incomplete() / malformed() below).
 */
import { GpuSessionsError } from '../util/errors';
import type { AbortLike, ExecResult, ExecStream, Transport } from '../ssh/transport';

export interface RemoteOperation<T> {
  /** Short name for logs and errors ("probe", "sha256"). */
  readonly name: string;
  /** Shell command line, built only from quoted arguments (see quote.ts). */
  readonly command: string;
  readonly stdin?: string | Buffer;
  /** Wall-clock limit for the whole run. */
  readonly timeoutMs: number;
  /** Output beyond this many bytes is an error (`remote-truncated`) unless `acceptTruncated`. */
  readonly maxOutputBytes: number;
  /** The parser copes with output cut at maxOutputBytes (e.g. `cat` of a file that may be huge). */
  readonly acceptTruncated?: boolean;
  /** Safe to run again after a dropped connection. */
  readonly idempotent?: boolean;
  parse(result: ExecResult): T;
}

/** A long-running command whose output is consumed as a stream; holds one channel until closed. */
export interface StreamOperation {
  readonly name: string;
  /** Shell command line, built only from quoted arguments (see quote.ts). */
  readonly command: string;
  readonly stdin?: string | Buffer;
}

export async function runOperation<T>(t: Transport, op: RemoteOperation<T>, signal?: AbortLike): Promise<T> {
  const r = await t.exec(op.command, {
    stdin: op.stdin,
    timeoutMs: op.timeoutMs,
    maxOutputBytes: op.maxOutputBytes,
    retryOnDrop: op.idempotent ?? false,
    signal,
  });
  if (r.truncated && !op.acceptTruncated)
    throw new GpuSessionsError(
      'remote-truncated',
      `${op.name} on ${t.label} printed more than ${op.maxOutputBytes} bytes and was cut short; nothing of it was used.`,
      { operation: op.name, maxOutputBytes: op.maxOutputBytes },
    );
  return op.parse(r);
}

export function openStream(t: Transport, op: StreamOperation, signal?: AbortLike): Promise<ExecStream> {
  return t.stream(op.command, { stdin: op.stdin, signal });
}

/**
 * Why a stream that reads a file ended badly, in words: killed by a signal, a channel that closed without any
 * exit status (the connection dropped), or the node's own exit status and stderr.
 */
export function streamExitReason(done: { code: number | null; signal?: string }, stderr: string): string {
  const msg = stderr.trim().split('\n').slice(-3).join(' ');
  if (done.code === null && done.signal)
    return `the command reading the file on the node was killed by ${done.signal}${msg ? `: ${msg}` : ''}`;
  if (done.code === null) return 'the connection dropped before the node said the file was read (no exit status); run salvage again';
  return `the node could not read the file (exit ${done.code}): ${msg || 'no message'}`;
}

/** Last lines of stderr for an error message ("exit 3: tail: cannot open …"). */
export function stderrTail(r: ExecResult, lines = 3, clean?: (s: string) => string): string {
  const s = r.stderr.toString('utf8').trim().split('\n').slice(-lines).join(' ');
  return clean ? clean(s) : s;
}

/** The error for a run that ended before its output was complete (end marker missing, killed, cut off). */
export function incomplete(message: string, r?: ExecResult, detail: Record<string, unknown> = {}): GpuSessionsError {
  return new GpuSessionsError('remote-incomplete', message, { ...detail, ...(r ? { exit: r.code, signal: r.signal } : {}) });
}

/** The error for output the parser cannot make sense of. */
export function malformed(message: string, detail: Record<string, unknown> = {}): GpuSessionsError {
  return new GpuSessionsError('remote-malformed', message, detail);
}
