/**
 * Worker ↔ server: which server of the fleet a gateway's worker URL reaches. A loopback URL reaches the gateway's
 * own node; another host reaches the node whose SSH HostName (or reported hostname) it names. A worker is mapped to
 * a node's server only when that node's probe lists a server on the URL's port (rank 0 of a multi-node server: the
 * ranks ≥ 1 serve no API), or, for a node not probed, when exactly one node has that address.
 */
import { isLoopback } from '../util/net';

interface WorkerAddress {
  host: string;
  port: number;
}

/** `http://h:p[/…]`, `grpc://h:p`, DP-aware `http://h:p@3` → host and port; null when it is not a URL. */
export function workerAddress(url: string): WorkerAddress | null {
  const m = /^([a-z][a-z0-9+.-]*):\/\/(\[[^\]]+\]|[^/:@?#]+)(?::(\d{1,5}))?/i.exec(url.trim());
  if (!m) return null;
  const scheme = m[1].toLowerCase();
  let host = m[2].toLowerCase();
  if (host.startsWith('[')) host = host.slice(1, -1);
  const port = m[3] ? Number(m[3]) : scheme === 'https' || scheme === 'grpcs' ? 443 : 80;
  if (!(port > 0 && port < 65536)) return null;
  return { host, port };
}

interface Mappable {
  url: string;
  node: string | null;
  serverPort: number | null;
}

/**
 * A worker URL's host names this machine: the same name, or a short name against its full one (`gpu-01` and
 * `gpu-01.cluster.local`). Two different full names never match by their first label (
 * `gpu-01.evil.example` is not `gpu-01.cluster.local`).
 */
export function sameHost(urlHost: string, hostname: string): boolean {
  if (urlHost === hostname) return true;
  const short = (h: string) => h.split('.')[0];
  if (!urlHost.includes('.') || !hostname.includes('.')) return short(urlHost) === short(hostname);
  return false;
}

/** Map workers to this node's own servers (the probe of the gateway's node: 127.0.0.1 included). */
export function mapLocalWorkers(
  workers: Mappable[],
  local: { node: string; hostname: string | null; servers: Array<{ port: number | null }> },
): void {
  const hn = (local.hostname ?? '').toLowerCase();
  for (const w of workers) {
    const a = workerAddress(w.url);
    if (!a) continue;
    if (!(isLoopback(a.host) || (hn && sameHost(a.host, hn)))) continue;
    if (local.servers.some((s) => s.port === a.port)) {
      w.node = local.node;
      w.serverPort = a.port;
    }
  }
}

export interface FleetNode {
  node: string;
  /** The SSH HostName (how the fleet reaches it). */
  host: string;
  hostname?: string | null;
  /** Its probed servers; undefined when it was not probed. */
  servers?: Array<{ port: number | null }>;
}

/**
 * Map the workers still unmapped to the fleet's servers. `gatewayNode` hosts the gateway: loopback URLs reach it
 * first; on a simulated fleet where every node's HostName is itself loopback, they may reach those nodes too.
 */
export function mapFleetWorkers(gatewayNode: string, workers: Mappable[], fleet: FleetNode[]): void {
  for (const w of workers) {
    if (w.node) continue;
    const a = workerAddress(w.url);
    if (!a) continue;
    const self = fleet.find((n) => n.node === gatewayNode);
    let cands: FleetNode[];
    if (isLoopback(a.host)) cands = [...(self ? [self] : []), ...fleet.filter((n) => n.node !== gatewayNode && isLoopback(n.host))];
    else cands = fleet.filter((n) => n.host.toLowerCase() === a.host || (!!n.hostname && sameHost(a.host, n.hostname.toLowerCase())));
    const probed = cands.find((n) => n.servers?.some((s) => s.port === a.port));
    if (probed) {
      w.node = probed.node;
      w.serverPort = a.port;
    } else if (!isLoopback(a.host) && cands.length === 1 && cands[0].servers === undefined) {
      w.node = cands[0].node;
      w.serverPort = a.port;
    }
  }
}
