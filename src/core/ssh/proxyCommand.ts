/**
 * ProxyCommand as OpenSSH runs it: the user's command line from ssh config, with %h %p %r %n %%
 * expanded, run locally through `/bin/sh -c "exec <command>"`; its stdin/stdout are the SSH byte stream
 * (the transport still verifies the host key of the node behind it against known_hosts). Its stderr goes
 * to the log and, when the connection fails, into the error message. The command runs in its own process
 * group, which is ended when the connection closes.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { Duplex } from 'node:stream';
import { GpuSessionsError } from '../util/errors';
import type { Logger } from '../util/logger';

export interface ProxyCommandTokens {
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
    if (!SAFE_VALUE.test(v))
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

export function spawnProxyCommand(command: string, opts: { label: string; log?: Logger; env?: NodeJS.ProcessEnv }): ProxyProcess {
  const child: ChildProcess = spawn('/bin/sh', ['-c', `exec ${command}`], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
    env: opts.env ?? process.env,
  });
  let stderr = '';
  let partial = '';
  let status: string | null = null;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, sig) => {
      status = sig ? `killed by ${sig}` : `exit status ${code}`;
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
    kill: (graceMs = 2000) => {
      if (killed) return;
      killed = true;
      sock.destroy();
      signal('SIGTERM');
      const t = setTimeout(() => signal('SIGKILL'), graceMs);
      t.unref();
      void exited.then(() => clearTimeout(t));
    },
    exited,
  };
}
