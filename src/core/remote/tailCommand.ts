/**
 * The remote tail protocol: events and options, protocol constants, the remote POSIX sh command (prologue,
 * sentinel, GNU tail -F) and the one-shot last-lines operation.
 */
import { RemoteOperation } from './operation';
import { shq } from '../util/quote';
import { boundedTailOperation } from './boundedRead';
import type { ExecResult } from '../ssh/transport';

// ---------------------------------------------------------------------------------------------------------
// Events and options

export type TailMarkerKind = 'truncated' | 'rotated' | 'reconnected' | 'disconnected' | 'missing' | 'appeared' | 'error';

interface TailLineEvent {
  type: 'line';
  /** The path as given in TailOptions.files. */
  file: string;
  line: string;
  /** The line was longer than maxLineBytes and was cut (it ends with "…[truncated N more bytes]"). */
  truncated?: boolean;
}

interface TailMarkerEvent {
  type: 'marker';
  /** The file concerned, or null for the whole tail (disconnected / reconnected). */
  file: string | null;
  kind: TailMarkerKind;
  message: string;
}

export type TailEvent = TailLineEvent | TailMarkerEvent;

export interface TailOptions {
  /** Remote paths (relative ones are relative to the remote home). Duplicates are followed once. */
  files: string[];
  /** Lines of existing content shown per file at start. Default 200. */
  initialLines?: number;
  /** Longer lines are cut (LineSplitter). Default 64 KiB. */
  maxLineBytes?: number;
  /** Reconnect after an unrequested end of the channel. Default true. */
  reconnect?: boolean;
  /** Delays before reconnect attempts; the last one repeats. Default [250, 500, 1000, 2000, 5000, 10000]. */
  reconnectDelaysMs?: number[];
  /** Most bytes per file caught up after a reconnect; a larger gap is marked as skipped. Default 16 MiB. */
  maxResumeBytes?: number;
  /** A (re)started remote tail that has not finished its backlog by then is restarted. Default 60 s. */
  readyTimeoutMs?: number;
}

export const DEFAULT_DELAYS = [250, 500, 1000, 2000, 5000, 10000];
export const ANCHOR_BYTES = 2048;
export const RESUME_SLACK = 64 * 1024;
export const FALLBACK_MAX = 1024 * 1024;
export const HOLD_MS = 25;
export const MAX_PROLOGUE_JUNK = 1024 * 1024;
export const PROLOGUE = '@@gs-tail 1 ';
export const HDR = Buffer.from('\n==> ');
export const HDR_END = Buffer.from(' <==');
export const NL = Buffer.from('\n');
/** Exit status of the prologue when no sentinel file can be created. */
export const EXIT_NO_SENTINEL = 3;

// ---------------------------------------------------------------------------------------------------------
// The remote command

type TailBacklog =
  { lines: number } | { bytes: number } | { resume: Array<{ ino: string | null; from: number }>; slack: number; cap: number };

/** Name passed to tail for a requested path ("-" would mean stdin even after "--"). */
export function tailArgName(file: string): string {
  return file === '-' ? './-' : file;
}

/**
 * The last `lines` lines of one file, once (`gpu-sessions tail` without --follow): a regular file only, each
 * line cut at 64 KiB (marked), the output bounded (`truncated` says so). See boundedRead.ts.
 */
export function lastLinesOperation(file: string, lines: number, timeoutMs = 120_000): RemoteOperation<ExecResult> {
  return boundedTailOperation(file, { lines }, timeoutMs);
}

/**
 * The remote POSIX sh command of a tail session. Prints the prologue line, then execs GNU tail on the
 * files and the sentinel. Every path is shq-quoted; numbers are validated integers.
 */
export function buildTailCommand(files: string[], backlog: TailBacklog): string {
  const q = files.map((f) => shq(tailArgName(f)));
  const int = (x: number) => String(Math.max(0, Math.floor(Number.isFinite(x) ? x : 0)));
  const L: string[] = [];
  L.push('LC_ALL=C; export LC_ALL');
  L.push('d="${XDG_CACHE_HOME:-$HOME/.cache}/gpu-sessions"; s="$d/tail-sentinel"');
  // Use the sentinel when it is a plain empty file; create it without truncating (other tails of the same
  // user may be opening it right now); replace a non-empty one or a link atomically (mv); else a temp file.
  L.push(
    'if [ -f "$s" ] && [ ! -L "$s" ] && [ ! -s "$s" ]; then :; ' +
      'elif [ ! -e "$s" ] && [ ! -L "$s" ] && { mkdir -p "$d" && : >> "$s"; } 2>/dev/null && [ -f "$s" ] && [ ! -s "$s" ]; then :; ' +
      'elif n=$(mktemp "$d/tail-sentinel.XXXXXX" 2>/dev/null) && mv -f "$n" "$s" 2>/dev/null; then :; ' +
      'elif s=$(mktemp 2>/dev/null); then :; ' +
      `else echo "gpu-sessions: cannot create the tail sentinel file (is HOME or /tmp writable?)" >&2; exit ${EXIT_NO_SENTINEL}; fi`,
  );
  // g FILE EXPECTED_INODE FROM: record "size:inode" (or "-:-") and grow m to the bytes needed from FROM.
  L.push('m=0; L=');
  L.push(
    'g() { x=$(stat -L -c %s:%i -- "$1" 2>/dev/null) || x=-:-; z=${x%%:*}; ' +
      'case "$z" in ""|*[!0-9]*) x=-:-; L="$L $x"; return 0;; esac; L="$L $x"; ' +
      'if [ "$2" != - ] && [ "${x#*:}" != "$2" ]; then n=$z; elif [ "$z" -lt "$3" ]; then n=$z; else n=$((z - $3)); fi; ' +
      '[ "$n" -gt "$m" ] && m=$n; return 0; }',
  );
  files.forEach((_, i) => {
    const r = 'resume' in backlog ? backlog.resume[i] : undefined;
    L.push(`g ${q[i]} ${r && r.ino !== null && /^[0-9]+$/.test(r.ino) ? r.ino : '-'} ${int(r ? r.from : 0)}`);
  });
  const list = `-- ${q.join(' ')} "$s"`;
  if ('resume' in backlog) {
    const cap = Math.max(1, Math.floor(backlog.cap));
    L.push(`m=$((m + ${int(backlog.slack)})); [ "$m" -gt ${cap} ] && m=${cap}`);
    L.push(`printf '@@gs-tail 1 c %s%s|%s\\n' "$m" "$L" "$s"`);
    L.push(`exec tail -c "$m" -F ${list}`);
  } else if ('bytes' in backlog) {
    L.push(`printf '@@gs-tail 1 c %s%s|%s\\n' ${int(backlog.bytes)} "$L" "$s"`);
    L.push(`exec tail -c ${int(backlog.bytes)} -F ${list}`);
  } else {
    L.push(`printf '@@gs-tail 1 n %s%s|%s\\n' ${int(backlog.lines)} "$L" "$s"`);
    L.push(`exec tail -n ${int(backlog.lines)} -F ${list}`);
  }
  return L.join('\n') + '\n';
}

/** Why a path cannot be followed by a remote tail (null when it can): the tail protocol is line-based. */
export function untailablePath(f: unknown): string | null {
  if (typeof f !== 'string' || f.length === 0) return 'A tail needs non-empty file paths.';
  if (/[\n\0]/.test(f)) return `Cannot tail a path containing a newline or NUL: ${JSON.stringify(f)}`;
  return null;
}
