/**
 * Typed errors of the core. Each carries a message that names the problem and what to do,
 * and a stable `code` the CLI maps to exit codes and the tree maps to error items.
 */
type GpuSessionsErrorCode =
  | 'usage'
  | 'host-key-changed'
  | 'host-key-unknown'
  | 'host-key-revoked'
  | 'unreachable'
  | 'auth-failed'
  | 'timeout'
  | 'remote-failed'
  /** A remote operation's run ended before its output was complete (end marker missing, killed, cut off). */
  | 'remote-incomplete'
  /** A remote operation printed more than its output bound. */
  | 'remote-truncated'
  /** A remote operation's output could not be parsed. */
  | 'remote-malformed'
  | 'config'
  | 'cancelled'
  | 'io';

export class GpuSessionsError extends Error {
  constructor(
    readonly code: GpuSessionsErrorCode,
    message: string,
    readonly detail?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'GpuSessionsError';
  }
}

export function isHostKeyError(e: unknown): boolean {
  return e instanceof GpuSessionsError && e.code.startsWith('host-key');
}

/** CLI exit codes: 0 ok, 2 usage, 3 host-key problem, 4 unreachable or auth failure, 5 unsafe (salvage), 1 other. */
export function exitCodeFor(e: unknown): number {
  if (!(e instanceof GpuSessionsError)) return 1;
  switch (e.code) {
    case 'usage':
    case 'config':
      return 2;
    case 'host-key-changed':
    case 'host-key-unknown':
    case 'host-key-revoked':
      return 3;
    case 'unreachable':
    case 'auth-failed':
    case 'timeout':
      return 4;
    default:
      return 1;
  }
}

export function errorMessage(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
