/**
 * ProxyCommand as OpenSSH runs it: the user's command line from ssh config, with %h %p %r %n %%
 * expanded, run locally through `/bin/sh -c "exec <command>"`; its stdin/stdout are the SSH byte stream
 * (the transport still verifies the host key of the node behind it against known_hosts). Its stderr goes
 * to the log and, when the connection fails, into the error message. The command runs in its own process
 * group, which is ended on every path out: the connection closing, and this process exiting (normal exit, an
 * error, a signal the CLI handles, the extension's dispose). A proxy that ignores SIGTERM (SSM's
 * session-manager-plugin does not exit by itself) gets SIGKILL after a grace timed by a small detached
 * watchdog process, so it does not depend on this process's event loop staying alive.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { Duplex } from 'node:stream';
import { GpuSessionsError } from '../util/errors';
import type { Logger } from '../util/logger';

interface ProxyCommandTokens {
  /** %h: the host name (after HostName). */
  host: string;
  /** %p */
  port: number;
  /** %r: the remote user name. */
  user: string;
  /** %n: the name as given (the Host alias). */
  alias: string;
}

/**
 * A substituted value must be a plain name: OpenSSH hands the expanded line to the shell unquoted, so a
 * host name with shell syntax in it would run code. Names in ssh config and on the command line are these.
 */
const SAFE_VALUE = /^[A-Za-z0-9._:@+\-[\]]*$/;

/** Expands the tokens OpenSSH accepts in ProxyCommand; an unknown token or an unsafe value is an error. */
export function expandProxyCommand(command: string, t: ProxyCommandTokens): string {
  const values: Record<string, string> = { h: t.host, p: String(t.port), r: t.user, n: t.alias };
  return command.replace(/%(.?)/g, (_m, c: string) => {
    if (c === '%') return '%';
    if (!Object.prototype.hasOwnProperty.call(values, c))
      throw new GpuSessionsError(
        'config',
        `ProxyCommand "${command}": unknown token %${c} (ProxyCommand accepts %h, %p, %r, %n and %%; write %% for a literal %).`,
      );
    const v = values[c];
    // A leading '-' would reach the command as an option (`nc -oProxyCommand=…`): OpenSSH refuses such names too.
    if (!SAFE_VALUE.test(v) || v.startsWith('-'))
      throw new GpuSessionsError(
        'config',
        `ProxyCommand "${command}": %${c} would insert ${JSON.stringify(v)}, which is not a plain host or user name; refusing to pass it to the shell.`,
      );
    return v;
  });
}

export interface ProxyProcess {
  /** The SSH byte stream: writes go to the command's stdin, its stdout is read. */
  sock: Duplex;
  readonly pid: number | undefined;
  /** The last lines the command wrote to stderr (bounded). */
  stderrTail(): string;
  /** How it ended, once it has (null while it runs). */
  exitStatus(): string | null;
  /** Ends its whole process group (SIGTERM, then SIGKILL after graceMs). Idempotent. */
  kill(graceMs?: number): void;
  /** Resolves when the command has exited. */
  readonly exited: Promise<void>;
}

const STDERR_KEEP = 4096;
const GRACE_MS = 2000;

/** Process groups of proxies still running: ended when this process exits, whatever the path. */
const liveGroups = new Set<number>();
let exitHook = false;

/** SIGKILL for group `pgid` after `graceMs`, from a detached process that outlives this one. */
function killLater(pgid: number, graceMs: number): void {
  try {
    const w = spawn(
      '/bin/sh',
      ['-c', 'sleep "$1"; kill -0 -"$2" 2>/dev/null && kill -9 -"$2"', 'gs-proxy-watchdog', String(graceMs / 1000), String(pgid)],
      {
        detached: true,
        stdio: 'ignore',
      },
    );
    w.on('error', () => undefined);
    w.unref();
  } catch {
    /* no watchdog: the SIGTERM stands */
  }
}

/** SIGTERM to a proxy's process group now, SIGKILL after the grace; false when the group is gone. */
function endGroup(pgid: number, graceMs: number): boolean {
  try {
    process.kill(-pgid, 'SIGTERM');
  } catch {
    return false;
  }
  killLater(pgid, graceMs);
  return true;
}

function ensureExitHook(): void {
  if (exitHook) return;
  exitHook = true;
  process.on('exit', () => {
    for (const g of liveGroups) endGroup(g, GRACE_MS);
    liveGroups.clear();
  });
}

export function spawnProxyCommand(command: string, opts: { label: string; log?: Logger; env?: NodeJS.ProcessEnv }): ProxyProcess {
  const child: ChildProcess = spawn('/bin/sh', ['-c', `exec ${command}`], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
    env: opts.env ?? process.env,
  });
  let stderr = '';
  let partial = '';
  let status: string | null = null;
  const pgid = child.pid;
  if (pgid) {
    liveGroups.add(pgid);
    ensureExitHook();
  }
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, sig) => {
      status = sig ? `killed by ${sig}` : `exit status ${code}`;
      // the command itself is gone; what it started in its group (if anything) is ended with it
      if (pgid && liveGroups.delete(pgid)) endGroup(pgid, GRACE_MS);
      resolve();
    });
    child.once('error', (e) => {
      status = `could not be started: ${e.message}`;
      resolve();
    });
  });
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (d: string) => {
    stderr = (stderr + d).slice(-STDERR_KEEP);
    partial += d;
    const lines = partial.split('\n');
    partial = lines.pop() ?? '';
    for (const l of lines) if (l.trim()) opts.log?.warn(`${opts.label}: ProxyCommand: ${l}`);
  });
  child.stdin!.on('error', () => undefined);
  child.stdout!.on('error', () => undefined);
  const sock = Duplex.from({ readable: child.stdout!, writable: child.stdin! });
  sock.on('error', () => undefined);
  let killed = false;
  const signal = (sig: NodeJS.Signals) => {
    if (!child.pid || status !== null) return;
    try {
      process.kill(-child.pid, sig);
    } catch {
      try {
        child.kill(sig);
      } catch {
        /* gone */
      }
    }
  };
  return {
    sock,
    pid: child.pid,
    stderrTail: () => stderr.trim(),
    exitStatus: () => status,
    kill: (graceMs = GRACE_MS) => {
      if (killed) return;
      killed = true;
      sock.destroy();
      if (pgid && status === null) {
        liveGroups.delete(pgid);
        if (endGroup(pgid, graceMs)) return;
      }
      signal('SIGTERM');
    },
    exited,
  };
}
