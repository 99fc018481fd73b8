/**
 * Multi-node SGLang servers (`--nnodes N --node-rank R --dist-init-addr HOST:PORT`): one server across nodes.
 * Rank 0 is the server (its HTTP API, its tokenizer); ranks ≥ 1 run schedulers only and serve at most a dummy
 * `/health` (reference B2), so they are folded into the rank-0 server: never a separate server with an API, their
 * GPUs counted there, a missing rank a failure of the whole server.
 */
import type { SglangServer } from '../sglang/serverArgv';

type ServerLike = Pick<SglangServer, 'port' | 'pid' | 'flags' | 'modelPath'> & { nnodes?: number; gpuCount?: number };

export function nodeRank(s: Pick<SglangServer, 'flags'>): number {
  const v = s.flags['node-rank'];
  const n = typeof v === 'string' ? Number.parseInt(v, 10) : 0;
  return Number.isFinite(n) && n > 0 ? n : 0;
}

export function distInitAddr(s: Pick<SglangServer, 'flags'>): string | null {
  const v = s.flags['dist-init-addr'] ?? s.flags['nccl-init-addr'];
  return typeof v === 'string' && v ? v : null;
}

/** A rank ≥ 1 of a multi-node server: no HTTP API of its own (not a server to drain, query or route to). */
export function isSecondaryRank(s: ServerLike): boolean {
  return (s.nnodes ?? 1) > 1 && nodeRank(s) > 0;
}

interface MultiNodeServer {
  /** `--dist-init-addr`, the same on every node of the server. */
  distInitAddr: string;
  nnodes: number;
  /** The rank-0 server (null: not found on the nodes given). */
  head: { node: string; port: number | null; pid: number } | null;
  ranks: Array<{ node: string; rank: number; pid: number; gpuCount: number }>;
  /** GPUs of every rank found. */
  gpuCount: number;
  /** Ranks 0..nnodes-1 not found running: the whole server is failing. */
  missingRanks: number[];
}

/** Group the fleet's multi-node servers by their rendezvous address (`--dist-init-addr`). */
export function foldMultiNode(fleet: Array<{ node: string; servers: ServerLike[] }>): MultiNodeServer[] {
  const groups = new Map<string, MultiNodeServer>();
  for (const n of fleet)
    for (const s of n.servers) {
      const nn = s.nnodes ?? 1;
      const addr = distInitAddr(s);
      if (nn <= 1 || !addr) continue;
      // one rendezvous address is one server while it runs (rank 0's host:port); the model path may differ by node
      const key = addr;
      const g = groups.get(key) ?? { distInitAddr: addr, nnodes: nn, head: null, ranks: [], gpuCount: 0, missingRanks: [] };
      groups.set(key, g);
      const rank = nodeRank(s);
      if (rank === 0) g.head = { node: n.node, port: s.port, pid: s.pid };
      g.ranks.push({ node: n.node, rank, pid: s.pid, gpuCount: s.gpuCount ?? 1 });
    }
  for (const g of groups.values()) {
    g.ranks.sort((a, b) => a.rank - b.rank);
    g.gpuCount = g.ranks.reduce((a, r) => a + r.gpuCount, 0);
    for (let r = 0; r < g.nnodes; r++) if (!g.ranks.some((x) => x.rank === r)) g.missingRanks.push(r);
  }
  return [...groups.values()];
}

/**
 * How a rank of a multi-node server reads in a row: "rank 1 of 2 nodes · API on rank 0 (10.0.0.2)"; the rank-0
 * server: "rank 0 of 2 nodes"; null for a one-node server. One wording for the tree and the CLI.
 */
export function rankPhrase(s: ServerLike): string | null {
  const nn = s.nnodes ?? 1;
  if (nn <= 1) return null;
  const r = nodeRank(s);
  if (r === 0) return `rank 0 of ${nn} nodes`;
  const addr = distInitAddr(s);
  return `rank ${r} of ${nn} nodes · API on rank 0${addr ? ` (${addr.replace(/:\d+$/, '')})` : ''}`;
}

/** Why a rank ≥ 1 shows no throughput and its /health proves little (reference B2), for tooltips and `--verbose`. */
export const SECONDARY_RANK_NOTE =
  'A rank ≥ 1 of a multi-node server runs schedulers only: requests, throughput and /metrics are on rank 0. ' +
  'Its /health is a dummy that answers 200 once its schedulers are up; it says nothing about the model.';

/**
 * The rank-0 server's row across the fleet: "16 GPUs on a, b" when every rank is seen, else what is missing
 * ("rank 1 of 2 not seen on the fleet's nodes"). Null for a one-node server or a rank ≥ 1.
 */
export function headSummary(
  fleet: Array<{ node: string; servers: ServerLike[] }>,
  node: string,
  s: ServerLike,
): { text: string; missing: number[] } | null {
  if ((s.nnodes ?? 1) <= 1 || nodeRank(s) !== 0) return null;
  const g = foldMultiNode(fleet).find((x) => x.head?.node === node && x.head.pid === s.pid);
  if (!g) return null;
  if (g.missingRanks.length)
    return {
      text: `rank ${g.missingRanks.join(', ')} of ${g.nnodes} not seen on the fleet's nodes`,
      missing: g.missingRanks,
    };
  return { text: `${g.gpuCount} GPUs on ${[...new Set(g.ranks.map((r) => r.node))].join(', ')}`, missing: [] };
}
