/**
 * The embedded demo node: an SSH server built on ssh2's server side, listening on 127.0.0.1 only,
 * with freshly generated throwaway keys. Its exec runs /bin/sh in a sandbox home built by
 * buildSimHome (fake nvidia-smi on PATH, simulated SGLang servers, seed-like artifacts).
 * No root, no OpenSSH needed. It writes a ready ssh config and known_hosts for itself.
 */
import { ChildProcess, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, statSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import type { AcceptConnection, RejectConnection, Server, ServerChannel, Session, TcpipRequestInfo } from 'ssh2';
import { buildSimHome, SimNodeLayout, SimNodeOptions } from './home';
import { loadSsh2 } from '../core/ssh/transport';
import { SIM_SCOPE_VAR } from '../core/node/probe';
import { simContainerDead } from './provider';

interface DemoNodeOptions {
  /** Folder for keys, config and the sandbox home. */
  dir: string;
  /** SSH port; 0 picks a free one. */
  port?: number;
  alias?: string;
  sim?: SimNodeOptions;
  /** Start the simulated SGLang servers (default true). */
  startServers?: boolean;
  log?: (msg: string) => void;
}

export interface DemoNode {
  alias: string;
  port: number;
  dir: string;
  home: string;
  sshConfigFile: string;
  knownHostsFile: string;
  identityFile: string;
  layout: SimNodeLayout;
  hostKeyFingerprint: string;
  /** The generation job ends: the servers' load drains and their logs go quiet (bounded wait). */
  finishJob(maxWaitMs?: number): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Runs an exec's command ("$1") as the process-group leader's own program, with a watcher beside it
 * in the group: a line on fd 3 ("done", the command finished) lets the watcher go; EOF (the demo's
 * process is gone) makes it end the whole group.
 */
const EXEC_WRAPPER = '( read _ <&3 || kill -TERM 0 ) </dev/null >/dev/null 2>&1 & exec 3<&-; exec /bin/sh -c "$1"';

/**
 * The demo's reaper ("$0" = the stop script): waits for a line or EOF on stdin, runs the stop script,
 * then ends the simulated servers it could not know of (started but no pid file yet): processes
 * running from this home ($HOME) whose command line names sglang.
 */
const REAPER = `read _
/bin/sh "$0" >/dev/null 2>&1
sweep() {
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    [ "$p" = "$$" ] && continue
    case "$(readlink "$d/cwd" 2>/dev/null)/" in
      "$HOME"/*) grep -q -a sglang "$d/cmdline" 2>/dev/null && kill "-$1" "$p" 2>/dev/null ;;
    esac
  done
}
sweep TERM
sleep 1
sweep KILL
exit 0`;

/**
 * ssh2's generateKeyPairSync('ed25519') drops a leading zero byte of the public key (about 1 key in 256),
 * producing a blob nobody can parse: generate until both halves parse.
 */
export function generateEd25519(utils: ReturnType<typeof loadSsh2>['utils']): { private: string; public: string } {
  for (let i = 0; i < 32; i++) {
    const k = utils.generateKeyPairSync('ed25519');
    if (!(utils.parseKey(k.public) instanceof Error) && !(utils.parseKey(k.private) instanceof Error)) return k;
  }
  throw new Error('Could not generate an ed25519 key pair.');
}

async function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/** First base port >= wanted whose `count` consecutive ports are free on 127.0.0.1. */
export async function findFreePortBlock(wanted: number, count: number): Promise<number> {
  for (let base = wanted; base < wanted + 2000; base += count) {
    let ok = true;
    for (let i = 0; i < count && ok; i++) ok = await portFree(base + i);
    if (ok) return base;
  }
  throw new Error(`No block of ${count} free ports found from ${wanted}.`);
}

export async function startDemoNode(opts: DemoNodeOptions): Promise<DemoNode> {
  const { Server: SshServer, utils } = loadSsh2();
  const { createHash } = await import('node:crypto');
  const log = opts.log ?? (() => undefined);
  const alias = opts.alias ?? 'gpu-demo';
  const dir = path.resolve(opts.dir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const home = path.join(dir, 'home');

  const { hostKey, identityFile, allowed, hostPub, hostBlob, fp } = throwawayKeys(utils, dir, createHash);

  // A random block below the ephemeral range (32768+), so that demos started at the same moment on a
  // shared machine (test harnesses) do not pick the same free ports before their servers bind them.
  const wanted = opts.sim?.basePort ?? 20000 + 7 * Math.floor(Math.random() * 1700);
  const basePort = await findFreePortBlock(wanted, opts.sim?.gpuCount ?? 7);
  if (basePort !== wanted) log(`Ports ${wanted}+ are busy; the simulated servers use ${basePort}+.`);
  // The demo node plays a RunPod pod unless told otherwise (sim.provider: null): `end-rental` can end it.
  const layout = buildSimHome(home, { ...opts.sim, provider: opts.sim?.provider === undefined ? 'runpod' : opts.sim.provider, basePort });
  const shellEnv: NodeJS.ProcessEnv = {
    ...layout.env,
    // The demo node shares this machine's process table: the probe lists only the servers running
    // from this home (see SIM_SCOPE_VAR in core/node/probe.ts); a real node shows every server.
    [SIM_SCOPE_VAR]: home,
    HOME: home,
    USER: 'demo',
    LOGNAME: 'demo',
    SHELL: '/bin/sh',
    LANG: 'C.UTF-8',
  };

  const children = new Set<ChildProcess>();
  const exec: ExecContext = { home, shellEnv, children };
  const clients = new Set<{ end(): void }>();
  // A stopped or deleted pod's container is gone: its sshd with it. Once the stand-in says so, every session ends
  // and new connections are closed before their handshake.
  let podDead = false;
  const server: Server = new SshServer({ hostKeys: [hostKey.private] }, (client) => {
    if (podDead || (layout.provider && simContainerDead(home))) {
      client.on('error', () => undefined);
      client.end();
      return;
    }
    clients.add(client);
    client.on('close', () => clients.delete(client));
    client.on('error', () => undefined);
    client.on('authentication', (ctx) => {
      if (
        ctx.method === 'publickey' &&
        ctx.username === 'demo' &&
        ctx.key.algo === allowed.type &&
        ctx.key.data.equals(allowed.getPublicSSH())
      ) {
        if (!ctx.signature) return ctx.accept();
        if (ctx.blob && allowed.verify(ctx.blob, ctx.signature, ctx.hashAlgo) === true) return ctx.accept();
      }
      ctx.reject(['publickey']);
    });
    client.on('ready', () => {
      client.on('session', (acceptSession) => {
        const session = acceptSession();
        session.on('exec', (accept, _reject, info) => runExec(accept(), session, info.command, exec));
        session.on('signal', (accept) => accept?.());
      });
      client.on('tcpip', forwardLoopback);
    });
  });

  const deathWatch = layout.provider
    ? setInterval(() => {
        if (podDead || !simContainerDead(home)) return;
        podDead = true;
        log(`The pod ${layout.provider?.instanceId} was ended: the demo node refuses new SSH sessions.`);
        for (const c of clients) c.end();
        killChildren('SIGTERM');
      }, 500)
    : null;
  deathWatch?.unref();

  const want = opts.port ?? 0;
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(want, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });

  const { knownHostsFile, sshConfigFile } = writeClientFiles(
    dir,
    alias,
    port,
    identityFile,
    `${hostPub.type} ${hostBlob.toString('base64')}`,
  );

  // Asynchronously: the demo may live inside the VS Code extension host, which must not block.
  const runScript = (script: string, timeoutMs: number) =>
    new Promise<number | null>((resolve) => {
      const c = spawn('/bin/sh', [script], { cwd: home, env: shellEnv, stdio: 'ignore' });
      const timer = setTimeout(() => c.kill('SIGKILL'), timeoutMs);
      c.on('close', (code) => (clearTimeout(timer), resolve(code)));
      c.on('error', () => (clearTimeout(timer), resolve(127)));
    });
  // The reaper: a detached shell that runs the stop script when told to, or when this process goes
  // away without saying so (its stdin, a pipe from here, reaches EOF): the simulated servers never
  // outlive the demo, whether it is stopped, its window closed, or its CLI ended by Ctrl-C or a kill.
  const reaper = spawn('/bin/sh', ['-c', REAPER, layout.stopScript], {
    cwd: home,
    env: shellEnv,
    stdio: ['pipe', 'ignore', 'ignore'],
    detached: true,
  });
  reaper.on('error', () => undefined);
  reaper.stdin?.on('error', () => undefined);
  reaper.unref();
  (reaper.stdin as unknown as net.Socket | null)?.unref?.();
  const reaperExited = new Promise<void>((resolve) => reaper.once('exit', () => resolve()));

  if (opts.startServers !== false) {
    const code = await runScript(layout.launchScript, 30_000);
    if (code !== 0) log(`launch script exited ${code}`);
  }

  const killChildren = (sig: NodeJS.Signals) => {
    for (const c of children) {
      try {
        if (c.pid) process.kill(-c.pid, sig);
      } catch {
        /* gone */
      }
    }
  };
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (deathWatch) clearInterval(deathWatch);
    // Exec children first (a tail -F never ends by itself), then the servers, then the listener.
    killChildren('SIGTERM');
    for (const c of clients) c.end();
    reaper.stdin?.end('stop\n');
    const deadline = Date.now() + 3000;
    while (children.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    killChildren('SIGKILL');
    await Promise.race([reaperExited, new Promise((r) => setTimeout(r, 25_000))]);
    // A connection still in its handshake can hold close() open: bounded.
    await Promise.race([new Promise<void>((resolve) => server.close(() => resolve())), new Promise((r) => setTimeout(r, 3000))]);
  };
  const finishJob = (maxWaitMs = 20_000) => finishDemoJob(home, layout.logFiles, maxWaitMs);
  return { alias, port, dir, home, sshConfigFile, knownHostsFile, identityFile, layout, hostKeyFingerprint: fp, finishJob, stop };
}

/** What each exec of the demo node shares: the home, the shell's environment, the children still running. */
interface ExecContext {
  home: string;
  shellEnv: NodeJS.ProcessEnv;
  children: Set<ChildProcess>;
}

/** One exec: `command` run by /bin/sh in the home, its output on the channel, its exit status (or signal) at the end. */
function runExec(ch: ServerChannel, session: Session, command: string, { home, shellEnv, children }: ExecContext): void {
  // Its own process group (killed as a whole when the channel closes), plus a watcher in that
  // group that ends it when this process goes away without stopping the demo (window closed,
  // CLI killed): the watcher's fd 3 is a pipe from here, and EOF on it means we are gone.
  const child = spawn('/bin/sh', ['-c', EXEC_WRAPPER, 'sh', command], {
    cwd: home,
    env: shellEnv,
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    detached: true,
  });
  children.add(child);
  const watch = child.stdio[3] as net.Socket | null;
  watch?.on('error', () => undefined);
  child.stdout.pipe(ch, { end: false });
  child.stderr.pipe(ch.stderr, { end: false });
  ch.pipe(child.stdin).on('error', () => undefined);
  child.stdin.on('error', () => undefined);
  let outDone = 0;
  let exitCode: number | null = null;
  let exitSig: string | null = null;
  let exited = false;
  const finish = () => {
    if (!exited || outDone < 2) return;
    try {
      if (exitSig) ch.exit(exitSig.replace(/^SIG/, ''), false, '');
      else ch.exit(exitCode ?? 0);
    } catch {
      /* channel already gone */
    }
    ch.end();
  };
  child.stdout.on('end', () => {
    outDone++;
    finish();
  });
  child.stderr.on('end', () => {
    outDone++;
    finish();
  });
  child.on('exit', (code, sig) => {
    children.delete(child);
    // Finished normally: tell the watcher to leave what the command started alone.
    watch?.end('done\n');
    exitCode = code;
    exitSig = sig;
    exited = true;
    finish();
  });
  child.on('error', () => {
    exited = true;
    exitCode = 127;
    outDone = 2;
    finish();
  });
  const kill = () => {
    if (child.exitCode === null && child.pid) {
      try {
        process.kill(-child.pid, 'SIGTERM');
      } catch {
        /* gone */
      }
    }
  };
  ch.on('close', kill);
  session.on('signal', kill as never);
}

/** A port forward (direct-tcpip): loopback destinations only. */
function forwardLoopback(accept: AcceptConnection<ServerChannel>, reject: RejectConnection, info: TcpipRequestInfo): void {
  if (!['127.0.0.1', 'localhost', '::1'].includes(info.destIP)) return reject();
  const sock = net.connect(info.destPort, info.destIP === 'localhost' ? '127.0.0.1' : info.destIP);
  sock.once('connect', () => {
    const ch = accept();
    ch.pipe(sock).pipe(ch);
    ch.on('close', () => sock.destroy());
    sock.on('close', () => ch.close());
  });
  sock.once('error', () => reject());
}

/** Pauses the generation job, then waits (at most maxWaitMs) until the servers' logs stay still 2.5 s. */
async function finishDemoJob(home: string, logFiles: string[], maxWaitMs: number): Promise<void> {
  writeFileSync(path.join(home, '.sim', 'pause_load'), 'the demo generation job finished\n');
  const sizes = () => logFiles.map((f) => (existsSync(f) ? statSync(f).size : 0)).join(',');
  const deadline = Date.now() + maxWaitMs;
  let last = sizes();
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    const now = sizes();
    if (now !== last) {
      last = now;
      quietSince = Date.now();
    } else if (Date.now() - quietSince >= 2500) return;
  }
}

/** known_hosts and an ssh config (Host ALIAS) that reach the demo node with its throwaway key. */
function writeClientFiles(
  dir: string,
  alias: string,
  port: number,
  identityFile: string,
  hostKeyLine: string,
): { knownHostsFile: string; sshConfigFile: string } {
  const knownHostsFile = path.join(dir, 'known_hosts');
  writeFileSync(knownHostsFile, `[127.0.0.1]:${port} ${hostKeyLine}\n`, { mode: 0o600 });
  const sshConfigFile = path.join(dir, 'ssh_config');
  writeFileSync(
    sshConfigFile,
    [
      `# GPU Sessions demo node (throwaway keys; regenerated at every start)`,
      `Host ${alias}`,
      `  HostName 127.0.0.1`,
      `  Port ${port}`,
      `  User demo`,
      `  IdentityFile ${identityFile}`,
      `  IdentitiesOnly yes`,
      `  UserKnownHostsFile ${knownHostsFile}`,
      ``,
    ].join('\n'),
  );
  return { knownHostsFile, sshConfigFile };
}

/** Throwaway keys, regenerated on every start: the host key, and the client's (written to dir/id_ed25519). */
function throwawayKeys(utils: ReturnType<typeof loadSsh2>['utils'], dir: string, createHash: typeof import('node:crypto').createHash) {
  const hostKey = generateEd25519(utils);
  const clientKey = generateEd25519(utils);
  const identityFile = path.join(dir, 'id_ed25519');
  writeFileSync(identityFile, clientKey.private, { mode: 0o600 });
  chmodSync(identityFile, 0o600);
  writeFileSync(identityFile + '.pub', clientKey.public + '\n');
  const allowed = utils.parseKey(clientKey.public);
  if (allowed instanceof Error) throw allowed;
  const hostPub = utils.parseKey(hostKey.public);
  if (hostPub instanceof Error) throw hostPub;
  const hostBlob = hostPub.getPublicSSH();
  const fp = 'SHA256:' + createHash('sha256').update(hostBlob).digest('base64').replace(/=+$/, '');
  return { hostKey, identityFile, allowed, hostPub, hostBlob, fp };
}
