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
 * back (25 ms, see armHold) until the next chunk shows whether a header follows.
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
 * The parts: ringBuffer.ts (recent lines), tailCommand.ts (events, options, the remote command, last lines),
 * tailNotice.ts (GNU tail's stderr notices), tailResume.ts (the anchor skipper), tailState.ts (session state).
 * None of them may import `vscode`.
 */
export * from './ringBuffer';
export * from './tailCommand';
export * from './tailNotice';
export * from './tailResume';
export * from './tailState';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { LineSplitter, isTruncatedLine } from '../sglang/logLines';
import { openStream } from './operation';
import type { Transport } from '../ssh/transport';
import {
  ANCHOR_BYTES,
  DEFAULT_DELAYS,
  EXIT_NO_SENTINEL,
  HDR,
  HDR_END,
  HOLD_MS,
  MAX_PROLOGUE_JUNK,
  NL,
  PROLOGUE,
  RESUME_SLACK,
  TailEvent,
  TailMarkerKind,
  TailOptions,
  buildTailCommand,
  tailArgName,
  untailablePath,
} from './tailCommand';
import { parseTailNotice, quotedNameIs } from './tailNotice';
import { ResumeSkipper } from './tailResume';
import { FileState, Session } from './tailState';

/** Follows files on a node over one channel. See the module comment for the protocol. */
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

  /**
   * After HOLD_MS without a header, the held bytes are content. Two cases must not decide early: before the first
   * header (or at the sentinel's) there is no file to give them to, and tail's first output can come long after the
   * prologue (the exec); and a stalled event loop runs an expired timer before the read that completes the header,
   * so the decision waits for the poll phase (setImmediate) and is dropped when more output came meanwhile.
   */
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
      if (s.current < 0 || s.current >= this.fs.length) return; // no file yet: the next output completes it
      const h = s.held;
      setImmediate(() => {
        if (this.session !== s || s.held !== h) return; // more output came: parse() decided
        s.held = null;
        this.deliver(s, h, 0, h.length); // no header came: the bytes are content
      });
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
        `Could not find where ${f.name} left off (rewritten while disconnected?); showing its last ${fmtBytes(fb.length)}; ` +
          `lines written in between may be missing.`,
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
