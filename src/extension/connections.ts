/**
 * SSH connections for the extension: one ConnectionPool per known_hosts file list, the modal host-key
 * prompt, and key passphrases kept in SecretStorage. `routing` is the pool the fleet sees: it sends each
 * node to the pool of its known_hosts files.
 */
import * as vscode from 'vscode';
import { KnownHostsStore } from '../core/ssh/knownHosts';
import { defaultKnownHostsFiles } from '../core/ssh/knownHostsFiles';
import { ConnectionPool } from '../core/ssh/pool';
import type { NodeSpec } from '../core/ssh/config';
import type { HostKeyPrompt, Transport } from '../core/ssh/transport';
import type { Logger } from '../core/util/logger';
import { cfg, pathSetting } from './config';
import type { DemoNode } from './demo';
import { currentUserAction } from './userAction';

const secretKey = (file: string) => `gpuSessions.passphrase:${file}`;

interface ConnectionsDeps {
  secrets: vscode.SecretStorage;
  log: Logger;
  demo: DemoNode;
  /** Resolves a ProxyJump hop against the current node listing. */
  resolveHop(spec: string): NodeSpec | undefined;
}

export class Connections implements vscode.Disposable {
  private readonly pools = new Map<string, ConnectionPool>();
  /** The pool the fleet uses: each node goes to the pool of its known_hosts files. */
  readonly routing: ConnectionPool;

  constructor(private readonly deps: ConnectionsDeps) {
    this.routing = {
      get: (node: NodeSpec) => this.poolFor(node).get(node),
      forget: (node: NodeSpec) => this.poolFor(node).forget(node),
    } as unknown as ConnectionPool;
  }

  transport(node: NodeSpec): Transport {
    return this.routing.get(node);
  }

  /**
   * A transport on a new connection, outside the pools (end-rental asks "does SSH still let a session in?"): never
   * accepts an unknown host key and never prompts; a stored passphrase is used. The caller disposes it.
   */
  fresh(node: NodeSpec): Transport {
    const { secrets, log } = this.deps;
    return new ConnectionPool({
      knownHosts: new KnownHostsStore(this.knownHostsFor(node)),
      resolveHop: (spec) => this.deps.resolveHop(spec),
      connectTimeoutMs: cfg<number>('connectTimeoutSeconds', 15) * 1000,
      log,
      confirmHostKey: () => Promise.resolve(false),
      askPassphrase: async (file) => (await secrets.get(secretKey(file))) ?? undefined,
    }).get(node);
  }

  /** Drops the node's connection; `knownHostsFile`: the pool of that file (the demo's, once it is no longer the demo). */
  forget(node: NodeSpec, knownHostsFile?: string): void {
    if (knownHostsFile) this.pools.get(knownHostsFile)?.forget(node);
    else this.poolFor(node).forget(node);
  }

  knownHostsFor(node?: NodeSpec): string[] {
    const custom = pathSetting('knownHostsFile', (m) => this.deps.log.warn(m));
    if (custom) return [custom];
    if (this.deps.demo.is(node)) return [this.deps.demo.current!.knownHostsFile];
    return defaultKnownHostsFiles(node);
  }

  /** Settings changed: drop every connection (they are re-made with the new settings on demand). */
  reset(): void {
    this.pools.forEach((p) => p.dispose());
    this.pools.clear();
  }

  async forgetPassphrases(identityFiles: string[]): Promise<void> {
    for (const f of identityFiles) await this.deps.secrets.delete(secretKey(f));
  }

  private poolFor(node: NodeSpec): ConnectionPool {
    const files = this.knownHostsFor(node);
    const k = files.join('\n');
    let p = this.pools.get(k);
    if (!p) {
      const { secrets, log } = this.deps;
      p = new ConnectionPool({
        knownHosts: new KnownHostsStore(files),
        resolveHop: (spec) => this.deps.resolveHop(spec),
        connectTimeoutMs: cfg<number>('connectTimeoutSeconds', 15) * 1000,
        log,
        // Only a user's action may ask (a modal); a background reconnect fails with host-key-unknown, and the
        // node's row says so with "Review Host Key" (gpuSessions.refreshNode).
        confirmHostKey: (pr) => (currentUserAction() ? confirmHostKey(pr, files[0]) : Promise.resolve(false)),
        askPassphrase: async (file) => {
          const stored = await secrets.get(secretKey(file));
          if (stored) return stored;
          return vscode.window.showInputBox({
            title: 'GPU Sessions',
            prompt: `Passphrase for ${file}`,
            password: true,
            ignoreFocusOut: true,
          });
        },
        passphraseAccepted: (file, pass) => void secrets.store(secretKey(file), pass),
      });
      this.pools.set(k, p);
    }
    return p;
  }

  dispose(): void {
    this.reset();
  }
}

/** Never accept a host key silently: a modal with the fingerprint, accepted keys go to `file`. */
async function confirmHostKey(pr: HostKeyPrompt, file: string): Promise<boolean> {
  const where = pr.port === 22 ? pr.host : `[${pr.host}]:${pr.port}`;
  const accept = 'Accept and Connect';
  const others = pr.otherKnown.length ? `\n\nOther keys known for this host:\n${pr.otherKnown.join('\n')}` : '';
  const detail =
    `The authenticity of host ${where} can't be established.\n\n${pr.keyType} key fingerprint:\n${pr.fingerprint}\n\n` +
    `Compare it with the fingerprint your provider shows. Accepting adds it to ${file}.${others}`;
  const choice = await vscode.window.showWarningMessage(`GPU Sessions: unknown host key for ${where}`, { modal: true, detail }, accept);
  return choice === accept;
}
