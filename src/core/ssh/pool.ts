/**
 * The connection pool: one transport per node, shared by every feature (tree refresh, tails,
 * salvage, port forwards). ProxyJump chains are built from pooled transports of the hops.
 */
import { GpuSessionsError } from '../util/errors';
import { KnownHostsStore } from './knownHosts';
import { Logger, nullLogger } from '../util/logger';
import type { NodeSpec } from './config';
import { parseNodeAddress } from './config';
import { LocalTransport, SshTransport, SshTransportOptions, Transport } from './transport';

interface PoolOptions extends Omit<SshTransportOptions, 'node' | 'jump' | 'knownHosts'> {
  knownHosts: KnownHostsStore;
  /** Resolves a ProxyJump hop (an alias from ssh config, or [user@]host[:port]). */
  resolveHop?: (spec: string) => NodeSpec | undefined;
  log?: Logger;
}

export const LOCAL_NODE_NAME = 'This machine';

export class ConnectionPool {
  private readonly transports = new Map<string, Transport>();
  private readonly log: Logger;
  constructor(private readonly opts: PoolOptions) {
    this.log = opts.log ?? nullLogger;
  }

  private key(node: NodeSpec): string {
    return `${node.name}\u0000${node.user ?? ''}@${node.host}:${node.port}\u0000${node.proxyJump ?? ''}\u0000${node.proxyCommand ?? ''}`;
  }

  get(node: NodeSpec): Transport {
    const k = this.key(node);
    let t = this.transports.get(k);
    if (t) return t;
    if (node.source === 'local') {
      t = new LocalTransport();
    } else {
      const jump = node.proxyJump ? this.jumpTransport(node.proxyJump, 0) : undefined;
      t = new SshTransport({ ...this.opts, node, jump, log: this.log });
    }
    this.transports.set(k, t);
    return t;
  }

  /** ProxyJump "a,b,c": the target is reached through c, which is reached through b, through a. */
  private jumpTransport(spec: string, depth: number): Transport {
    if (depth > 8) throw new GpuSessionsError('config', `ProxyJump chain "${spec}" is too long or loops.`);
    const hops = spec
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const last = hops[hops.length - 1];
    let hop = this.opts.resolveHop?.(last);
    if (!hop) {
      const addr = parseNodeAddress(last);
      if (!addr) throw new GpuSessionsError('config', `ProxyJump hop "${last}" is neither a Host alias nor [user@]host[:port].`);
      hop = { name: last, host: addr.host, port: addr.port, user: addr.user, identityFiles: [], source: 'cli' };
    }
    const before = hops.slice(0, -1).join(',');
    const hopNode: NodeSpec = { ...hop, proxyJump: before || (hop.proxyJump && hop.proxyJump !== spec ? hop.proxyJump : undefined) };
    const k = this.key(hopNode);
    let t = this.transports.get(k);
    if (!t) {
      const jump = hopNode.proxyJump ? this.jumpTransport(hopNode.proxyJump, depth + 1) : undefined;
      t = new SshTransport({ ...this.opts, node: hopNode, jump, log: this.log });
      this.transports.set(k, t);
    }
    return t;
  }

  all(): Transport[] {
    return [...this.transports.values()];
  }

  /** Drop and dispose the transport of a node (settings changed, node removed). */
  forget(node: NodeSpec): void {
    const k = this.key(node);
    this.transports.get(k)?.dispose();
    this.transports.delete(k);
  }

  dispose(): void {
    for (const t of this.transports.values()) t.dispose();
    this.transports.clear();
  }
}
