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
import { readFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Duplex, Readable } from 'node:stream';
import type { Client, ClientChannel, ConnectConfig, ParsedKey } from 'ssh2';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { HostKeyVerdict, KnownHostsStore, describeChangedKey, fingerprintSha256, keyTypeOfBlob } from './knownHosts';
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
export class Semaphore {
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
      child.on('error', (e) => reject(new GpuSessionsError('remote-failed', `Could not run /bin/sh: ${e.message}`)));
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

export interface HostKeyPrompt {
  host: string;
  port: number;
  keyType: string;
  fingerprint: string;
  /** Known keys of other types for this host, as "type SHA256:..." strings (usually empty). */
  otherKnown: string[];
}

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

const DEFAULT_KEYS = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

function classifyConnectError(node: NodeSpec, e: Error & { level?: string; code?: string }): GpuSessionsError {
  const where = `${node.user ? node.user + '@' : ''}${node.host}:${node.port}`;
  if (e instanceof GpuSessionsError) return e;
  if (e.level === 'client-authentication') {
    return new GpuSessionsError(
      'auth-failed',
      `Authentication to ${node.name} (${where}) failed: no key was accepted. Check IdentityFile in ~/.ssh/config or gpuSessions.nodes, that ssh-agent holds the key (SSH_AUTH_SOCK), and that the public key is in the node's authorized_keys.`,
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
  /** Host key verified for the current connection (re-keys must present the same one). */
  private pinnedKey: Buffer | undefined;
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
      hostKeyFingerprint: this.pinnedKey ? fingerprintSha256(this.pinnedKey) : undefined,
      hostKeyType: this.pinnedKey ? keyTypeOfBlob(this.pinnedKey) : undefined,
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

  private loadKey(file: string): Buffer | undefined {
    try {
      return readFileSync(file);
    } catch {
      return undefined;
    }
  }

  private identityFiles(): string[] {
    const home = this.opts.homeDir ?? os.homedir();
    const explicit = [...(this.opts.extraIdentityFiles ?? []), ...this.opts.node.identityFiles];
    const defaults = DEFAULT_KEYS.map((k) => path.join(home, '.ssh', k));
    const seen = new Set<string>();
    // IdentitiesOnly: the configured identities only (OpenSSH falls back to the defaults when none is set).
    const all = this.opts.node.identitiesOnly && explicit.length ? explicit : [...explicit, ...defaults];
    return all.filter((f) => (seen.has(f) ? false : (seen.add(f), true)));
  }

  /**
   * Under IdentitiesOnly, an agent that lists only the keys matching an identity file (its `.pub`, or the
   * public half of an unencrypted private key), so the node never sees the agent's other keys.
   */
  private restrictedAgent(socket: string, keyFiles: string[]): unknown {
    const { OpenSSHAgent, utils } = loadSsh2Client();
    const wanted = new Set<string>();
    for (const f of keyFiles) {
      for (const src of [f + '.pub', f]) {
        let text: Buffer | null = null;
        try {
          text = readFileSync(src);
        } catch {
          continue;
        }
        const k = utils.parseKey(text);
        const key = Array.isArray(k) ? k[0] : k;
        if (key instanceof Error) continue;
        wanted.add(key.getPublicSSH().toString('base64'));
        break;
      }
    }
    const blob = (k: unknown): string => {
      const e = k as { getPublicSSH?: () => Buffer; pubKey?: ParsedKey | Buffer };
      if (typeof e.getPublicSSH === 'function') return e.getPublicSSH().toString('base64');
      if (e.pubKey && typeof (e.pubKey as ParsedKey).getPublicSSH === 'function')
        return (e.pubKey as ParsedKey).getPublicSSH().toString('base64');
      return '';
    };
    class Restricted extends OpenSSHAgent {
      override getIdentities(cb: Parameters<InstanceType<typeof OpenSSHAgent>['getIdentities']>[0]): void {
        super.getIdentities((err, keys) =>
          cb(
            err as Error,
            keys?.filter((k) => wanted.has(blob(k))),
          ),
        );
      }
    }
    return new Restricted(socket);
  }

  private async doConnect(): Promise<Client> {
    const node = this.opts.node;
    this.setState('connecting');
    this.connectCount++;
    // Every new connection is verified against known_hosts again; the pin only guards re-keys within it.
    this.pinnedKey = undefined;
    // OpenSSH looks a HostKeyAlias up on its own, without [alias]:port.
    const hostForKeys = node.hostKeyAlias ?? node.host;
    const portForKeys = node.hostKeyAlias ? 22 : node.port;
    let hostKeyError: GpuSessionsError | undefined;
    let sock: Duplex | undefined;
    if (this.opts.jump) {
      try {
        sock = await this.opts.jump.connectTcp(node.host, node.port);
      } catch (e) {
        throw new GpuSessionsError(
          'unreachable',
          `${node.name}: the ProxyJump hop ${this.opts.jump.label} could not reach ${node.host}:${node.port}: ${errorMessage(e)}`,
        );
      }
    }
    let proxy: ProxyProcess | undefined;
    if (node.proxyCommand && !this.opts.jump) {
      // As OpenSSH: the command's stdio is the connection; the host key is verified as for a direct one.
      const cmd = expandProxyCommand(node.proxyCommand, {
        host: node.host,
        port: node.port,
        user: node.user ?? os.userInfo().username,
        alias: node.name,
      });
      proxy = spawnProxyCommand(cmd, { label: node.name, log: this.log });
      sock = proxy.sock;
      this.log.info(`${node.name}: connecting through ProxyCommand ${cmd} (pid ${proxy.pid ?? '?'})`);
    }
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
    // Open the TCP connection before loading ssh2 (~100 ms of require): the kernel's handshake and sshd's
    // per-connection start overlap with it (a new `probe` process pays less than load + connect in turn).
    if (!sock) {
      const early = net.connect({ host: node.host, port: node.port });
      early.once('error', () => undefined); // ssh2 attaches its own listener below, before the loop runs again
      sock = early;
    }
    const { Client: SshClient, utils } = loadSsh2Client();
    const client = new SshClient();
    const keyFiles = this.identityFiles();
    let keyIdx = 0;
    let agentTried = false;
    const agent = this.opts.agentSocket ?? process.env.SSH_AUTH_SOCK;
    const username = node.user ?? os.userInfo().username;

    const preferred = this.opts.knownHosts.preferredKeyTypes(hostForKeys, portForKeys);
    const allHostKeyAlgs = [
      'ssh-ed25519',
      'ecdsa-sha2-nistp256',
      'ecdsa-sha2-nistp384',
      'ecdsa-sha2-nistp521',
      'rsa-sha2-512',
      'rsa-sha2-256',
      'ssh-rsa',
    ];
    const pref = preferred.flatMap((t) => (t === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [t]));
    const serverHostKey = [...new Set([...pref.filter((t) => allHostKeyAlgs.includes(t)), ...allHostKeyAlgs])];

    const cfg: ConnectConfig = {
      host: node.host,
      port: node.port,
      sock: sock as ConnectConfig['sock'],
      username,
      readyTimeout: this.opts.connectTimeoutMs ?? 15_000,
      debug: process.env.GS_SSH_DEBUG ? (m: string) => this.log.warn(m) : undefined,
      keepaliveInterval: this.opts.keepaliveIntervalMs ?? 15_000,
      keepaliveCountMax: this.opts.keepaliveCountMax ?? 3,
      algorithms: { serverHostKey: serverHostKey as never },
      hostVerifier: ((key: Buffer, verify: (ok: boolean) => void) => {
        // Re-keys call this again: pin the first verified key.
        if (this.pinnedKey) {
          const same = this.pinnedKey.equals(key);
          if (!same)
            hostKeyError = new GpuSessionsError(
              'host-key-changed',
              `${node.name}: the host key changed during the session; connection closed.`,
            );
          verify(same);
          return;
        }
        // Like OpenSSH: a host known under another key type that now presents a new type counts as changed
        // (the algorithm list above asks for the known types first, so an honest server matches).
        let verdict: HostKeyVerdict;
        try {
          verdict = this.opts.knownHosts.check(hostForKeys, portForKeys, key, { otherTypeIsChanged: true });
        } catch (e) {
          hostKeyError = new GpuSessionsError(
            'host-key-changed',
            `${node.name}: the server sent a malformed host key (${errorMessage(e)}). Refusing to connect.`,
          );
          verify(false);
          return;
        }
        const fp = fingerprintSha256(key);
        const kt = keyTypeOfBlob(key);
        switch (verdict.status) {
          case 'known':
            this.pinnedKey = key;
            verify(true);
            return;
          case 'revoked':
            hostKeyError = new GpuSessionsError(
              'host-key-revoked',
              `${node.name}: the host key ${kt} ${fp} is marked @revoked in ${verdict.entry.file}:${verdict.entry.line}. Refusing to connect.`,
              { fingerprint: fp },
            );
            verify(false);
            return;
          case 'changed':
            hostKeyError = new GpuSessionsError('host-key-changed', describeChangedKey(hostForKeys, portForKeys, verdict), {
              expected: verdict.expectedFingerprint,
              presented: verdict.presentedFingerprint,
              file: verdict.expected.file,
              line: verdict.expected.line,
            });
            verify(false);
            return;
          case 'unknown': {
            const prompt: HostKeyPrompt = {
              host: hostForKeys,
              port: portForKeys,
              keyType: kt,
              fingerprint: fp,
              otherKnown: verdict.otherKeys.map(
                (k) => `${k.keyType} ${fingerprintSha256(Buffer.from(k.keyBase64, 'base64'))} (${k.file}:${k.line})`,
              ),
            };
            const ask = this.opts.confirmHostKey ?? (async () => false);
            ask(prompt).then(
              (ok) => {
                if (!ok) {
                  hostKeyError = new GpuSessionsError(
                    'host-key-unknown',
                    `${node.name}: the host key of ${prompt.port === 22 ? prompt.host : `[${prompt.host}]:${prompt.port}`} is not in known_hosts (${kt} ${fp}). Verify the fingerprint with the node's provider, then accept it (CLI: --accept-new).`,
                    { fingerprint: fp },
                  );
                  verify(false);
                  return;
                }
                try {
                  const line = this.opts.knownHosts.append(hostForKeys, portForKeys, key);
                  this.log.info(`Added host key to known_hosts: ${line}`);
                } catch (e) {
                  this.log.warn(`Could not write known_hosts: ${errorMessage(e)}`);
                }
                this.pinnedKey = key;
                verify(true);
              },
              () => verify(false),
            );
            return;
          }
        }
      }) as unknown as ConnectConfig['hostVerifier'],
      authHandler: ((_methodsLeft: string[] | null, _partial: boolean | null, next: (a: unknown) => void) => {
        void (async () => {
          if (!agentTried && agent) {
            agentTried = true;
            return next({ type: 'agent', username, agent: node.identitiesOnly ? this.restrictedAgent(agent, keyFiles) : agent });
          }
          while (keyIdx < keyFiles.length) {
            const file = keyFiles[keyIdx++];
            const data = this.loadKey(file);
            if (!data) continue;
            let parsed = utils.parseKey(data);
            if (parsed instanceof Error && /passphrase/i.test(parsed.message)) {
              const pass = this.opts.askPassphrase ? await this.opts.askPassphrase(file) : undefined;
              if (pass === undefined) {
                this.log.warn(`Skipping encrypted key ${file}: no passphrase given.`);
                continue;
              }
              parsed = utils.parseKey(data, pass);
              if (parsed instanceof Error) {
                this.log.warn(`Key ${file}: ${parsed.message}`);
                continue;
              }
              this.opts.passphraseAccepted?.(file, pass);
              const k = Array.isArray(parsed) ? parsed[0] : parsed;
              return next({ type: 'publickey', username, key: k });
            }
            if (parsed instanceof Error) {
              this.log.warn(`Key ${file} could not be read: ${parsed.message}`);
              continue;
            }
            const k = Array.isArray(parsed) ? parsed[0] : parsed;
            return next({ type: 'publickey', username, key: k });
          }
          next(false);
        })().catch((e) => {
          this.log.error(`Authentication setup failed: ${errorMessage(e)}`);
          next(false);
        });
      }) as unknown as ConnectConfig['authHandler'],
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
          const e = hostKeyError ?? withProxy(err);
          this.log.error(`Connection to ${node.name} failed: ${e.message}`);
          reject(e);
        };
        if (proxy && !hostKeyError) void Promise.race([proxy.exited, new Promise((r) => setTimeout(r, 500))]).then(done);
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
    const { ch, exit } = await this.openExec(command);
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
export function loadSsh2(): typeof import('ssh2') {
  return require('ssh2') as typeof import('ssh2');
}

type Ssh2ClientParts = Pick<typeof import('ssh2'), 'Client' | 'OpenSSHAgent'> & {
  utils: Pick<(typeof import('ssh2'))['utils'], 'parseKey'>;
};

/**
 * What a client connection needs of ssh2 (Client, OpenSSHAgent, parseKey), from ssh2's own modules: its index
 * also loads the server, key generation, SFTP flags and the HTTP agents (node:http, node:https), about a fifth
 * of its load time, which a new `probe` process pays before it can connect. The whole package if the layout
 * ever differs.
 */
export function loadSsh2Client(): Ssh2ClientParts {
  if (ssh2Client) return ssh2Client;
  try {
    ssh2Client = {
      Client: require('ssh2/lib/client.js') as (typeof import('ssh2'))['Client'],
      OpenSSHAgent: (require('ssh2/lib/agent.js') as typeof import('ssh2')).OpenSSHAgent,
      utils: { parseKey: (require('ssh2/lib/protocol/keyParser.js') as (typeof import('ssh2'))['utils']).parseKey },
    };
    if (
      typeof ssh2Client.Client !== 'function' ||
      typeof ssh2Client.OpenSSHAgent !== 'function' ||
      typeof ssh2Client.utils.parseKey !== 'function'
    )
      throw new Error('unexpected ssh2 layout');
  } catch {
    ssh2Client = loadSsh2();
  }
  return ssh2Client;
}
let ssh2Client: Ssh2ClientParts | undefined;
