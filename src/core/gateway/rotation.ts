/**
 * Which gateways of the fleet route to a node (or to one of its servers): the answer Release Node, `release` and
 * Stop/Restart Server ("take it out of rotation first") share. Pure: it reads probes (a node's own gateways, its
 * hostname and servers) and maps each gateway's workers over the whole fleet (mapping.ts) on copies, so the probes
 * the tree renders are not changed.
 */
import type { GatewayWorker } from './api';
import type { Gateway } from './discover';
import { visible } from '../util/terminal';
import { FleetNode, mapFleetWorkers } from './mapping';

export interface RotationNode extends FleetNode {
  /** The gateways its probe found; undefined or [] when none (or not probed). */
  gateways?: Gateway[];
}

export interface Routing {
  /** Node hosting the gateway. */
  node: string;
  gateway: Gateway;
  /** Its workers that reach the server(s) asked about (copies, `node`/`serverPort` filled in). */
  workers: GatewayWorker[];
}

/**
 * Every gateway on a fleet node whose workers reach `node` — all its servers, or only the one on `port` — in fleet
 * order, each with those workers. A worker URL no probed server answers is not counted (mapping.ts).
 */
export function routingTo(fleet: RotationNode[], node: string, port?: number | null): Routing[] {
  const out: Routing[] = [];
  for (const n of fleet) {
    for (const g of n.gateways ?? []) {
      const ws = g.workers.map((w) => ({ ...w }));
      mapFleetWorkers(n.node, ws, fleet);
      const hit = ws.filter((w) => w.node === node && (port === undefined || port === null || w.serverPort === port));
      if (hit.length) out.push({ node: n.node, gateway: g, workers: hit });
    }
  }
  return out;
}

/** "removing http://…:30001 from the gateway :30000 on gw" lines, one per gateway, for a review. */
export function routingLines(rs: Routing[]): string[] {
  return rs.map(
    (r) =>
      `Gateway :${r.gateway.port ?? '?'} on ${r.node} (${r.gateway.profile ?? 'API unknown'}): ` +
      `remove ${r.workers.map((w) => visible(w.url)).join(', ')}`,
  );
}

/**
 * Gateways that would be left with no healthy worker once `rs`' workers are removed: "Gateway :30000 on gw: this
 * is its last healthy worker; it answers 503 until another is added" lines, for the question before a removal.
 */
export function lastWorkerLines(rs: Routing[]): string[] {
  return rs
    .filter((r) => {
      const gone = new Set(r.workers.map((w) => w.url));
      const healthyLeft = r.gateway.workers.filter((w) => !gone.has(w.url) && w.healthy !== false);
      return healthyLeft.length === 0;
    })
    .map((r) => `Gateway :${r.gateway.port ?? '?'} on ${r.node}: this is its last healthy worker; it answers 503 until another is added.`);
}
