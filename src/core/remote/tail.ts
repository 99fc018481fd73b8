/**
 * Remote log tails and live throughput figures.
 *
 * `RemoteTail` follows any number of files on a node over ONE channel (sshd's MaxSessions is 10, so a
 * node must never hold a channel per log): one GNU `tail -F` process for all of them, whose output is
 * demultiplexed by its `==> FILE <==` headers. It survives rotation, truncation and files that appear
 * late (tail -F semantics, reported as markers) and dropped connections: it reconnects with backoff
 * through the same pooled transport and resumes where it left off, without losing the lines written
 * while it was disconnected.
 *
 * The remote command (one exec, POSIX sh, every argument shq-quoted):
 *
 *     LC_ALL=C; make sure an empty "sentinel" file exists (~/.cache/gpu-sessions/tail-sentinel; created with
 *     `: >>` and replaced only by an atomic mv, so concurrent tails never see it missing)
 *     stat every file (size:inode); print one line "@@gs-tail 1 MODE COUNT size:ino ...|SENTINEL"
 *     exec tail -n N -F -- f1 f2 ... SENTINEL          (first start)
 *     exec tail -c M -F -- f1 f2 ... SENTINEL          (resume after a drop, see below)
 *
 * `exec` makes tail the channel's process: closing the channel ends it (GNU tail exits when the reader
 * of its output pipe goes away; measured within 1.5 s on OpenSSH 9.2).
 *
 * Why a sentinel: GNU tail prints the first follow-mode output of the LAST file named on its command
 * line without a header (its "previous file" starts as the last one), so a late-appearing last file
 * would be attributed to the wrong file; and its header marks the end of the initial backlog
 * (needed to resume exactly). The sentinel is a regular, empty file that never grows: a character
 * device such as /dev/null would make tail fall back from inotify to 1 s polling.
 *
 * Header demultiplexing. GNU tail writes "==> F <==\n" before the first file and "\n==> F <==\n" before
 * every later switch of file, where F is the name exactly as passed. The "\n" in front is tail's: when
 * the previous file's output ended mid-line (block-buffered writers), the stream reads "abc\n==> F <==",
 * so a header is NOT always preceded by a blank line. A line is taken as a header when (1) it starts
 * the output or follows a "\n", (2) it is exactly "==> F <==" with F one of the requested paths (or
 * the sentinel), and (3) F is plausible: during the initial backlog F must come later in command-line
 * order than the current file; afterwards F must differ from the current file (tail never repeats the
 * header of the file it is already printing). The "\n" before an accepted header is dropped, so a
 * partial line continues when its file's output resumes. A trailing "\n" at the end of a chunk is held
 * back (at most 25 ms) until the next chunk shows whether a header follows.
 * Residual ambiguity: a log line whose whole text is "==> G <==", where G is ANOTHER file followed by
 * the same tail (same spelling), is indistinguishable from a header; the lines after it are then
 * attributed to G until tail's next real header. With a single file this cannot happen after the
 * backlog (only the sentinel's header would be accepted, and the sentinel never grows); a single file is
 * therefore also run with headers rather than `-q`, because the sentinel's header is what marks the end
 * of the backlog (start() resolves there, and a resume must know where its catch-up ends).
 *
 * Resume without loss. Per file we keep `anchor` = the last 2 KiB of bytes received, `lo` = a lower
 * bound of the file offset just after them (the size `stat` reported when the tail started + bytes
 * received since; reset to 0 by truncation/rotation notices) and the inode. On reconnect the remote
 * prologue stats every file again and computes M = max over files of (size - (lo - anchor)) + 64 KiB
 * (the whole file when the inode changed or the file shrank), capped at maxResumeBytes, then runs
 * `tail -c M -F`: each file's backlog reaches back at least to the start of its anchor. Locally the
 * backlog is scanned for the anchor (its FIRST occurrence: on repetitive text this repeats lines rather
 * than losing any), and only what follows it is emitted; the tail then continues live. The anchor
 * makes this exact even though `stat` and tail's own open are not atomic. A file replaced (inode
 * changed) or truncated while disconnected is marked and re-read from its start; a gap above
 * maxResumeBytes is marked as skipped. A held-back byte that was still undecided at the drop is not
 * counted as received, so it is re-read. (Lines written to a rotated-away file after the drop are not
 * recovered: tail -F follows names.) Cost: M is one number for all files (GNU tail's -c is global), so
 * every file re-sends up to the largest gap; it is bounded by maxResumeBytes. With initialLines 0 the
 * first start still reads the last 2 KiB of each file (not shown) so that there is an anchor. Only a file
 * from which nothing at all was ever received (empty, or missing) resumes by offset arithmetic alone:
 * exact when it was empty, otherwise bytes written in the few ms between the remote `stat` and tail's
 * open could be skipped.
 * Measured (bench/tail-load.ts, 8 tails x 2,000 lines/s, loopback sshd, two forced drops): 0 lines lost.
 *
 * The lines it delivers are turned into live figures by `StatsTracker` (src/core/sglang/liveStats.ts).
 *
 * This module must not import `vscode`.
 */
import { GpuSessionsError, errorMessage } from '../util/errors';
import { LineSplitter, isTruncatedLine } from '../sglang/logLines';
import { RemoteOperation, openStream } from './operation';
import { shq } from './quote';
import type { ExecResult, ExecStream, Transport } from '../ssh/transport';

// ---------------------------------------------------------------------------------------------------------
// Ring buffer

/** Fixed-capacity FIFO that drops the oldest item when full. */
export class RingBuffer<T> {
  private buf: Array<T | undefined>;
  private head = 0;
  private len = 0;
  private droppedCount = 0;
  readonly capacity: number;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`RingBuffer capacity must be a positive integer, got ${capacity}`);
    this.capacity = capacity;
    this.buf = new Array<T | undefined>(Math.min(capacity, 1024));
  }

  push(x: T): void {
    const cap = this.capacity;
    if (this.len < cap) {
      const i = (this.head + this.len) % cap;
      if (i >= this.buf.length) this.grow(i + 1);
      this.buf[i] = x;
      this.len++;
    } else {
      this.buf[this.head] = x;
      this.head = (this.head + 1) % cap;
      this.droppedCount++;
    }
  }

  /** Oldest first. */
  toArray(): T[] {
    const out = new Array<T>(this.len);
    for (let k = 0; k < this.len; k++) out[k] = this.buf[(this.head + k) % this.capacity] as T;
    return out;
  }

  get length(): number {
    return this.len;
  }

  /** Items pushed out since construction or the last clear(). */
  get dropped(): number {
    return this.droppedCount;
  }

  clear(): void {
    this.buf = new Array<T | undefined>(Math.min(this.capacity, 1024));
    this.head = 0;
    this.len = 0;
    this.droppedCount = 0;
  }

  private grow(min: number): void {
    // Only while the buffer has not wrapped yet (len < capacity, head == 0), so indices stay valid.
    const n = Math.min(this.capacity, Math.max(min, this.buf.length * 2));
    const b = new Array<T | undefined>(n);
    for (let k = 0; k < this.buf.length; k++) b[k] = this.buf[k];
    this.buf = b;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Events and options

export type TailMarkerKind = 'truncated' | 'rotated' | 'reconnected' | 'disconnected' | 'missing' | 'appeared' | 'error';

export interface TailLineEvent {
  type: 'line';
  /** The path as given in TailOptions.files. */
  file: string;
  line: string;
  /** The line was longer than maxLineBytes and was cut (it ends with "…[truncated N more bytes]"). */
  truncated?: boolean;
}

export interface TailMarkerEvent {
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

const DEFAULT_DELAYS = [250, 500, 1000, 2000, 5000, 10000];
const ANCHOR_BYTES = 2048;
const RESUME_SLACK = 64 * 1024;
const FALLBACK_MAX = 1024 * 1024;
const HOLD_MS = 25;
const MAX_PROLOGUE_JUNK = 1024 * 1024;
const PROLOGUE = '@@gs-tail 1 ';
const HDR = Buffer.from('\n==> ');
const HDR_END = Buffer.from(' <==');
const NL = Buffer.from('\n');
/** Exit status of the prologue when no sentinel file can be created. */
const EXIT_NO_SENTINEL = 3;

// ---------------------------------------------------------------------------------------------------------
// The remote command

export type TailBacklog =
  { lines: number } | { bytes: number } | { resume: Array<{ ino: string | null; from: number }>; slack: number; cap: number };

/** Name passed to tail for a requested path ("-" would mean stdin even after "--"). */
export function tailArgName(file: string): string {
  return file === '-' ? './-' : file;
}

/**
 * The last `lines` lines of one file, once (`gpu-sessions tail` without --follow). Output beyond 64 MiB is
 * cut and the result says so (`truncated`): the caller prints what came and a note.
 */
export function lastLinesOperation(file: string, lines: number, timeoutMs = 120_000): RemoteOperation<ExecResult> {
  return {
    name: 'tail',
    command: `LC_ALL=C exec tail -n ${lines} -- ${shq(tailArgName(file))}`,
    timeoutMs,
    maxOutputBytes: 64 * 1024 * 1024,
    acceptTruncated: true,
    parse: (r) => r,
  };
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

// ---------------------------------------------------------------------------------------------------------
// GNU tail's notices on stderr (LC_ALL=C)

export type TailNoticeKind = 'missing' | 'gone' | 'appeared' | 'replaced' | 'truncated' | 'error';

const NOTICES: Array<[RegExp, TailNoticeKind]> = [
  [/^tail: cannot open (.+) for reading: No such file or directory$/, 'missing'],
  [/^tail: (.+) has become inaccessible: No such file or directory$/, 'gone'],
  [/^tail: (.+) has appeared;\s+following new file$/, 'appeared'],
  [/^tail: (.+) has been replaced;\s+following new file$/, 'replaced'],
  [/^tail: (.+): file truncated$/, 'truncated'],
  [/^tail: (.+) has been replaced with an untailable (?:file|remote file).*$/, 'error'],
  [/^tail: cannot open (.+) for reading: .*$/, 'error'],
  [/^tail: (.+) has become inaccessible: .*$/, 'error'],
  [/^tail: error reading (.+): .*$/, 'error'],
  [/^tail: (.+): cannot follow end of this type of file.*$/, 'error'],
];

/** Parse one stderr line of GNU tail; `name` is the file name as tail quoted it. Null: not a notice about a file. */
export function parseTailNotice(line: string): { kind: TailNoticeKind; name: string } | null {
  if (!line.startsWith('tail: ') || line.length > 16384) return null;
  for (const [re, kind] of NOTICES) {
    const m = re.exec(line);
    if (m) return { kind, name: m[1] };
  }
  return null;
}

/** Does `quoted` (as GNU tail printed it) name `name`? tail quotes with the shell-escape style. */
function quotedNameIs(quoted: string, name: string): boolean {
  return (
    quoted === name ||
    quoted === `'${name}'` ||
    quoted === `"${name}"` ||
    quoted === `'${name.replace(/'/g, `'\\''`)}'` ||
    quoted === `\u2018${name}\u2019`
  );
}

// ---------------------------------------------------------------------------------------------------------
// Resume: find where we left off in a file's catch-up backlog

type SkipMode = 'skip' | 'search' | 'line';

/** Consumes a file's catch-up backlog and passes on only what follows the resume point. */
export class ResumeSkipper {
  found = false;
  total = 0;
  private keep: Buffer[] = [];
  private kept = 0;
  private dropped = 0;
  private tailBytes: Buffer = Buffer.alloc(0);

  /**
   * mode 'search': pass what follows the first occurrence of `anchor`; 'skip': drop `skip` bytes; 'line': drop
   * through the first "\n" (a backlog that starts mid-line).
   */
  constructor(
    readonly mode: SkipMode,
    private readonly anchor: Buffer,
    private skip = 0,
    private readonly fallbackMax = FALLBACK_MAX,
  ) {
    if (mode === 'search' && anchor.length === 0) throw new Error('ResumeSkipper: empty anchor');
  }

  /** Bytes to pass on (null: none yet). */
  push(b: Buffer): Buffer | null {
    this.total += b.length;
    if (this.found) return b;
    if (this.mode === 'skip') {
      if (this.skip >= b.length) {
        this.skip -= b.length;
        return null;
      }
      this.found = true;
      return b.subarray(this.skip);
    }
    if (this.mode === 'line') {
      const nl = b.indexOf(10);
      if (nl < 0) return null;
      this.found = true;
      return b.subarray(nl + 1);
    }
    const a = this.anchor;
    const A = a.length;
    if (this.tailBytes.length > 0) {
      // a match that starts in the previous chunks and ends in this one
      const st = Buffer.concat([this.tailBytes, b.subarray(0, Math.min(b.length, A - 1))]);
      const i = st.indexOf(a);
      if (i >= 0) {
        const end = i + A - this.tailBytes.length;
        this.found = true;
        this.release();
        return b.subarray(end);
      }
    }
    const j = b.indexOf(a);
    if (j >= 0) {
      this.found = true;
      this.release();
      return b.subarray(j + A);
    }
    this.keepForFallback(b);
    const t = A - 1;
    if (t > 0) {
      if (b.length >= t) this.tailBytes = Buffer.from(b.subarray(b.length - t));
      else {
        const c = Buffer.concat([this.tailBytes, b]);
        this.tailBytes = c.length > t ? Buffer.from(c.subarray(c.length - t)) : c;
      }
    }
    return null;
  }

  /** At the end of the backlog: the anchor was not found → the last ≤ fallbackMax bytes (and how many were dropped before them). */
  finish(): { found: boolean; fallback: Buffer; droppedBytes: number } {
    const fb = this.found ? Buffer.alloc(0) : Buffer.concat(this.keep);
    const r = { found: this.found, fallback: fb, droppedBytes: this.dropped };
    this.release();
    return r;
  }

  private keepForFallback(b: Buffer): void {
    if (this.mode !== 'search') return;
    this.keep.push(Buffer.from(b));
    this.kept += b.length;
    while (this.kept > this.fallbackMax && this.keep.length > 0) {
      const over = this.kept - this.fallbackMax;
      const first = this.keep[0];
      if (first.length <= over) {
        this.keep.shift();
        this.kept -= first.length;
        this.dropped += first.length;
      } else {
        this.keep[0] = first.subarray(over);
        this.kept -= over;
        this.dropped += over;
      }
    }
  }

  private release(): void {
    this.keep = [];
    this.kept = 0;
    this.tailBytes = Buffer.alloc(0);
  }
}

// ---------------------------------------------------------------------------------------------------------
// RemoteTail

interface FileState {
  /** as requested */
  name: string;
  /** as passed to tail (and printed in its headers) */
  arg: string;
  splitter: LineSplitter;
  /** last ≤ ANCHOR_BYTES bytes received */
  anchor: Buffer;
  /** lower bound of the file offset just after the anchor */
  lo: number;
  ino: string | null;
  everOpened: boolean;
  missing: boolean;
}

interface FileStat {
  size: number;
  ino: string;
}

interface Session {
  id: number;
  stream: ExecStream;
  resume: boolean;
  phase: 'prologue' | 'initial' | 'follow';
  /** initial backlog is read (for the anchor) but not shown */
  mute: boolean;
  /** partial prologue line */
  pro: Buffer | null;
  junk: number;
  /** held-back bytes: "\n" or "\n" + the start of a possible header */
  held: Buffer | null;
  heldAt: number;
  /** index of the file tail is printing: -1 none yet, files.length = the sentinel */
  current: number;
  /** latin1 view of each tail argument's bytes → index (files.length = sentinel) */
  names: Map<string, number>;
  maxHeader: number;
  sentinel: string | null;
  stats: Array<FileStat | null>;
  /** lines (mode n) or bytes (mode c) of backlog tail was asked for */
  count: number;
  mode: 'n' | 'c';
  skippers: Array<ResumeSkipper | null>;
  stderr: LineSplitter;
  stderrTail: string[];
  ready: boolean;
  timedOut: boolean;
}

/** Follows files on a node over one channel. See the module comment for the protocol. */
/** Why a path cannot be followed by a remote tail (null when it can): the tail protocol is line-based. */
export function untailablePath(f: unknown): string | null {
  if (typeof f !== 'string' || f.length === 0) return 'A tail needs non-empty file paths.';
  if (/[\n\0]/.test(f)) return `Cannot tail a path containing a newline or NUL: ${JSON.stringify(f)}`;
  return null;
}

export class RemoteTail {
  private readonly fs: FileState[];
  private readonly listeners = new Set<(e: TailEvent) => void>();
  private readonly initialLines: number;
  private readonly reconnect: boolean;
  private readonly delays: number[];
  private readonly maxResumeBytes: number;
  private readonly readyTimeoutMs: number;
  private session: Session | null = null;
  private seq = 0;
  private stopped = false;
  private started = false;
  private isRunning = false;
  private outageSince: number | null = null;
  private attempts = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  private holdTimer: NodeJS.Timeout | null = null;
  private readyTimer: NodeJS.Timeout | null = null;
  private startWaiter: { resolve: () => void; reject: (e: Error) => void } | null = null;
  private lines = 0;

  constructor(
    private readonly t: Transport,
    opts: TailOptions,
  ) {
    const seen = new Set<string>();
    const files: string[] = [];
    for (const f of opts.files ?? []) {
      const why = untailablePath(f);
      if (why) throw new GpuSessionsError('usage', why);
      if (!seen.has(f)) {
        seen.add(f);
        files.push(f);
      }
    }
    if (files.length === 0) throw new GpuSessionsError('usage', 'A tail needs at least one file.');
    const maxLineBytes = opts.maxLineBytes ?? 64 * 1024;
    this.fs = files.map((name) => ({
      name,
      arg: tailArgName(name),
      splitter: new LineSplitter({ maxLineBytes }),
      anchor: Buffer.alloc(0),
      lo: 0,
      ino: null,
      everOpened: false,
      missing: false,
    }));
    this.initialLines = Math.max(0, Math.min(1_000_000, Math.floor(opts.initialLines ?? 200)));
    this.reconnect = opts.reconnect ?? true;
    const d = (opts.reconnectDelaysMs ?? DEFAULT_DELAYS).filter((x) => Number.isFinite(x) && x >= 0);
    this.delays = d.length ? d : DEFAULT_DELAYS;
    this.maxResumeBytes = Math.max(RESUME_SLACK, Math.floor(opts.maxResumeBytes ?? 16 * 1024 * 1024));
    this.readyTimeoutMs = opts.readyTimeoutMs ?? 60_000;
  }

  /** True from start() until stop() or a fatal error (also while reconnecting). */
  get running(): boolean {
    return this.isRunning;
  }

  /** True while the remote tail is live (its backlog done, the channel open). */
  get connected(): boolean {
    return this.session !== null && this.session.ready;
  }

  /** Line events emitted so far. */
  get linesSeen(): number {
    return this.lines;
  }

  get files(): string[] {
    return this.fs.map((f) => f.name);
  }

  on(event: 'event', fn: (e: TailEvent) => void): this {
    if (event === 'event') this.listeners.add(fn);
    return this;
  }

  off(event: 'event', fn: (e: TailEvent) => void): this {
    if (event === 'event') this.listeners.delete(fn);
    return this;
  }

  /**
   * Opens the channel and resolves once the remote tail has printed the initial lines of every file and
   * follows them. Rejects (and stops) when the first attempt fails (unreachable, host key, no tail...):
   * reconnecting applies only after a successful start.
   */
  start(): Promise<void> {
    if (this.started) return Promise.reject(new Error('RemoteTail.start() called twice'));
    if (this.stopped) return Promise.reject(new GpuSessionsError('cancelled', 'The tail was stopped.'));
    this.started = true;
    this.isRunning = true;
    return new Promise<void>((resolve, reject) => {
      this.startWaiter = { resolve, reject };
      this.openSession(false).catch((e) => this.failStart(e));
    });
  }

  /** Closes the channel (which ends the remote tail); clears every timer. Idempotent. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.isRunning = false;
    this.clearTimers();
    const s = this.session;
    this.session = null;
    if (s) {
      s.held = null;
      try {
        s.stream.close();
      } catch {
        /* already closed */
      }
    }
    if (this.startWaiter) {
      const w = this.startWaiter;
      this.startWaiter = null;
      w.reject(new GpuSessionsError('cancelled', 'The tail was stopped.'));
    }
  }

  // -- sessions -----------------------------------------------------------------------------------------

  private command(resume: boolean): string {
    const args = this.fs.map((f) => f.arg);
    if (!resume) {
      return buildTailCommand(args, this.initialLines > 0 ? { lines: this.initialLines } : { bytes: ANCHOR_BYTES });
    }
    return buildTailCommand(args, {
      resume: this.fs.map((f) => ({ ino: f.ino, from: Math.max(0, f.lo - f.anchor.length) })),
      slack: RESUME_SLACK,
      cap: this.maxResumeBytes,
    });
  }

  private async openSession(resume: boolean): Promise<void> {
    const cmd = this.command(resume);
    const st = await openStream(this.t, { name: 'tail', command: cmd });
    if (this.stopped) {
      st.close();
      return;
    }
    const s: Session = {
      id: ++this.seq,
      stream: st,
      resume,
      phase: 'prologue',
      mute: !resume && this.initialLines === 0,
      pro: null,
      junk: 0,
      held: null,
      heldAt: 0,
      current: -1,
      names: new Map(),
      maxHeader: 0,
      sentinel: null,
      stats: [],
      count: 0,
      mode: 'n',
      skippers: this.fs.map(() => null),
      stderr: new LineSplitter({ maxLineBytes: 8192 }),
      stderrTail: [],
      ready: false,
      timedOut: false,
    };
    this.session = s;
    const asBuf = (b: Buffer | string) => (typeof b === 'string' ? Buffer.from(b) : b);
    st.stdout.on('data', (b: Buffer | string) => this.onStdout(s, asBuf(b)));
    st.stderr.on('data', (b: Buffer | string) => this.onStderr(s, asBuf(b)));
    st.stdout.on('error', () => undefined);
    st.stderr.on('error', () => undefined);
    st.done.then(
      (r) => this.onEnd(s, r),
      () => this.onEnd(s, { code: null }),
    );
    if (this.readyTimer) clearTimeout(this.readyTimer);
    this.readyTimer = setTimeout(() => {
      this.readyTimer = null;
      if (this.session === s && !s.ready) {
        s.timedOut = true;
        s.stream.close();
      }
    }, this.readyTimeoutMs);
  }

  private failStart(e: unknown): void {
    const w = this.startWaiter;
    this.startWaiter = null;
    this.stop();
    w?.reject(e instanceof Error ? e : new Error(String(e)));
  }

  private onEnd(s: Session, r: { code: number | null; signal?: string }): void {
    if (this.session !== s) return;
    this.session = null;
    s.held = null; // undecided bytes are not counted as received: a resume re-reads them
    if (this.holdTimer) {
      clearTimeout(this.holdTimer);
      this.holdTimer = null;
    }
    if (this.readyTimer) {
      clearTimeout(this.readyTimer);
      this.readyTimer = null;
    }
    for (const l of s.stderr.flush()) this.onStderrLine(s, l);
    if (this.stopped) return;
    const why = s.timedOut
      ? `the remote tail did not finish its backlog within ${Math.round(this.readyTimeoutMs / 1000)} s`
      : r.code !== null
        ? `the remote tail exited with status ${r.code}`
        : r.signal
          ? `the remote tail ended by signal ${r.signal}`
          : 'the connection was lost';
    const stderr = s.stderrTail.length ? `: ${s.stderrTail.join(' | ')}` : '';
    if (this.startWaiter) {
      this.failStart(
        new GpuSessionsError(
          'remote-failed',
          `${this.t.label}: could not start following ${this.fs.map((f) => f.name).join(', ')}: ${why}${stderr}`,
        ),
      );
      return;
    }
    const fatal = r.code === EXIT_NO_SENTINEL || r.code === 126 || r.code === 127;
    if (fatal || !this.reconnect) {
      if (this.outageSince === null)
        this.emitMarker(null, fatal ? 'error' : 'disconnected', `${this.t.label}: ${why}${stderr}${fatal ? '; not retrying' : ''}.`);
      this.isRunning = false;
      this.stop();
      return;
    }
    if (this.outageSince === null) {
      this.outageSince = Date.now();
      this.emitMarker(null, 'disconnected', `${this.t.label}: ${why}; reconnecting.`);
    }
    this.scheduleReconnect();
  }

  private scheduleReconnect(): void {
    if (this.stopped || this.reconnectTimer) return;
    const d = this.delays[Math.min(this.attempts, this.delays.length - 1)];
    this.attempts++;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.stopped) return;
      this.openSession(true).catch((e) => {
        if (this.stopped) return;
        const code = e instanceof GpuSessionsError ? e.code : '';
        if (code.startsWith('host-key') || code === 'auth-failed' || code === 'config' || code === 'cancelled') {
          this.emitMarker(null, 'error', `${this.t.label}: cannot reconnect: ${errorMessage(e)}`);
          this.isRunning = false;
          this.stop();
          return;
        }
        this.scheduleReconnect();
      });
    }, d);
  }

  private clearTimers(): void {
    for (const k of ['reconnectTimer', 'holdTimer', 'readyTimer'] as const) {
      const tm = this[k];
      if (tm) clearTimeout(tm);
      this[k] = null;
    }
  }

  // -- stdout: prologue, headers, content ----------------------------------------------------------------

  private onStdout(s: Session, b: Buffer): void {
    if (this.session !== s || b.length === 0) return;
    let data = b;
    if (s.held) {
      data = Buffer.concat([s.held, b]);
      s.held = null;
    }
    this.parse(s, data);
  }

  private parse(s: Session, input: Buffer): void {
    let data = input;
    if (s.phase === 'prologue') {
      const buf = s.pro ? Buffer.concat([s.pro, data]) : data;
      s.pro = null;
      let p = 0;
      for (;;) {
        const nl = buf.indexOf(10, p);
        if (nl < 0) {
          const rest = buf.subarray(p);
          if (s.junk + rest.length > MAX_PROLOGUE_JUNK) {
            s.stderrTail.push('no tail prologue in the first MiB of output');
            s.stream.close();
          } else s.pro = Buffer.from(rest);
          return;
        }
        const line = buf.toString('utf8', p, nl);
        s.junk += nl + 1 - p;
        p = nl + 1;
        if (line.startsWith(PROLOGUE)) {
          this.onPrologue(s, line);
          break;
        }
        // anything before the prologue is output of the login shell's startup files: ignored
      }
      if (this.session !== s) return;
      // A synthetic "\n" lets the first header (which tail prints without one) be found like the others.
      data = Buffer.concat([NL, buf.subarray(p)]);
    }
    const len = data.length;
    let pos = 0;
    let from = 0;
    while (pos < len) {
      const k = data.indexOf(HDR, from);
      if (k < 0) break;
      const e = data.indexOf(10, k + 1);
      if (e < 0) {
        if (len - k <= s.maxHeader) {
          // maybe a header whose end has not arrived yet
          this.deliver(s, data, pos, k);
          if (this.session === s) this.hold(s, data.subarray(k));
          return;
        }
        from = k + 1;
        continue;
      }
      const idx = this.headerAt(s, data, k + 5, e);
      if (idx >= 0) {
        this.deliver(s, data, pos, k);
        if (this.session !== s) return;
        this.switchTo(s, idx);
        if (this.session !== s) return;
        // the next header, if one follows at once, brings its own "\n" after this one's
        pos = e + 1;
        from = pos;
        continue;
      }
      from = k + 1;
    }
    if (pos >= len) return;
    // Hold a trailing "\n" (+ up to 3 bytes of "==> ") until the next chunk shows whether a header follows.
    const lastNl = data.lastIndexOf(10, len - 1);
    if (lastNl >= pos && len - lastNl <= 4 && isArrowPrefix(data, lastNl + 1, len)) {
      this.deliver(s, data, pos, lastNl);
      if (this.session === s) this.hold(s, data.subarray(lastNl));
    } else {
      this.deliver(s, data, pos, len);
    }
  }

  private hold(s: Session, b: Buffer): void {
    s.held = Buffer.from(b);
    s.heldAt = Date.now();
    if (!this.holdTimer) this.armHold(HOLD_MS);
  }

  private armHold(ms: number): void {
    this.holdTimer = setTimeout(() => {
      this.holdTimer = null;
      const s = this.session;
      if (!s || !s.held) return;
      const age = Date.now() - s.heldAt;
      if (age < HOLD_MS) {
        this.armHold(HOLD_MS - age);
        return;
      }
      const h = s.held;
      s.held = null;
      this.deliver(s, h, 0, h.length); // no header came: the bytes are content
    }, ms);
  }

  /** Index of the file whose header is data[a, e) ("NAME <=="), or -1 when it is not an acceptable header. */
  private headerAt(s: Session, data: Buffer, a: number, e: number): number {
    if (e - a < 4 || e - a - 4 > s.maxHeader) return -1;
    if (data.compare(HDR_END, 0, 4, e - 4, e) !== 0) return -1;
    const idx = s.names.get(data.toString('latin1', a, e - 4));
    if (idx === undefined) return -1;
    if (s.phase === 'initial') return idx > s.current ? idx : -1;
    return idx !== s.current ? idx : -1;
  }

  private switchTo(s: Session, idx: number): void {
    if (s.phase === 'initial') {
      if (s.current >= 0 && s.current < this.fs.length) this.finishBacklog(s, s.current);
      s.current = idx;
      if (idx === this.fs.length) this.initialDone(s);
      return;
    }
    s.current = idx;
  }

  private deliver(s: Session, data: Buffer, a: number, b: number): void {
    if (b <= a) return;
    const i = s.current;
    if (i < 0 || i >= this.fs.length) return; // before any header, or the sentinel's
    const bytes = data.subarray(a, b);
    const f = this.fs[i];
    let out: Buffer | null = bytes;
    if (s.phase === 'initial') {
      const sk = s.skippers[i];
      if (sk) {
        out = sk.push(bytes);
        if (!out || out.length === 0) return;
      }
    } else {
      f.lo += bytes.length;
    }
    this.feed(i, out, s.phase === 'initial' && s.mute);
  }

  private feed(i: number, bytes: Buffer, muted: boolean): void {
    const f = this.fs[i];
    if (bytes.length >= ANCHOR_BYTES) f.anchor = Buffer.from(bytes.subarray(bytes.length - ANCHOR_BYTES));
    else {
      const c = Buffer.concat([f.anchor, bytes]);
      f.anchor = c.length > ANCHOR_BYTES ? Buffer.from(c.subarray(c.length - ANCHOR_BYTES)) : c;
    }
    const before = f.splitter.truncatedLines;
    const lines = f.splitter.push(bytes);
    if (muted || lines.length === 0) return;
    const cut = f.splitter.truncatedLines !== before;
    for (const line of lines) this.emitLine(f.name, line, cut && isTruncatedLine(line));
  }

  /** Emit a pending partial line as it is (before unrelated content follows it). */
  private flushPartial(i: number): void {
    const f = this.fs[i];
    for (const line of f.splitter.flush()) this.emitLine(f.name, line, isTruncatedLine(line));
  }

  private onPrologue(s: Session, line: string): void {
    const bar = line.indexOf('|');
    const head = line
      .slice(PROLOGUE.length, bar < 0 ? undefined : bar)
      .trim()
      .split(/\s+/);
    s.mode = head[0] === 'c' ? 'c' : 'n';
    s.count = Number(head[1]) || 0;
    const st = head.slice(2);
    s.stats = this.fs.map((_, i) => {
      const x = st.length === this.fs.length ? st[i] : undefined;
      const m = x ? /^(\d+):(\d+)$/.exec(x) : null;
      return m ? { size: Number(m[1]), ino: m[2] } : null;
    });
    s.sentinel = bar >= 0 ? line.slice(bar + 1) : null;
    const names = new Map<string, number>();
    let maxLen = 0;
    const add = (arg: string, idx: number) => {
      const key = Buffer.from(arg, 'utf8').toString('latin1');
      if (!names.has(key)) names.set(key, idx);
      maxLen = Math.max(maxLen, key.length);
    };
    this.fs.forEach((f, i) => add(f.arg, i));
    if (s.sentinel) add(s.sentinel, this.fs.length);
    s.names = names;
    s.maxHeader = maxLen + 16;
    s.phase = 'initial';
    if (!s.resume) {
      this.fs.forEach((f, i) => {
        if (s.stats[i]) f.everOpened = true;
      });
      return;
    }
    this.attempts = 0;
    const away = this.outageSince !== null ? Math.round((Date.now() - this.outageSince) / 1000) : 0;
    this.outageSince = null;
    this.emitMarker(null, 'reconnected', `${this.t.label}: reconnected after ${away} s; catching up on lines written meanwhile.`);
    const M = s.count;
    this.fs.forEach((f, i) => {
      const stat = s.stats[i];
      if (!stat) return; // missing now: tail says so on stderr
      f.missing = false;
      const notShown = stat.size > M ? ` (its first ${fmtBytes(stat.size - M)} are not shown)` : '';
      if (f.ino !== null && stat.ino !== f.ino) {
        this.flushPartial(i);
        this.emitMarker(f.name, 'rotated', `${f.name} was replaced (rotated) while disconnected; following the new file${notShown}.`);
      } else if (stat.size < f.lo) {
        this.flushPartial(i);
        this.emitMarker(f.name, 'truncated', `${f.name} was truncated while disconnected; following it from its start${notShown}.`);
      } else if (stat.size - Math.max(0, f.lo - f.anchor.length) > M) {
        this.flushPartial(i);
        const gap = stat.size - f.lo;
        this.emitMarker(
          f.name,
          'error',
          `${f.name}: ${fmtBytes(gap)} were written while disconnected, more than the catch-up limit; about ${fmtBytes(gap - M)} skipped.`,
        );
        s.skippers[i] = new ResumeSkipper('line', Buffer.alloc(0));
      } else if (f.anchor.length === 0) {
        s.skippers[i] = new ResumeSkipper('skip', Buffer.alloc(0), Math.max(0, f.lo - Math.max(0, stat.size - M)));
      } else {
        s.skippers[i] = new ResumeSkipper('search', f.anchor);
      }
      f.everOpened = true;
    });
  }

  private finishBacklog(s: Session, i: number): void {
    const sk = s.skippers[i];
    if (!sk) return;
    s.skippers[i] = null;
    const r = sk.finish();
    if (r.found || sk.mode !== 'search') return;
    const f = this.fs[i];
    this.flushPartial(i);
    const whole = s.mode === 'c' && sk.total < s.count && r.droppedBytes === 0;
    let fb = r.fallback;
    if (whole) {
      this.emitMarker(f.name, 'truncated', `${f.name} was rewritten while disconnected; following it from its start.`);
    } else {
      this.emitMarker(
        f.name,
        'error',
        `Could not find where ${f.name} left off (rewritten while disconnected?); showing its last ${fmtBytes(fb.length)}; lines written in between may be missing.`,
      );
      if (r.droppedBytes > 0) {
        const nl = fb.indexOf(10);
        fb = nl >= 0 ? fb.subarray(nl + 1) : Buffer.alloc(0);
      }
    }
    if (fb.length) this.feed(i, fb, false);
  }

  private initialDone(s: Session): void {
    for (let i = 0; i < this.fs.length; i++) s.skippers[i] = null;
    s.phase = 'follow';
    s.ready = true;
    this.fs.forEach((f, i) => {
      const st = s.stats[i];
      f.lo = st ? st.size : 0;
      f.ino = st ? st.ino : null;
    });
    if (this.readyTimer) {
      clearTimeout(this.readyTimer);
      this.readyTimer = null;
    }
    this.attempts = 0;
    if (this.startWaiter) {
      const w = this.startWaiter;
      this.startWaiter = null;
      w.resolve();
    }
  }

  // -- stderr: tail's notices ------------------------------------------------------------------------------

  private onStderr(s: Session, b: Buffer): void {
    if (this.session !== s) return;
    for (const l of s.stderr.push(b)) this.onStderrLine(s, l);
  }

  private onStderrLine(s: Session, line: string): void {
    if (!line) return;
    const n = parseTailNotice(line);
    const idx = n ? this.indexForQuoted(s, n.name) : -1;
    if (idx === this.fs.length) return; // the sentinel
    s.stderrTail.push(line);
    if (s.stderrTail.length > 4) s.stderrTail.shift();
    if (!n || idx < 0) {
      this.emitMarker(null, 'error', line.replace(/^tail: /, ''));
      return;
    }
    const f = this.fs[idx];
    switch (n.kind) {
      // The file's content starts over: forget the anchor (tail writes a notice to stderr before it
      // dumps the new content to stdout, so the bytes that follow belong to the new file).
      case 'missing':
      case 'gone':
        f.lo = 0;
        f.ino = null;
        f.anchor = Buffer.alloc(0);
        if (!f.missing) {
          f.missing = true;
          this.emitMarker(
            f.name,
            'missing',
            n.kind === 'missing'
              ? `${f.name} does not exist (yet); waiting for it to appear.`
              : `${f.name} disappeared; waiting for it to reappear.`,
          );
        }
        return;
      case 'appeared':
      case 'replaced': {
        const rotated = n.kind === 'replaced' || f.everOpened;
        f.lo = 0;
        f.ino = null;
        f.anchor = Buffer.alloc(0);
        f.missing = false;
        f.everOpened = true;
        this.emitMarker(
          f.name,
          rotated ? 'rotated' : 'appeared',
          rotated ? `${f.name} was replaced (rotated); following the new file.` : `${f.name} appeared; following it.`,
        );
        return;
      }
      case 'truncated':
        f.lo = 0;
        f.anchor = Buffer.alloc(0);
        this.emitMarker(f.name, 'truncated', `${f.name} was truncated; following it from its start.`);
        return;
      default:
        this.emitMarker(f.name, 'error', line.replace(/^tail: /, ''));
    }
  }

  /** Which file a name quoted by tail denotes: files.length for the sentinel, -1 unknown. */
  private indexForQuoted(s: Session, quoted: string): number {
    for (let i = 0; i < this.fs.length; i++) if (quotedNameIs(quoted, this.fs[i].arg)) return i;
    if (s.sentinel && quotedNameIs(quoted, s.sentinel)) return this.fs.length;
    let best = -1;
    let bestLen = 0;
    for (let i = 0; i < this.fs.length; i++) {
      const a = this.fs[i].arg;
      if (a.length > bestLen && quoted.includes(a)) {
        best = i;
        bestLen = a.length;
      }
    }
    if (s.sentinel && s.sentinel.length > bestLen && quoted.includes(s.sentinel)) return this.fs.length;
    return best;
  }

  // -- events --------------------------------------------------------------------------------------------

  private emitLine(file: string, line: string, truncated: boolean): void {
    if (this.stopped) return;
    this.lines++;
    this.emit(truncated ? { type: 'line', file, line, truncated: true } : { type: 'line', file, line });
  }

  private emitMarker(file: string | null, kind: TailMarkerKind, message: string): void {
    if (this.stopped) return;
    this.emit({ type: 'marker', file, kind, message });
  }

  private emit(e: TailEvent): void {
    for (const fn of this.listeners) {
      try {
        fn(e);
      } catch (err) {
        // A listener's bug must not corrupt the demultiplexer's state; surface it instead of hiding it.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }
}

function isArrowPrefix(b: Buffer, a: number, e: number): boolean {
  const arrow = '==> ';
  for (let k = a; k < e; k++) if (b[k] !== arrow.charCodeAt(k - a)) return false;
  return true;
}

function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
