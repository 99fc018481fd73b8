/**
 * What `watch` and the extension's alerts judge of multi-node servers (fed to each node's NodeGuard as values):
 * a rank ≥ 1 that was seen running and is gone is a failure of the whole server, reported on the rank-0 server's
 * node and port ("rank 1 of 2 (on b) is gone"), even though rank 0's own process still runs and answers /health —
 * its schedulers wait on a collective that will never finish. A rank never seen (its node is not watched) is not
 * a failure: nothing is known of it.
 */
import { foldMultiNode } from './multinode';
import type { SglangServer } from '../sglang/serverArgv';

type ServerLike = Pick<SglangServer, 'port' | 'pid' | 'flags' | 'modelPath'> & { nnodes?: number; gpuCount?: number };

interface RankValue {
  value: 'ok' | 'rank-lost';
  message: string;
  class?: 'crash';
  extra: { subject: 'condition'; port?: number };
}

/** Remembers the ranks each multi-node server (by `--dist-init-addr`) had, so one that disappears reads `rank-lost`. */
export class RankWatch {
  /** dist-init-addr → rank → node it ran on */
  private readonly seen = new Map<string, Map<number, string>>();

  /**
   * Values per node hosting a rank-0 server: `ranks:<port>` → ok | rank-lost. `fleet` is every node probed now
   * (servers of the node's last probe). A rank last seen on a node in `unknown` (unreachable now) is not judged.
   */
  values(
    fleet: Array<{ node: string; servers: ServerLike[] }>,
    unknown: ReadonlySet<string> = new Set(),
  ): Map<string, Array<[string, RankValue]>> {
    const out = new Map<string, Array<[string, RankValue]>>();
    const groups = foldMultiNode(fleet.filter((n) => !unknown.has(n.node)));
    for (const g of groups) {
      const seen = this.seen.get(g.distInitAddr) ?? new Map<number, string>();
      this.seen.set(g.distInitAddr, seen);
      for (const r of g.ranks) seen.set(r.rank, r.node);
      if (!g.head) continue; // rank 0 itself gone: its own server row says it (crashed)
      const lost = [...seen].filter(([rank, node]) => rank > 0 && !unknown.has(node) && !g.ranks.some((r) => r.rank === rank));
      const port = g.head.port ?? undefined;
      const key = `ranks:${port ?? `pid${g.head.pid}`}`;
      const where = `:${port ?? '?'} (${g.nnodes} nodes, ${g.distInitAddr})`;
      const v: RankValue = lost.length
        ? {
            value: 'rank-lost',
            class: 'crash',
            message:
              `multi-node server ${where} lost ${lost.map(([rank, node]) => `rank ${rank} (on ${node})`).join(', ')}: ` +
              `the whole server is failing — rank 0 still runs, but its collectives cannot finish`,
            extra: { subject: 'condition', ...(port !== undefined ? { port } : {}) },
          }
        : {
            value: 'ok',
            message: `multi-node server ${where} has all ${g.nnodes} ranks again`,
            extra: { subject: 'condition', ...(port !== undefined ? { port } : {}) },
          };
      const list = out.get(g.head.node) ?? [];
      list.push([key, v]);
      out.set(g.head.node, list);
    }
    // a head that vanished this round: forget what its ranks were (a relaunch starts a new watch)
    const live = new Set(groups.map((g) => g.distInitAddr));
    for (const [addr, ranks] of [...this.seen])
      if (!live.has(addr) && ![...ranks.values()].some((n) => unknown.has(n))) this.seen.delete(addr);
    return out;
  }
}
