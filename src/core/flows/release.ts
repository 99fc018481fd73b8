/**
 * Releasing a node behind a gateway without dropping a request (the flow both faces drive: `gpu-sessions release`,
 * VS Code "Release Node…", MCP `release_node`):
 *   1. probe NODE and the `--via` nodes (one exec each), find every gateway that routes to NODE's servers;
 *   2. remove those workers through each gateway's API (the call its version expects) and wait until the gateway
 *      no longer lists them (the 202 jobs applied; smg 1.5+ has drained them);
 *   3. wait until each of NODE's servers has 0 running requests (or the drain timeout);
 *   4. run the salvage with the servers stopped; its verdict is the release's.
 * The gateways themselves are never stopped. If a removal fails, nothing is stopped and the error says which.
 */
import { runOperation } from '../remote/operation';
import { ProbeResult, probeOperation } from '../node/probe';
import type { SglangServer } from '../sglang/serverArgv';
import type { Transport } from '../ssh/transport';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { gatewayRef, removeWorker, waitRemoved } from '../gateway/client';
import { isSecondaryRank, nodeRank, distInitAddr } from '../gateway/multinode';
import { RotationNode, Routing, routingTo } from '../gateway/rotation';

export interface ReleaseFleetNode {
  name: string;
  /** SSH HostName (worker URLs name it). */
  host: string;
  transport: Transport;
}

/** A gateway routing to NODE (on NODE or a via node) and its workers that reach NODE's servers (rotation.ts). */
type ReleaseTarget = Routing;

export interface ReleasePlan {
  node: string;
  targets: ReleaseTarget[];
  servers: SglangServer[];
  probes: Map<string, ProbeResult>;
  /** Via nodes left out because their probe failed (planRelease with `skipUnreachableVia`); [] otherwise. */
  skipped: Array<{ node: string; error: string }>;
}

interface ReleaseResult {
  node: string;
  gateways: Array<{ node: string; port: number | null; removed: string[] }>;
  drained: Array<{ port: number; runningAtStart: number | null; seconds: number }>;
  salvage: { verdict: 'safe' | 'unsafe' | null; dest: string } | null;
  /** What the review warned of (multiNodeWarnings: a rank of a multi-node server stops that whole server). */
  warnings?: string[];
}

interface PlanOptions {
  /**
   * A via node whose probe fails is left out (listed in `plan.skipped`) instead of failing the plan: VS Code passes
   * every node of its tree, some of which may be down. The CLI's explicit --via nodes must answer.
   */
  skipUnreachableVia?: boolean;
}

/** Probe NODE and the via nodes (in parallel), map every gateway's workers over them, keep those reaching NODE. */
export async function planRelease(
  node: ReleaseFleetNode,
  via: ReleaseFleetNode[],
  signal?: AbortSignal,
  o: PlanOptions = {},
): Promise<ReleasePlan> {
  const all = [node, ...via.filter((v) => v.name !== node.name)];
  const probes = new Map<string, ProbeResult>();
  const skipped: ReleasePlan['skipped'] = [];
  await Promise.all(
    all.map(async (n) => {
      try {
        probes.set(n.name, await runOperation(n.transport, probeOperation(n.name, { artifacts: false }), signal));
      } catch (e) {
        if (n === node || !o.skipUnreachableVia || signal?.aborted) throw e;
        skipped.push({ node: n.name, error: errorMessage(e) });
      }
    }),
  );
  const fleet: RotationNode[] = all
    .filter((n) => probes.has(n.name))
    .map((n) => ({
      node: n.name,
      host: n.host,
      hostname: probes.get(n.name)?.hostname ?? null,
      servers: probes.get(n.name)?.servers ?? [],
      gateways: probes.get(n.name)?.gateways ?? [],
    }));
  const targets = routingTo(fleet, node.name);
  skipped.sort((a, b) => a.node.localeCompare(b.node));
  return { node: node.name, targets, servers: probes.get(node.name)?.servers ?? [], probes, skipped };
}

/** Review lines: the node's part in multi-node servers (stopping any rank stops the whole server). */
export function multiNodeWarnings(plan: ReleasePlan): string[] {
  return plan.servers
    .filter((s) => (s.nnodes ?? 1) > 1)
    .map(
      (s) =>
        `${plan.node} runs rank ${nodeRank(s)} of a ${s.nnodes}-node server (${distInitAddr(s) ?? 'rendezvous unknown'}): ` +
        `stopping it stops that whole server${nodeRank(s) > 0 ? ', whose API is on its rank-0 node' : ''}.`,
    );
}

/** The drain timeout when none is given (`release --drain-timeout`, Release Node). */
export const DEFAULT_DRAIN_TIMEOUT_S = 300;

interface ReleaseOptions {
  drainTimeoutMs: number;
  signal?: AbortSignal;
  onProgress?: (message: string) => void;
  /** Runs the salvage with the servers stopped (the CLI's and VS Code's own review and output around the core Salvager). */
  salvage: (servers: SglangServer[]) => Promise<{ verdict: 'safe' | 'unsafe' | null; dest: string } | null>;
  /** Reads running + queued requests of one server (launch.ts loadNow); injectable for tests. */
  loadOf?: (t: Transport, s: SglangServer) => Promise<number | null>;
  /** Polled during the drain: true ends the wait at once (Stop now); the servers are then stopped by the salvage. */
  stopNow?: () => boolean;
  /** Each drain reading: the server's port, its requests now (null: unknown) and the drain's deadline (ms). */
  onDrain?: (d: { port: number; running: number | null; deadline: number }) => void;
}

/** What a drain's progress says (Release Node, as Stop Server's drain): seconds left, what still runs, and whether
 *  new requests keep arriving (the total grew above its lowest reading). */
export function drainProgressText(running: ReadonlyMap<number, number | null>, lowest: number | null, leftMs: number): string {
  const left = Math.max(0, Math.round(leftMs / 1000));
  const known = [...running.values()].filter((n): n is number => n !== null);
  const total = known.reduce((a, b) => a + b, 0);
  const busy = [...running].filter(([, n]) => n !== 0).map(([port, n]) => `:${port} ${n === null ? '?' : n}`);
  const what = busy.length ? `draining ${busy.join(', ')} running` : 'drained';
  const arriving = lowest !== null && known.length && total > lowest ? ` · new requests keep arriving: ${total}` : '';
  return `${what} · ${left} s left (then stopped)${arriving}`;
}

/** What a cancelled release left: the workers already out of rotation stay out, the servers still run. */
export function cancelledMessage(node: string, gateways: ReleaseResult['gateways'], servers: SglangServer[]): string {
  const removed = gateways.filter((g) => g.removed.length);
  return (
    `Release of ${node} cancelled: ` +
    (removed.length
      ? `${removed.map((g) => `${g.removed.join(', ')} removed from the gateway :${g.port ?? '?'} on ${g.node}`).join('; ')} ` +
        `(they stay out of rotation)`
      : 'no worker was removed from a gateway') +
    `; ${servers.length ? `server(s) ${servers.map((s) => ':' + s.port).join(' ')} still running` : 'no server'} on ${node}, nothing stopped.`
  );
}

interface RemoveOptions {
  /** Until when the removals may take (waitRemoved; at least 5 s). */
  deadline: number;
  signal?: AbortSignal;
  onProgress?: (message: string) => void;
  /** What "Nothing was stopped." in the errors stands for (the release's; Stop Server's own words). */
  nothingStopped?: string;
}

/**
 * Step 2: remove the workers of `targets`, on every gateway first, then wait for all (the removals run concurrently
 * in the gateways). Fills `out` (one entry per target, its removed URLs) as it goes, so a caller sees what was
 * removed when it throws: a GpuSessionsError naming the gateway when one is unreachable by API, wants a key, refuses,
 * or still lists a worker at the deadline; `cancelled` when the signal fires.
 */
export async function removeFromGateways(
  targets: ReleaseTarget[],
  transports: Map<string, Transport> | ((node: string) => Transport),
  o: RemoveOptions,
  out: ReleaseResult['gateways'] = [],
): Promise<ReleaseResult['gateways']> {
  const say = o.onProgress ?? (() => undefined);
  const none = o.nothingStopped ?? 'Nothing was stopped.';
  const transportOf = (n: string) => (typeof transports === 'function' ? transports(n) : transports.get(n)!);
  const cancelled = () => new GpuSessionsError('cancelled', `Cancelled while removing workers from the gateways. ${none}`);
  const pending: Array<{ t: Transport; ref: NonNullable<ReturnType<typeof gatewayRef>>; entry: ReleaseResult['gateways'][0] }> = [];
  for (const tg of targets) {
    const ref = gatewayRef(tg.gateway);
    const entry = { node: tg.node, port: tg.gateway.port, removed: [] as string[] };
    out.push(entry);
    if (!ref)
      throw new GpuSessionsError(
        'remote-failed',
        `The gateway pid ${tg.gateway.pid} on ${tg.node} routes to ${tg.workers[0]?.node ?? 'the node'} but its API was not found ` +
          `(no port answered /readiness); ${none[0].toLowerCase()}${none.slice(1)}`,
      );
    if (tg.gateway.authRequired)
      throw new GpuSessionsError(
        'remote-failed',
        `The gateway :${ref.port} on ${tg.node} wants an API key this tool does not have; remove ${tg.workers.map((w) => w.url).join(', ')} ` +
          `from it by hand. ${none}`,
      );
    const t = transportOf(tg.node);
    for (const w of tg.workers) {
      if (o.signal?.aborted) throw cancelled();
      say(`Removing ${w.url} from the gateway :${ref.port} on ${tg.node}…`);
      const r = await removeWorker(t, ref, w);
      if (!r.accepted)
        throw new GpuSessionsError('remote-failed', `The gateway :${ref.port} on ${tg.node} refused ${r.request}: ${r.message}. ${none}`);
      entry.removed.push(w.url);
    }
    pending.push({ t, ref, entry });
  }
  for (const p of pending) {
    const left = await waitRemoved(p.t, p.ref, p.entry.removed, Math.max(5000, o.deadline - Date.now()), o.signal);
    if (o.signal?.aborted) throw cancelled();
    if (left.length)
      throw new GpuSessionsError(
        'timeout',
        `The gateway :${p.ref.port} on ${p.entry.node} still lists ${left.join(', ')} after the drain timeout; ${none[0].toLowerCase()}${none.slice(1)}`,
      );
    say(`The gateway :${p.ref.port} on ${p.entry.node} no longer routes to ${p.entry.removed.join(', ')}.`);
  }
  return out;
}

/**
 * Steps 2–4 for a plan (planRelease). Throws GpuSessionsError before anything is stopped when a removal fails. When
 * `signal` fires during the removals or the drain it stops there: a GpuSessionsError `cancelled` whose message says
 * what was left (cancelledMessage) and whose detail.partial is the result so far (releaseJson); nothing is stopped.
 */
export async function executeRelease(plan: ReleasePlan, transports: Map<string, Transport>, o: ReleaseOptions): Promise<ReleaseResult> {
  const say = o.onProgress ?? (() => undefined);
  const result: ReleaseResult = { node: plan.node, gateways: [], drained: [], salvage: null, warnings: multiNodeWarnings(plan) };
  const deadline = Date.now() + o.drainTimeoutMs;
  const cancelled = () =>
    new GpuSessionsError('cancelled', cancelledMessage(plan.node, result.gateways, plan.servers), { partial: releaseJson(result) });
  // 2. remove, on every gateway first, then wait for all
  try {
    await removeFromGateways(plan.targets, transports, { deadline, signal: o.signal, onProgress: say }, result.gateways);
  } catch (e) {
    if (o.signal?.aborted) throw cancelled();
    throw e;
  }
  // 3. drain each server of the node
  const t = transports.get(plan.node)!;
  const loadOf =
    o.loadOf ??
    (async (tt: Transport, s: SglangServer) => {
      const { loadNow } = await import('../launch/launch');
      return loadNow(tt, s, { source: null, lastDecode: null, quietSince: Date.now() }, 15_000);
    });
  await Promise.all(
    plan.servers
      // a rank ≥ 1 of a multi-node server has no API of its own (nothing to read; its rank 0 carries the requests)
      .filter((s) => s.port !== null && !isSecondaryRank(s))
      .map(async (s) => {
        const started = Date.now();
        let first: number | null | undefined;
        for (;;) {
          let n: number | null = null;
          try {
            n = await loadOf(t, s);
          } catch (e) {
            say(`:${s.port}: ${errorMessage(e)}`);
          }
          if (first === undefined) first = n;
          o.onDrain?.({ port: s.port as number, running: n, deadline });
          if (n === 0 || Date.now() >= deadline || o.signal?.aborted || o.stopNow?.()) break;
          say(`Draining :${s.port} (${n === null ? 'load unknown' : `${n} running`})…`);
          // Stop now ends the wait at once, not after the next reading
          for (let i = 0; i < 5 && !o.stopNow?.() && !o.signal?.aborted; i++) await new Promise((r) => setTimeout(r, 100));
        }
        result.drained.push({
          port: s.port as number,
          runningAtStart: first ?? null,
          seconds: Math.round((Date.now() - started) / 100) / 10,
        });
      }),
  );
  result.drained.sort((a, b) => a.port - b.port);
  if (o.signal?.aborted) throw cancelled();
  // 4. the salvage, servers stopped
  say(`Salvaging ${plan.node} with its servers stopped…`);
  result.salvage = await o.salvage(plan.servers);
  return result;
}

/** The JSON of `release --json` (field names are a contract: issue #28). */
export function releaseJson(r: ReleaseResult): Record<string, unknown> {
  return {
    node: r.node,
    gateways: r.gateways.map((g) => ({ node: g.node, port: g.port, removed: g.removed })),
    drained: r.drained.map((d) => ({ port: d.port, runningAtStart: d.runningAtStart, seconds: d.seconds })),
    salvage: r.salvage ? { verdict: r.salvage.verdict, dest: r.salvage.dest } : null,
    warnings: r.warnings ?? [],
  };
}
