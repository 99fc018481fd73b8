/**
 * Transports: how the core runs commands on a node.
 *
 * - `SshTransport`: ONE pooled ssh2 connection per node, shared by every feature. Host keys are
 *   verified against known_hosts before authentication; keepalive; connect timeout; reconnect with
 *   backoff after a drop; a channel semaphore that respects sshd's MaxSessions; ProxyJump via forwardOut;
 *   ProxyCommand through a local command's stdio (proxyCommand.ts).
 * - `LocalTransport`: "This machine", for when VS Code runs on the GPU node itself.
 *
 * ssh2 is loaded lazily (it costs ~100 ms to require), so merely importing this module is cheap.
 */
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import * as os from 'node:os';
import type { Duplex, Readable } from 'node:stream';
import type { Client, ClientChannel, ConnectConfig } from 'ssh2';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { shq } from '../util/quote';
import { KnownHostsStore, fingerprintSha256, keyTypeOfBlob } from './knownHosts';
import { HostKeyGate, HostKeyPrompt } from './hostKeyGate';
import { authHandler, identityFiles } from './auth';
import { loadSsh2, loadSsh2Client } from './lazySsh2';
import type { NodeSpec } from './config';
import { ProxyProcess, expandProxyCommand, spawnProxyCommand } from './proxyCommand';
import { Logger, nullLogger } from '../util/logger';

/** What a channel's exit-status / exit-signal said; `received` stays false when the channel closed without one. */
interface ChannelExit {
  received: boolean;
  code: number | null;
  signal?: string;
}

export interface AbortLike {
  readonly aborted: boolean;
  addEventListener(type: 'abort', fn: () => void, opts?: { once?: boolean }): void;
  removeEventListener(type: 'abort', fn: () => void): void;
}

export interface ExecOptions {
  stdin?: string | Buffer;
  timeoutMs?: number;
  signal?: AbortLike;
  /** Output beyond this many bytes (per stream) is discarded and `truncated` set. Default 64 MiB. */
  maxOutputBytes?: number;
  /** Retry once on a fresh connection when the connection dropped before the command finished. */
  retryOnDrop?: boolean;
}

export interface ExecResult {
  stdout: Buffer;
  stderr: Buffer;
  code: number | null;
  signal?: string;
  truncated: boolean;
}

export interface ExecStream {
  readonly stdout: Readable;
  readonly stderr: Readable;
  /** Resolves when the remote command ended or the channel closed. */
  readonly done: Promise<{ code: number | null; signal?: string }>;
  close(): void;
}

export interface StreamOptions {
  signal?: AbortLike;
  /** Written to the command's stdin, which is then closed. */
  stdin?: string | Buffer;
}

export type ConnectionState = 'idle' | 'connecting' | 'connected' | 'disconnected' | 'failed';

export interface Transport {
  readonly label: string;
  exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
  /** A long-running command whose output is consumed as a stream (tails). Holds one channel until closed. */
  stream(command: string, opts?: StreamOptions): Promise<ExecStream>;
  /** A TCP connection to host:port as seen from the node (SSH direct-tcpip on the pooled connection). */
  connectTcp(host: string, port: number): Promise<Duplex>;
  /** Details for reports: host, port, user, host-key fingerprint. Never key material. */
  describe(): Record<string, string | number | undefined>;
  readonly state: ConnectionState;
  onStateChange(fn: (s: ConnectionState, err?: Error) => void): () => void;
  dispose(): void;
}

/** Counting semaphore (FIFO). */
class Semaphore {
  private waiters: Array<() => void> = [];
  constructor(private available: number) {}
  async acquire(): Promise<() => void> {
    if (this.available > 0) {
      this.available--;
    } else {
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.waiters.shift();
      if (next) next();
      else this.available++;
    };
  }
  get free(): number {
    return this.available;
  }
}

function collect(out: Readable, err: Readable, max: number): { stdout: () => Buffer; stderr: () => Buffer; truncated: () => boolean } {
  const o: Buffer[] = [];
  const e: Buffer[] = [];
  let ol = 0;
  let el = 0;
  let trunc = false;
  out.on('data', (b: Buffer) => {
    if (ol >= max) {
      trunc = true;
      return;
    }
    if (ol + b.length > max) {
      b = b.subarray(0, max - ol);
      trunc = true;
    }
    o.push(b);
    ol += b.length;
  });
  err.on('data', (b: Buffer) => {
    if (el >= 1024 * 1024) return;
    e.push(b);
    el += b.length;
  });
  return { stdout: () => Buffer.concat(o), stderr: () => Buffer.concat(e), truncated: () => trunc };
}

abstract class BaseTransport implements Transport {
  abstract readonly label: string;
  protected _state: ConnectionState = 'idle';
  private listeners = new Set<(s: ConnectionState, err?: Error) => void>();
  get state(): ConnectionState {
    return this._state;
  }
  protected setState(s: ConnectionState, err?: Error): void {
    if (s === this._state && !err) return;
    this._state = s;
    for (const l of [...this.listeners]) {
      try {
        l(s, err);
      } catch {
        /* listener errors must not break the transport */
      }
    }
  }
  onStateChange(fn: (s: ConnectionState, err?: Error) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
  abstract exec(command: string, opts?: ExecOptions): Promise<ExecResult>;
  abstract stream(command: string, opts?: StreamOptions): Promise<ExecStream>;
  abstract connectTcp(host: string, port: number): Promise<Duplex>;
  abstract describe(): Record<string, string | number | undefined>;
  abstract dispose(): void;
}

/** Runs commands on this machine with /bin/sh. */
export class LocalTransport extends BaseTransport {
  readonly label = 'This machine';
  constructor(
    private readonly env?: NodeJS.ProcessEnv,
    private readonly cwd?: string,
  ) {
    super();
    this._state = 'connected';
  }
  private spawnSh(command: string) {
    return spawn('/bin/sh', ['-c', command], {
      env: this.env ?? process.env,
      cwd: this.cwd ?? os.homedir(),
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  }
  exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    return new Promise((resolve, reject) => {
      const child = this.spawnSh(command);
      const c = collect(child.stdout, child.stderr, opts.maxOutputBytes ?? 64 * 1024 * 1024);
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => {
        child.kill('SIGTERM');
        reject(new GpuSessionsError('cancelled', 'Cancelled.'));
      };
      if (opts.timeoutMs) {
        timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new GpuSessionsError('timeout', `Command timed out after ${opts.timeoutMs} ms on this machine.`));
        }, opts.timeoutMs);
      }
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      child.on('error', (e) => {
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        reject(new GpuSessionsError('remote-failed', `Could not run /bin/sh: ${e.message}`));
      });
      child.on('close', (code, sig) => {
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        resolve({ stdout: c.stdout(), stderr: c.stderr(), code, signal: sig ?? undefined, truncated: c.truncated() });
      });
      child.stdin.on('error', () => undefined);
      child.stdin.end(opts.stdin ?? '');
    });
  }
  async stream(command: string, opts: StreamOptions = {}): Promise<ExecStream> {
    const child = spawn('/bin/sh', ['-c', command], {
      env: this.env ?? process.env,
      cwd: this.cwd ?? os.homedir(),
      stdio: ['pipe', 'pipe', 'pipe'],
      detached: true,
    });
    child.stdin.on('error', () => undefined);
    child.stdin.end(opts.stdin ?? '');
    const done = new Promise<{ code: number | null; signal?: string }>((resolve) =>
      child.on('close', (code, sig) => resolve({ code, signal: sig ?? undefined })),
    );
    return {
      stdout: child.stdout,
      stderr: child.stderr,
      done,
      close: () => {
        try {
          if (child.pid) process.kill(-child.pid, 'SIGTERM');
        } catch {
          child.kill('SIGTERM');
        }
      },
    };
  }
  connectTcp(host: string, port: number): Promise<Duplex> {
    return new Promise((resolve, reject) => {
      const s = net.connect({ host, port }, () => resolve(s));
      s.once('error', reject);
    });
  }
  describe() {
    return { host: os.hostname(), transport: 'local', user: os.userInfo().username };
  }
  dispose(): void {
    /* nothing pooled */
  }
}

export type { HostKeyPrompt };

export interface SshTransportOptions {
  node: NodeSpec;
  knownHosts: KnownHostsStore;
  /** Transport for the previous hop when the node has a ProxyJump; supplied by the pool. */
  jump?: Transport;
  /** Unknown host key: ask the user. Resolve true to accept (the key is then appended to known_hosts). */
  confirmHostKey?: (p: HostKeyPrompt) => Promise<boolean>;
  /** Encrypted key file: ask for its passphrase; undefined skips the key. */
  askPassphrase?: (keyFile: string) => Promise<string | undefined>;
  /** Called after a passphrase worked, so the caller may store it (SecretStorage). */
  passphraseAccepted?: (keyFile: string, passphrase: string) => void;
  agentSocket?: string;
  /** Extra key files (CLI --identity). */
  extraIdentityFiles?: string[];
  connectTimeoutMs?: number;
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  /** Concurrent session channels; OpenSSH's default MaxSessions is 10. */
  maxChannels?: number;
  log?: Logger;
  homeDir?: string;
}

/**
 * What a worker thread needs to open its own connection to the node with the same checks (plain data:
 * it crosses a thread boundary). No prompts there: an unknown host key is refused, encrypted keys without
 * an agent are skipped (the caller then falls back to the pooled connection).
 */
export interface SshConnectRecipe {
  node: NodeSpec;
  knownHostsFiles: string[];
  extraIdentityFiles?: string[];
  agentSocket?: string;
  homeDir?: string;
  connectTimeoutMs?: number;
  keepaliveIntervalMs?: number;
  keepaliveCountMax?: number;
  maxChannels: number;
}

function classifyConnectError(node: NodeSpec, e: Error & { level?: string; code?: string }): GpuSessionsError {
  const where = `${node.user ? node.user + '@' : ''}${node.host}:${node.port}`;
  if (e instanceof GpuSessionsError) return e;
  if (e.level === 'client-authentication') {
    return new GpuSessionsError(
      'auth-failed',
      `Authentication to ${node.name} (${where}) failed: no key was accepted. Check IdentityFile in ~/.ssh/config ` +
        `or gpuSessions.nodes, that ssh-agent holds the key (SSH_AUTH_SOCK), and that the public key is in the node's authorized_keys.`,
    );
  }
  if (e.level === 'client-timeout' || /Timed out while waiting for handshake/i.test(e.message)) {
    return new GpuSessionsError(
      'timeout',
      `${node.name} (${where}) did not answer the SSH handshake in time. Is the node up and the port right?`,
    );
  }
  const code = e.code ?? '';
  if (
    ['ECONNREFUSED', 'ENOTFOUND', 'EHOSTUNREACH', 'ENETUNREACH', 'ETIMEDOUT', 'ECONNRESET', 'EAI_AGAIN'].includes(code) ||
    e.level === 'client-socket'
  ) {
    return new GpuSessionsError(
      'unreachable',
      `${node.name} (${where}) is unreachable: ${e.message}. Check that the node is running and that host and port are right.`,
    );
  }
  return new GpuSessionsError('unreachable', `Could not connect to ${node.name} (${where}): ${e.message}`);
}

/**
 * One pooled ssh2 connection to a node. Commands wait for a free channel; a dropped connection is
 * re-established on the next use, with exponential backoff between failed attempts.
 */
export class SshTransport extends BaseTransport {
  readonly label: string;
  private client: Client | undefined;
  private connecting: Promise<Client> | undefined;
  private readonly channels: Semaphore;
  /** The current connection's host-key check; its `pinned` key is the one re-keys must present again. */
  private hostKeys: HostKeyGate | undefined;
  private failures = 0;
  private lastFailureAt = 0;
  private disposed = false;
  private fatal: GpuSessionsError | undefined;
  private readonly log: Logger;
  /** Number of TCP connections made; tests use it to check pooling. */
  connectCount = 0;

  constructor(private readonly opts: SshTransportOptions) {
    super();
    this.label = opts.node.name;
    this.channels = new Semaphore(opts.maxChannels ?? 10);
    this.log = opts.log ?? nullLogger;
  }

  get node(): NodeSpec {
    return this.opts.node;
  }

  describe() {
    return {
      host: this.opts.node.host,
      port: this.opts.node.port,
      user: this.opts.node.user,
      proxyJump: this.opts.node.proxyJump,
      hostKeyFingerprint: this.hostKeys?.pinned ? fingerprintSha256(this.hostKeys.pinned) : undefined,
      hostKeyType: this.hostKeys?.pinned ? keyTypeOfBlob(this.hostKeys.pinned) : undefined,
    };
  }

  /** For extra connections in worker threads (parallel transfers); undefined through a jump host or proxy. */
  connectRecipe(): SshConnectRecipe | undefined {
    const o = this.opts;
    if (o.jump || o.node.proxyJump || o.node.proxyCommand) return undefined;
    return {
      node: o.node,
      knownHostsFiles: o.knownHosts.paths,
      extraIdentityFiles: o.extraIdentityFiles,
      agentSocket: o.agentSocket ?? process.env.SSH_AUTH_SOCK,
      homeDir: o.homeDir,
      connectTimeoutMs: o.connectTimeoutMs,
      keepaliveIntervalMs: o.keepaliveIntervalMs,
      keepaliveCountMax: o.keepaliveCountMax,
      maxChannels: o.maxChannels ?? 10,
    };
  }

  /**
   * One round trip of the SSH connection itself, in ms: a global request the server answers at once (cancelling a
   * forward that was never asked for), so no channel, process or shell on the node.
   */
  async roundTripMs(): Promise<number> {
    const c = await this.connect();
    const t0 = performance.now();
    await new Promise<void>((resolve) => c.unforwardIn('127.0.0.1', 1, () => resolve()));
    return performance.now() - t0;
  }

  /** Forget a fatal host-key/auth state so the next call tries again (user pressed Refresh). */
  resetFailure(): void {
    this.fatal = undefined;
    this.failures = 0;
  }

  private backoffMs(): number {
    if (this.failures === 0) return 0;
    return Math.min(30_000, 500 * 2 ** (this.failures - 1));
  }

  async connect(): Promise<Client> {
    if (this.disposed) throw new GpuSessionsError('cancelled', `Connection to ${this.label} was closed.`);
    if (this.client) return this.client;
    if (this.fatal) throw this.fatal;
    if (!this.connecting) {
      this.connecting = (async () => {
        const wait = this.lastFailureAt + this.backoffMs() - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        try {
          let c: Client;
          try {
            c = await this.doConnect();
          } catch (first) {
            // A busy sshd drops excess unauthenticated connections (MaxStartups) with a reset during the
            // handshake: one quick retry with jitter, not for refusals or host-key/auth problems.
            const m = errorMessage(first);
            if (!(
              first instanceof GpuSessionsError &&
              first.code === 'unreachable' &&
              /ECONNRESET|before handshake|during setup|Connection lost/i.test(m)
            ))
              throw first;
            await new Promise((r) => setTimeout(r, 150 + Math.random() * 350));
            c = await this.doConnect();
          }
          this.failures = 0;
          return c;
        } catch (e) {
          this.failures++;
          this.lastFailureAt = Date.now();
          const ge = e as GpuSessionsError;
          if (
            ge.code === 'host-key-changed' ||
            ge.code === 'host-key-revoked' ||
            ge.code === 'host-key-unknown' ||
            ge.code === 'auth-failed'
          ) {
            this.fatal = ge;
          }
          this.setState('failed', ge);
          throw e;
        } finally {
          this.connecting = undefined;
        }
      })();
    }
    return this.connecting;
  }

  /** The connection's byte stream: through the ProxyJump hop, a ProxyCommand's stdio, or a TCP socket. */
  private async openSocket(): Promise<{ sock: Duplex; proxy?: ProxyProcess }> {
    const node = this.opts.node;
    if (this.opts.jump) {
      try {
        return { sock: await this.opts.jump.connectTcp(node.host, node.port) };
      } catch (e) {
        throw new GpuSessionsError(
          'unreachable',
          `${node.name}: the ProxyJump hop ${this.opts.jump.label} could not reach ${node.host}:${node.port}: ${errorMessage(e)}`,
        );
      }
    }
    if (node.proxyCommand) {
      // As OpenSSH: the command's stdio is the connection; the host key is verified as for a direct one.
      const cmd = expandProxyCommand(node.proxyCommand, {
        host: node.host,
        port: node.port,
        user: node.user ?? os.userInfo().username,
        alias: node.name,
      });
      const proxy = spawnProxyCommand(cmd, { label: node.name, log: this.log });
      this.log.info(`${node.name}: connecting through ProxyCommand ${cmd} (pid ${proxy.pid ?? '?'})`);
      return { sock: proxy.sock, proxy };
    }
    // Open the TCP connection before loading ssh2 (~100 ms of require): the kernel's handshake and sshd's
    // per-connection start overlap with it (a new `probe` process pays less than load + connect in turn).
    const early = net.connect({ host: node.host, port: node.port });
    early.once('error', () => undefined); // ssh2 attaches its own listener below, before the loop runs again
    return { sock: early };
  }

  /** socket → verified host key → authentication → a ready client (the four steps, each in its own place). */
  private async doConnect(): Promise<Client> {
    const node = this.opts.node;
    this.setState('connecting');
    this.connectCount++;
    // Every new connection is verified against known_hosts again; the pin only guards re-keys within it.
    const hostKeys = new HostKeyGate({
      name: node.name,
      // OpenSSH looks a HostKeyAlias up on its own, without [alias]:port.
      host: node.hostKeyAlias ?? node.host,
      port: node.hostKeyAlias ? 22 : node.port,
      knownHosts: this.opts.knownHosts,
      confirm: this.opts.confirmHostKey,
      log: this.log,
    });
    this.hostKeys = hostKeys;
    const { sock, proxy } = await this.openSocket();
    const { Client: SshClient } = loadSsh2Client();
    const client = new SshClient();
    const username = node.user ?? os.userInfo().username;
    const cfg: ConnectConfig = {
      host: node.host,
      port: node.port,
      sock: sock as ConnectConfig['sock'],
      username,
      readyTimeout: this.opts.connectTimeoutMs ?? 15_000,
      debug: process.env.GS_SSH_DEBUG ? (m: string) => this.log.warn(m) : undefined,
      keepaliveInterval: this.opts.keepaliveIntervalMs ?? 15_000,
      keepaliveCountMax: this.opts.keepaliveCountMax ?? 3,
      algorithms: { serverHostKey: hostKeys.algorithms() as never },
      hostVerifier: ((key: Buffer, verify: (ok: boolean) => void) =>
        hostKeys.check(key, verify)) as unknown as ConnectConfig['hostVerifier'],
      authHandler: authHandler({
        node,
        username,
        keyFiles: identityFiles(node, this.opts.extraIdentityFiles, this.opts.homeDir),
        agent: this.opts.agentSocket ?? process.env.SSH_AUTH_SOCK,
        askPassphrase: this.opts.askPassphrase,
        passphraseAccepted: this.opts.passphraseAccepted,
        log: this.log,
      }),
    };
    return this.whenReady(client, cfg, hostKeys, proxy);
  }

  /** Connects and settles once: ready, or the most precise reason (host key, then the ProxyCommand's own words). */
  private whenReady(client: Client, cfg: ConnectConfig, hostKeys: HostKeyGate, proxy: ProxyProcess | undefined): Promise<Client> {
    const node = this.opts.node;
    /** A failure through a ProxyCommand says what the command printed and how it ended. */
    const withProxy = (err: GpuSessionsError): GpuSessionsError => {
      if (!proxy) return err;
      const st = proxy.exitStatus();
      const tail = proxy.stderrTail();
      if (!st && !tail) return err;
      return new GpuSessionsError(
        err.code,
        `${err.message} (through ProxyCommand${st ? `, which ended with ${st}` : ''}${tail ? `; its stderr: ${tail.split('\n').slice(-5).join(' | ')}` : ''})`,
        err.detail,
      );
    };
    return new Promise<Client>((resolve, reject) => {
      let settled = false;
      client.on('ready', () => {
        settled = true;
        this.client = client;
        this.log.info(
          `Connected to ${node.name} (${node.host}:${node.port}${node.proxyJump ? ` via ${node.proxyJump}` : proxy ? ' via ProxyCommand' : ''})`,
        );
        this.setState('connected');
        resolve(client);
      });
      // A failure through a ProxyCommand waits briefly for the command to end, so its status is in the message.
      const fail = (err: GpuSessionsError) => {
        settled = true;
        const done = () => {
          const e = hostKeys.error ?? withProxy(err);
          this.log.error(`Connection to ${node.name} failed: ${e.message}`);
          reject(e);
        };
        if (proxy && !hostKeys.error) void Promise.race([proxy.exited, new Promise((r) => setTimeout(r, 500))]).then(done);
        else done();
      };
      client.on('error', (e: Error & { level?: string }) => {
        if (!settled) {
          fail(classifyConnectError(node, e));
        } else {
          this.log.warn(`Connection to ${node.name}: ${e.message}`);
        }
      });
      client.on('close', () => {
        // The proxy lives exactly as long as its connection.
        proxy?.kill();
        if (this.client === client) {
          this.client = undefined;
          this.log.info(`Connection to ${node.name} closed.`);
          if (!this.disposed) this.setState('disconnected');
        }
        if (!settled) fail(new GpuSessionsError('unreachable', `${node.name}: the connection closed during setup.`));
      });
      try {
        client.connect(cfg);
      } catch (e) {
        proxy?.kill();
        fail(classifyConnectError(node, e as Error));
      }
    });
  }

  /**
   * Opens an exec channel. The exit status is recorded from the exec callback on, synchronously: ssh2 parses
   * every packet of a received chunk in one go, so a quick command's data, exit-status, EOF and CLOSE can all be
   * handled before the code awaiting this promise runs; a listener attached there would miss the `exit` event and
   * read a finished command as a dropped channel (exit null).
   */
  private async openExec(command: string): Promise<{ ch: ClientChannel; release: () => void; exit: ChannelExit }> {
    for (let attempt = 0; ; attempt++) {
      const client = await this.connect();
      const release = await this.channels.acquire();
      try {
        const exit: ChannelExit = { received: false, code: null };
        const ch = await new Promise<ClientChannel>((resolve, reject) => {
          client.exec(command, (err, ch) => {
            if (err) return reject(err);
            ch.once('exit', (code: number | null, sig?: string) => {
              exit.received = true;
              exit.code = code;
              exit.signal = sig ?? undefined;
            });
            resolve(ch);
          });
        });
        ch.once('close', release);
        return { ch, release, exit };
      } catch (e) {
        release();
        const msg = errorMessage(e);
        // Another client on the same sshd connection limit, or a connection dropping under us.
        if (attempt < 3 && /open failure|No response from server|Not connected/i.test(msg)) {
          await new Promise((r) => setTimeout(r, 200 * (attempt + 1)));
          continue;
        }
        throw new GpuSessionsError('remote-failed', `${this.label}: could not open a channel: ${msg}`);
      }
    }
  }

  async exec(command: string, opts: ExecOptions = {}): Promise<ExecResult> {
    try {
      return await this.execOnce(command, opts);
    } catch (e) {
      if (opts.retryOnDrop && e instanceof GpuSessionsError && e.detail?.dropped) {
        this.log.info(`${this.label}: connection dropped during a command; reconnecting and retrying once.`);
        return this.execOnce(command, opts);
      }
      throw e;
    }
  }

  private async execOnce(command: string, opts: ExecOptions): Promise<ExecResult> {
    if (opts.signal?.aborted) throw new GpuSessionsError('cancelled', 'Cancelled.');
    const { ch, exit } = await this.openExec(opts.timeoutMs ? boundedCommand(command, opts.timeoutMs) : command);
    return new Promise<ExecResult>((resolve, reject) => {
      const c = collect(ch, ch.stderr, opts.maxOutputBytes ?? 64 * 1024 * 1024);
      let finished = false;
      let timer: NodeJS.Timeout | undefined;
      const finish = (err?: Error) => {
        if (finished) return;
        finished = true;
        if (timer) clearTimeout(timer);
        opts.signal?.removeEventListener('abort', onAbort);
        if (err) {
          // The client gives up (timeout, cancel): the node's command goes too, with its process group
          // (boundedCommand's `timeout` relays the TERM to the group; it also ends it by itself past the limit).
          if (!exit.received) signalAfterEof(ch, 'TERM');
          ch.close();
          reject(err);
        } else resolve({ stdout: c.stdout(), stderr: c.stderr(), code: exit.code, signal: exit.signal, truncated: c.truncated() });
      };
      const onAbort = () => finish(new GpuSessionsError('cancelled', 'Cancelled.'));
      opts.signal?.addEventListener('abort', onAbort, { once: true });
      if (opts.timeoutMs) {
        timer = setTimeout(
          () =>
            finish(
              new GpuSessionsError('timeout', `${this.label}: the command did not finish within ${Math.round(opts.timeoutMs! / 1000)} s.`),
            ),
          opts.timeoutMs,
        );
      }
      ch.on('close', () => {
        if (!exit.received) {
          finish(
            new GpuSessionsError('unreachable', `${this.label}: the connection dropped before the command finished.`, { dropped: true }),
          );
        } else finish();
      });
      ch.on('error', (e: Error) => finish(new GpuSessionsError('remote-failed', `${this.label}: ${e.message}`)));
      if (opts.stdin !== undefined) ch.end(opts.stdin);
      else ch.end();
    });
  }

  async stream(command: string, opts: StreamOptions = {}): Promise<ExecStream> {
    const { ch, exit } = await this.openExec(command);
    const done = new Promise<{ code: number | null; signal?: string }>((resolve) => {
      ch.on('close', () => {
        opts.signal?.removeEventListener('abort', close);
        resolve({ code: exit.code, signal: exit.signal });
      });
    });
    const close = () => {
      try {
        ch.signal('TERM');
      } catch {
        /* not supported by every server */
      }
      ch.close();
    };
    opts.signal?.addEventListener('abort', close, { once: true });
    if (opts.stdin !== undefined) ch.end(opts.stdin);
    else ch.end();
    return { stdout: ch, stderr: ch.stderr, done, close };
  }

  async connectTcp(host: string, port: number): Promise<Duplex> {
    const client = await this.connect();
    return new Promise((resolve, reject) => {
      client.forwardOut('127.0.0.1', 0, host, port, (err, stream) => {
        if (err) reject(new GpuSessionsError('remote-failed', `${this.label}: cannot reach ${host}:${port} from the node: ${err.message}`));
        else resolve(stream);
      });
    });
  }

  /** Drop the connection (tests, and "Disconnect" in the UI). The next call reconnects. */
  disconnect(): void {
    this.client?.end();
  }

  dispose(): void {
    this.disposed = true;
    this.client?.end();
    this.client = undefined;
  }
}

/** ssh2, loaded on first use (it costs ~100 ms to require). A plain require keeps CJS named exports intact in the bundle. */
export { loadSsh2 };

/**
 * A node-side command that cannot outlive its operation: run under coreutils `timeout` a few
 * seconds past the client's own limit, which puts it in its own process group and ends the whole group (scripts,
 * their python3 and curl children) when the limit passes or when the client's TERM arrives. The login shell only
 * sees `sh -c '…' gs CMD` (any login shell, fish included); a node without a `timeout` that takes -k runs CMD as
 * before.
 * Processes a command detaches on purpose (setsid: launched servers, the resumed client, the guard) are not in
 * that group and stay.
 */
function boundedCommand(command: string, timeoutMs: number): string {
  const secs = Math.ceil(timeoutMs / 1000) + 5;
  // `timeout -k 1 5 true` first: an old BusyBox `timeout` without -k must not turn every command into a usage error
  const wrapper = `if timeout -k 1 5 true >/dev/null 2>&1; then exec timeout -k 5 ${secs} sh -c "$1"; else exec sh -c "$1"; fi`;
  return `sh -c ${shq(wrapper)} gs ${shq(command)}`;
}

/**
 * A `signal` channel request also after our side sent EOF (the stdin of every operation is ended at once, and
 * ssh2's `signal()` sends nothing once the channel is not writable). OpenSSH delivers it to the session's
 * command (`timeout` under boundedCommand, which relays it to its process group).
 */
function signalAfterEof(ch: ClientChannel, name: string): void {
  const c = ch as unknown as {
    outgoing?: { id?: number; state?: string };
    _client?: { _protocol?: { signal?(id: number, n: string): void } };
  };
  try {
    if (c.outgoing?.state === 'closed' || typeof c.outgoing?.id !== 'number') return;
    if (c._client?._protocol?.signal) c._client._protocol.signal(c.outgoing.id, name);
    else ch.signal(name);
  } catch {
    /* a server without signal requests: the node-side limit still ends it */
  }
}
