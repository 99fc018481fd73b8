/**
 * `gpu-sessions tail NODE PATH [--lines N] [--follow] [--stats]`
 *
 *   (default)   the last N lines of PATH (default 200 in the CLI wiring), then exit
 *   --follow    keep following (tail -F semantics: rotation, truncation and a late file are marked on stderr;
 *               a dropped connection is re-established and the lines written meanwhile are caught up)
 *               until SIGINT or the abort signal
 *   --stats     instead of raw lines, one summary line of the SGLang server writing PATH
 *               ("1,987 tok/s · 32 run · 0 queue · accept 2.71"): rewritten in place (\r) when stdout is a
 *               terminal, else printed every 2 s; without --follow, printed once for the last N lines
 *   --raw       the log's bytes as they are (ANSI colours, any escape the log holds); by default colour
 *               sequences are dropped and every other control character is shown as `\u001b`
 *
 * Exit status: 0 (also after SIGINT/abort), 1 remote failure (e.g. no such file without --follow),
 * 2 usage, 3 host-key problem, 4 unreachable or authentication failure.
 */
import { errorMessage, exitCodeFor } from '../core/util/errors';
import { LineSplitter } from '../core/sglang/logLines';
import { runOperation } from '../core/remote/operation';
import { plainLogLine } from '../core/util/terminal';
import { RemoteTail, lastLinesOperation } from '../core/remote/tail';
import { StatsTracker } from '../core/sglang/liveStats';
import type { Transport } from '../core/ssh/transport';
import type { CliIo } from './cliNode';

/** tail writes sanitized lines (out), its own cursor controls and --raw lines (raw; default out); isTTY defaults to
 * process.stdout.isTTY. */
type TailCmdIo = Pick<CliIo, 'out' | 'err' | 'raw'> & Partial<Pick<CliIo, 'isTTY'>>;

interface TailCmdOptions {
  lines: number;
  follow: boolean;
  stats: boolean;
  /** Log lines as they are (ANSI colours kept); default: colours dropped, controls made visible. */
  raw?: boolean;
}

const TTY_REFRESH_MS = 1000;
const PLAIN_REFRESH_MS = 2000;

export async function cmdTail(t: Transport, path: string, opts: TailCmdOptions, io: TailCmdIo, signal?: AbortSignal): Promise<number> {
  if (!path) {
    io.err('tail: missing PATH.\n');
    return 2;
  }
  if (!Number.isInteger(opts.lines) || opts.lines < 0 || opts.lines > 1_000_000) {
    io.err(`tail: --lines must be a whole number from 0 to 1000000 (got ${opts.lines}).\n`);
    return 2;
  }
  if (/[\n\0]/.test(path)) {
    io.err('tail: PATH must not contain a newline.\n');
    return 2;
  }
  const isTTY = io.isTTY ?? Boolean(process.stdout.isTTY);
  return opts.follow ? follow(t, path, opts, io, isTTY, signal) : once(t, path, opts, io, signal);
}

/** The last N lines, one exec. */
async function once(t: Transport, path: string, opts: TailCmdOptions, io: TailCmdIo, signal?: AbortSignal): Promise<number> {
  try {
    const r = await runOperation(t, lastLinesOperation(path, opts.lines), signal);
    if (opts.stats) {
      const st = new StatsTracker();
      const sp = new LineSplitter();
      for (const l of sp.push(r.stdout)) st.feed(path, l);
      for (const l of sp.flush()) st.feed(path, l);
      if (r.code === 0) io.out(st.describe(path) + '\n');
    } else if (r.stdout.length) {
      const text = r.stdout.toString('utf8');
      if (opts.raw) (io.raw ?? io.out)(text);
      else io.out(plainLogLine(text));
    }
    if (r.truncated) io.err('tail: output cut at 64 MiB.\n');
    if (r.code !== 0) {
      io.err(r.stderr.toString('utf8') || `tail: remote tail exited with status ${r.code}\n`);
      return 1;
    }
    return 0;
  } catch (e) {
    if (signal?.aborted) return 0;
    io.err(`error: ${errorMessage(e)}\n`);
    return exitCodeFor(e);
  }
}

async function follow(
  t: Transport,
  path: string,
  opts: TailCmdOptions,
  io: TailCmdIo,
  isTTY: boolean,
  signal?: AbortSignal,
): Promise<number> {
  const tail = new RemoteTail(t, { files: [path], initialLines: opts.lines });
  const stats = opts.stats ? new StatsTracker() : null;
  let pending = '';
  let flushQueued = false;
  let statsShown = false;
  const flush = () => {
    flushQueued = false;
    if (pending) {
      if (opts.raw) (io.raw ?? io.out)(pending);
      else io.out(plainLogLine(pending));
      pending = '';
    }
  };
  const showStats = () => {
    if (!stats) return;
    const line = stats.describe(path);
    if (isTTY) {
      (io.raw ?? io.out)('\r\x1b[K');
      io.out(line);
    } else io.out(line + '\n');
    statsShown = true;
  };

  let finish: (code: number) => void = () => undefined;
  const finished = new Promise<number>((resolve) => (finish = resolve));

  tail.on('event', (e) => {
    if (e.type === 'line') {
      if (stats) {
        stats.feed(path, e.line);
        return;
      }
      pending += e.line + '\n';
      if (!flushQueued) {
        flushQueued = true;
        setImmediate(flush);
      }
      return;
    }
    flush();
    if (stats && isTTY && statsShown) (io.raw ?? io.out)('\r\x1b[K');
    io.err(`[${e.kind}] ${e.message}\n`);
    if (!tail.running) finish(1); // a fatal error: the tail gave up
  });

  const onAbort = () => finish(0);
  const ownSigint = !signal;
  if (signal) {
    if (signal.aborted) return 0;
    signal.addEventListener('abort', onAbort, { once: true });
  } else {
    process.once('SIGINT', onAbort);
  }
  let timer: NodeJS.Timeout | undefined;
  try {
    try {
      await Promise.race([tail.start(), finished.then(() => undefined)]);
    } catch (e) {
      if (signal?.aborted) return 0;
      io.err(`error: ${errorMessage(e)}\n`);
      return exitCodeFor(e);
    }
    if (stats) {
      showStats();
      timer = setInterval(showStats, isTTY ? TTY_REFRESH_MS : PLAIN_REFRESH_MS);
    }
    return await finished;
  } finally {
    if (timer) clearInterval(timer);
    tail.stop();
    flush();
    if (stats && isTTY && statsShown) io.out('\n');
    if (signal) signal.removeEventListener('abort', onAbort);
    if (ownSigint) process.removeListener('SIGINT', onAbort);
  }
}
