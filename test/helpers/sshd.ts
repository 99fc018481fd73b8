/**
 * A real OpenSSH sshd on 127.0.0.1 with throwaway keys, for integration tests and benchmarks.
 * Installs openssh-server when it is missing (root only), creates an unprivileged test user whose
 * home is the simulated GPU node, and stops every process it started.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

export const SSHD = '/usr/sbin/sshd';

export function ensureOpenSsh(): void {
  if (existsSync(SSHD) && existsSync('/usr/bin/ssh-keygen') && existsSync('/usr/bin/ssh')) return;
  if (process.getuid?.() !== 0)
    throw new Error('openssh-server is not installed and we are not root: run `apt-get install -y openssh-server openssh-client`.');
  execFileSync('apt-get', ['install', '-y', '-qq', 'openssh-server', 'openssh-client'], {
    stdio: 'inherit',
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** Create (once) an unprivileged user for the simulated node; returns its home. */
export function ensureUser(name: string): { home: string; uid: number; gid: number } {
  const exists = spawnSync('id', ['-u', name]).status === 0;
  if (!exists) {
    execFileSync('useradd', ['-m', '-s', '/bin/bash', name]);
  }
  // A user created without a password is locked; with UsePAM no, key login needs a non-'!' hash.
  execFileSync('usermod', ['-p', '*', name]);
  const home = execFileSync('getent', ['passwd', name]).toString().split(':')[5];
  const uid = Number(execFileSync('id', ['-u', name]).toString());
  const gid = Number(execFileSync('id', ['-g', name]).toString());
  return { home, uid, gid };
}

export function keygen(file: string, type = 'ed25519'): { priv: string; pub: string } {
  rmSync(file, { force: true });
  rmSync(file + '.pub', { force: true });
  execFileSync('ssh-keygen', ['-q', '-t', type, '-N', '', '-C', 'gpu-sessions-test', '-f', file]);
  return { priv: file, pub: readFileSync(file + '.pub', 'utf8').trim() };
}

export interface TestSshdOptions {
  user: string;
  /** Extra lines for sshd_config. */
  extraConfig?: string[];
  port?: number;
}

export class TestSshd {
  readonly dir: string;
  port = 0;
  readonly hostKey: string;
  readonly clientKey: string;
  readonly knownHostsFile: string;
  readonly sshConfigFile: string;
  readonly authorizedKeys: string;
  private cfgFile: string;
  private pidFile: string;
  readonly logFile: string;

  private constructor(
    readonly opts: TestSshdOptions,
    readonly alias: string,
  ) {
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'gs-sshd-'));
    chmodSync(this.dir, 0o755);
    this.hostKey = path.join(this.dir, 'hostkey');
    this.clientKey = path.join(this.dir, 'id_ed25519');
    this.knownHostsFile = path.join(this.dir, 'known_hosts');
    this.sshConfigFile = path.join(this.dir, 'ssh_config');
    this.authorizedKeys = path.join(this.dir, 'authorized_keys');
    this.cfgFile = path.join(this.dir, 'sshd_config');
    this.pidFile = path.join(this.dir, 'sshd.pid');
    this.logFile = path.join(this.dir, 'sshd.log');
  }

  static async start(opts: TestSshdOptions, alias = 'simnode'): Promise<TestSshd> {
    ensureOpenSsh();
    mkdirSync('/run/sshd', { recursive: true, mode: 0o755 });
    const s = new TestSshd(opts, alias);
    keygen(s.hostKey);
    const ck = keygen(s.clientKey);
    writeFileSync(s.authorizedKeys, ck.pub + '\n', { mode: 0o644 });
    s.port = opts.port ?? (await freePort());
    s.writeConfig();
    s.writeKnownHosts();
    s.writeSshConfig();
    await s.launch();
    return s;
  }

  private writeConfig(): void {
    writeFileSync(
      this.cfgFile,
      [
        `Port ${this.port}`,
        `ListenAddress 127.0.0.1`,
        `HostKey ${this.hostKey}`,
        `AuthorizedKeysFile ${this.authorizedKeys}`,
        `PidFile ${this.pidFile}`,
        `StrictModes no`,
        `UsePAM no`,
        `PasswordAuthentication no`,
        `KbdInteractiveAuthentication no`,
        `PermitRootLogin no`,
        `AllowUsers ${this.opts.user}`,
        `Subsystem sftp internal-sftp`,
        `PermitUserEnvironment yes`,
        `AllowTcpForwarding yes`,
        `LogLevel VERBOSE`,
        // Fleet tests open 20+ connections at once to this one server (real fleets are 20 servers).
        `MaxStartups 200:30:400`,
        ...(this.opts.extraConfig ?? []),
        '',
      ].join('\n'),
    );
  }

  hostKeyLine(): string {
    const pub = readFileSync(this.hostKey + '.pub', 'utf8')
      .trim()
      .split(/\s+/);
    return `[127.0.0.1]:${this.port} ${pub[0]} ${pub[1]}`;
  }

  writeKnownHosts(): void {
    writeFileSync(this.knownHostsFile, this.hostKeyLine() + '\n', { mode: 0o600 });
  }

  writeSshConfig(extra: string[] = []): void {
    writeFileSync(
      this.sshConfigFile,
      [
        `Host ${this.alias}`,
        `  HostName 127.0.0.1`,
        `  Port ${this.port}`,
        `  User ${this.opts.user}`,
        `  IdentityFile ${this.clientKey}`,
        `  UserKnownHostsFile ${this.knownHostsFile}`,
        ...extra,
        '',
      ].join('\n'),
    );
  }

  private async launch(): Promise<void> {
    rmSync(this.pidFile, { force: true });
    const r = spawnSync(SSHD, ['-f', this.cfgFile, '-E', this.logFile], { encoding: 'utf8' });
    if (r.status !== 0)
      throw new Error(
        `sshd failed to start (${r.status}): ${r.stderr}\n${existsSync(this.logFile) ? readFileSync(this.logFile, 'utf8') : ''}`,
      );
    // Wait until it accepts connections.
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      const ok = await new Promise<boolean>((resolve) => {
        const c = net.connect(this.port, '127.0.0.1', () => (c.destroy(), resolve(true)));
        c.once('error', () => resolve(false));
      });
      if (ok && existsSync(this.pidFile)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error(`sshd did not listen on 127.0.0.1:${this.port}: ${readFileSync(this.logFile, 'utf8')}`);
  }

  pid(): number | null {
    try {
      return Number(readFileSync(this.pidFile, 'utf8').trim());
    } catch {
      return null;
    }
  }

  /** Stop the listener and every session it forked (a node going down). */
  async stop(): Promise<void> {
    const pid = this.pid();
    if (pid) {
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        /* gone */
      }
    }
    // Session processes of sshd for our port: kill children whose cmdline names our config.
    spawnSync('pkill', ['-f', `sshd.*${this.cfgFile}`]);
    spawnSync('pkill', ['-u', this.opts.user, '-f', 'sshd:']);
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const up = await new Promise<boolean>((resolve) => {
        const c = net.connect(this.port, '127.0.0.1', () => (c.destroy(), resolve(true)));
        c.once('error', () => resolve(false));
      });
      if (!up) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Kill the sessions of the test user (drops every connection) but keep the listener. */
  dropConnections(): void {
    spawnSync('pkill', ['-KILL', '-u', this.opts.user, '-f', 'sshd:']);
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }

  /** The node was re-imaged: a new host key, same address. */
  async rotateHostKey(): Promise<void> {
    keygen(this.hostKey);
    await this.restart();
  }

  async dispose(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Run a command with the OpenSSH client (for cross-checks and to start things on the node). */
  ssh(command: string, opts: { timeoutMs?: number } = {}): { status: number | null; stdout: string; stderr: string } {
    const r = spawnSync('ssh', ['-F', this.sshConfigFile, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes', this.alias, command], {
      encoding: 'utf8',
      timeout: opts.timeoutMs ?? 30_000,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }
}
