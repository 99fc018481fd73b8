/**
 * `gpu-sessions watch NODE... [--json] [--interval SECONDS] [--until done|crashed|unhealthy|any]`
 *
 * Polls every node (one exec per node per interval — the probe, which also reads progress.json — plus the
 * monitor's one log channel and /health, /metrics through the same connection) and prints one line per
 * sample and one per transition. With --json every line is an object:
 *
 *   {"type":"sample","node":…,"time":…,"reachable":…,"servers":[{port,state,reason,…}],"gpus":[…],"disks":[…],"job":{…}}
 *   {"type":"transition","node":…,"time":…,"port"|"gpu"|"mount"|"path":…,"from":…,"to":…,"class":…,"message":…}
 *
 * With the data guard (on by default; --data PATH[,PATH] names the files, --no-data turns it off) each output
 * file's verdict is a subject too: {"type":"transition","subject":"data","path":…,"from":…,"to":"data-degenerate"|…}.
 *
 * `to` is a server state (starting ready serving idle stalled unhealthy crashed), a condition (kv-pressure
 * dp-imbalance accept-drop gpu-lost disk-full unreachable done deadline-near; rank-lost: a multi-node server whose rank ≥ 1
 * is gone, on the rank-0 node, when both nodes are watched) or its end (ok, running).
 * --until: exit 0 when that happens on any watched node (any = any transition into trouble), 8 if a node
 * becomes unreachable first, 130 on Ctrl-C. Without --until it runs until Ctrl-C (exit 130).
 */
import { GuardFollow, formatGuardLine } from './watchGuard';
import { setMaxListeners } from 'node:events';
import { formatCount } from '../core/util/format';
import { errorMessage } from '../core/util/errors';
import { GuardSample, GuardTransition, NodeGuard, isOkValue } from '../core/node/guard';
import { NodeMonitor } from '../core/node/monitor';
import { ProbeResult, probeOperation } from '../core/node/probe';
import { runOperation } from '../core/remote/operation';
import type { ServerStateTuning } from '../core/sglang/serverState';
import type { NodeSpec } from '../core/ssh/config';
import type { ConnectionPool } from '../core/ssh/pool';
import { Spend, WatchEconomics, perMillionPhrase } from '../core/node/spend';
import { type OwnTerms, ProviderRentals, rentalTerms } from '../core/node/rental';
import { HistoryStore } from '../core/node/history';
import { DataWatch } from '../core/data/watch';
import { RankWatch } from '../core/gateway/rankWatch';
import { EXIT } from './exitCodes';
import type { CliIo } from './cliNode';

type UntilCondition = 'done' | 'crashed' | 'unhealthy' | 'any';

interface WatchOptions {
  json: boolean;
  intervalS: number;
  until: UntilCondition | null;
  tuning?: ServerStateTuning;
  /**
   * Price and deadline: the user's own (flags) over the provider's, which the node's own provider CLI tells where
   * it can (core/node/rental.ts, read after the first probe and every 10 minutes). Absent: the provider's only.
   */
  terms?: { own: OwnTerms; leadMs?: number };
  /** The provider reads (tests pass their own). */
  rentals?: ProviderRentals;
  /** Where the samples are kept for `gpu-sessions history` (null: not kept). */
  historyDir?: string | null;
  /** The data guard: these output files (paths empty: the files `data` finds); null or absent: off. */
  data?: { paths: string[]; roots?: string[] } | null;
}

type WatchIo = Pick<CliIo, 'out' | 'err'>;

/** Does this transition satisfy --until? */
function matchesUntil(t: { to: string }, until: UntilCondition): boolean {
  if (until === 'any') return !isOkValue(t.to) && t.to !== 'unreachable';
  // a multi-node server that lost a rank has failed as a whole (its rank 0 still runs, but cannot serve)
  return t.to === until || (until === 'crashed' && t.to === 'rank-lost');
}

/** Tuning from the environment (GPU_SESSIONS_WATCH_TUNING="imbalanceMs=5000,acceptDropMs=5000"), for demos and tests. */
export function tuningFromEnv(env: NodeJS.ProcessEnv = process.env): ServerStateTuning | undefined {
  const raw = env.GPU_SESSIONS_WATCH_TUNING;
  if (!raw) return undefined;
  const out: Record<string, number> = {};
  for (const part of raw.split(',')) {
    const [k, v] = part.split('=').map((x) => x.trim());
    const n = Number(v);
    if (k && Number.isFinite(n) && n >= 0) out[k] = n;
  }
  return out as ServerStateTuning;
}

function hhmmss(iso: string): string {
  return iso.slice(11, 19);
}

export function formatSample(s: GuardSample): string {
  if (!s.reachable) return `${hhmmss(s.time)} ${s.node}  unreachable: ${s.message ?? ''}`;
  const counts = new Map<string, number>();
  for (const v of s.servers) counts.set(v.state, (counts.get(v.state) ?? 0) + 1);
  const states = [...counts].map(([k, n]) => `${n} ${k}`).join(', ');
  const gpusOk = s.gpus.filter((g) => g.state === 'ok').length;
  const parts = [
    `${s.servers.length} server${s.servers.length === 1 ? '' : 's'}${states ? ` (${states})` : ''}`,
    `${formatCount(s.genThroughput)} tok/s`,
    `${s.runningReqs} run`,
    `GPUs ${gpusOk}/${s.gpus.length}`,
  ];
  if (s.job.state !== 'unknown') parts.push(`job ${s.job.state}${s.job.percent !== null ? ` ${s.job.percent.toFixed(1)} %` : ''}`);
  const full = s.disks.filter((d) => d.state === 'disk-full').map((d) => d.mount);
  if (full.length) parts.push(`disk nearly full: ${full.join(', ')}`);
  const x = s as GuardSample & { spend?: Spend; deadline?: { secondsLeft: number; source?: string } };
  if (x.spend) {
    const pm = perMillionPhrase(x.spend);
    const src = x.spend.priceSource ? ` from ${x.spend.priceSource}` : '';
    parts.push(`$${x.spend.total.toFixed(2)} at $${x.spend.perHour}/h${src}${pm ? ` (${pm})` : ''}`);
  }
  if (x.deadline)
    parts.push(`deadline in ${Math.round(x.deadline.secondsLeft / 60)} min${x.deadline.source ? ` (from ${x.deadline.source})` : ''}`);
  const data = (s as GuardSample & { data?: Array<{ verdict: string }> }).data;
  if (data?.length) {
    const by = (v: string) => data.filter((f) => f.verdict === v).length;
    const bad = [by('degenerate') ? `${by('degenerate')} degenerate` : '', by('suspect') ? `${by('suspect')} suspect` : ''].filter(Boolean);
    parts.push(`data ${bad.length ? bad.join(', ') : 'ok'} (${data.length} file${data.length === 1 ? '' : 's'})`);
  }
  return `${hhmmss(s.time)} ${s.node}  ${parts.join(' · ')}`;
}

export function formatTransition(t: GuardTransition): string {
  const where =
    t.worker !== undefined
      ? `gateway :${t.port ?? '?'} worker ${t.worker}`
      : t.port !== undefined
        ? `:${t.port}`
        : t.gpu !== undefined
          ? `GPU ${t.gpu}`
          : t.mount !== undefined
            ? t.mount
            : (t.path ?? t.subject);
  return `${hhmmss(t.time)} ${t.node}  ${where} ${t.from} → ${t.to}${t.class ? ` [${t.class}]` : ''}  ${t.message}`;
}

/** The JSON line of a transition: the contract's keys first. */
function transitionJson(t: GuardTransition): Record<string, unknown> {
  const o: Record<string, unknown> = { type: 'transition', node: t.node, time: t.time };
  if (t.port !== undefined) o.port = t.port;
  if (t.gpu !== undefined) o.gpu = t.gpu;
  if (t.mount !== undefined) o.mount = t.mount;
  if (t.worker !== undefined) o.worker = t.worker;
  if (t.path !== undefined) o.path = t.path;
  o.from = t.from;
  o.to = t.to;
  if (t.class) o.class = t.class;
  o.message = t.message;
  o.subject = t.subject;
  if (t.folder) o.folder = t.folder;
  if (t.logFile !== undefined) o.logFile = t.logFile;
  return o;
}

interface Watched {
  spec: NodeSpec;
  monitor: NodeMonitor;
  guard: NodeGuard;
  economics: WatchEconomics;
  history: HistoryStore | null;
  firstProbe: ProbeResult | null;
  /** The last probe that answered (null while unreachable): the fleet's view of multi-node servers. */
  lastProbe: ProbeResult | null;
  data: DataWatch | null;
  /** The node's own guard: what it did, then its new events (./watchGuard). */
  guardFollow: GuardFollow;
}

/**
 * The watch's own signal, aborted with the caller's. Every node's exec holds one abort listener on it while it
 * runs (the transport removes it when the exec ends), all nodes at once, plus the interval's sleep: Node's
 * default of 10 listeners would warn of a leak from 10 nodes on. The limit is sized to the node count (a probe and
 * a data check per node at most, and the sleep), so a real leak still warns. Call dispose() when done.
 */
export function watchSignal(outer: AbortSignal, nodes: number): { signal: AbortSignal; dispose: () => void } {
  const own = new AbortController();
  setMaxListeners(Math.max(10, 2 * nodes + 2), own.signal);
  const onAbort = () => own.abort(outer.reason);
  if (outer.aborted) own.abort(outer.reason);
  else outer.addEventListener('abort', onAbort, { once: true });
  return { signal: own.signal, dispose: () => outer.removeEventListener('abort', onAbort) };
}

export async function cmdWatch(
  nodes: NodeSpec[],
  pool: ConnectionPool,
  opts: WatchOptions,
  io: WatchIo,
  outerSignal: AbortSignal,
): Promise<number> {
  const watchSig = watchSignal(outerSignal, nodes.length);
  try {
    return await watchNodes(nodes, pool, opts, io, watchSig.signal);
  } finally {
    watchSig.dispose();
  }
}

async function watchNodes(nodes: NodeSpec[], pool: ConnectionPool, opts: WatchOptions, io: WatchIo, signal: AbortSignal): Promise<number> {
  const print = (o: unknown, text: string) => io.out((opts.json ? JSON.stringify(o) : text) + '\n');
  let result: number | null = null;
  const finish = (code: number) => {
    if (result === null) result = code;
  };
  const rentals = opts.rentals ?? new ProviderRentals();
  const watched: Watched[] = nodes.map((spec) => {
    const t = pool.get(spec);
    const monitor = new NodeMonitor(spec.name, t);
    const guard = new NodeGuard(spec.name, monitor, { tuning: opts.tuning });
    const economics = new WatchEconomics({ ...rentalTerms(opts.terms?.own ?? {}, null), leadMs: opts.terms?.leadMs });
    const history = opts.historyDir
      ? // appended to its file only: the watch never reads it back (kept in memory, every sample grew the heap)
        new HistoryStore(opts.historyDir, spec.name, { maxEntries: 0, onProblem: (m) => io.err(`gpu-sessions: ${spec.name}: ${m}\n`) })
      : null;
    const onTr = (tr: GuardTransition) => {
      print(transitionJson(tr), formatTransition(tr));
      history?.addTransition(tr);
      if (!opts.until || result !== null) return;
      if (tr.to === 'unreachable') finish(EXIT.unreachableFirst);
      else if (matchesUntil(tr, opts.until)) finish(0);
    };
    guard.onTransition(onTr);
    const data = opts.data ? new DataWatch(spec.name, { paths: opts.data.paths, roots: opts.data.roots ?? spec.roots }) : null;
    data?.onTransition(onTr);
    return { spec, monitor, guard, economics, history, firstProbe: null, lastProbe: null, data, guardFollow: new GuardFollow(spec.name) };
  });

  const pollOne = async (w: Watched, first: boolean): Promise<void> => {
    const t = pool.get(w.spec);
    let probe: ProbeResult;
    try {
      const known = w.firstProbe;
      const progress = known ? progressPaths(known) : null;
      probe = await runOperation(
        t,
        probeOperation(w.spec.name, {
          roots: w.spec.roots,
          ...(known ? { artifacts: false } : {}),
          ...(progress ? { progress } : {}),
        }),
        signal,
      );
      if (!known) {
        w.firstProbe = probe;
        const p = progressPaths(probe);
        if (p) {
          // the first probe found the job's files: read them now, in the next probes' own exec afterwards
          probe = await runOperation(t, probeOperation(w.spec.name, { roots: w.spec.roots, artifacts: false, progress: p }), signal);
          probe.artifacts = w.firstProbe.artifacts;
        }
      }
    } catch (e) {
      if (signal.aborted) return;
      w.lastProbe = null;
      w.guard.setUnreachable(errorMessage(e));
      if (opts.until && result === null) finish(EXIT.unreachableFirst);
      emitSample(w);
      return;
    }
    await w.monitor.update(probe);
    if (first) await waitForLogs(w, probe, signal);
    w.lastProbe = probe;
    if (rentals.due(w.spec.name)) {
      await rentals.refresh(w.spec.name, t, probe.provider, signal);
      // the user's own terms over the provider's, each with its source
      w.economics.setTerms(rentalTerms(opts.terms?.own ?? {}, rentals.get(w.spec.name)));
    }
    w.guard.update(probe);
    if (w.data) await w.data.poll(t, signal);
    for (const l of await w.guardFollow.poll(t, signal)) print(l, formatGuardLine(l));
    if (opts.until && result === null) {
      for (const [k, v] of w.guard.states()) {
        if (k === 'node') continue;
        if (matchesUntil({ to: v }, opts.until)) finish(0);
      }
    }
    emitSample(w);
  };

  const emitSample = (w: Watched) => {
    const s = w.guard.sample();
    // (counts tokens from the first sample, so a price the provider tells later has the whole period)
    const extra = w.economics.annotate(s, w.guard);
    const data = w.data?.sample() ?? [];
    const line = { ...s, ...extra, ...(data.length ? { data } : {}) };
    for (const tr of w.economics.transitions(s, line)) {
      print(transitionJson(tr), formatTransition(tr));
      w.history?.addTransition(tr);
      if (opts.until === 'any' && result === null) finish(0);
    }
    w.history?.addSample(line);
    print(line, formatSample(line));
  };

  // a rank ≥ 1 of a multi-node server that dies is a failure of the rank-0 server, on the rank-0 node's guard
  const ranks = new RankWatch();
  const judgeRanks = () => {
    const unknown = new Set(watched.filter((w) => !w.lastProbe).map((w) => w.spec.name));
    const fleet = watched.filter((w) => w.lastProbe).map((w) => ({ node: w.spec.name, servers: w.lastProbe!.servers }));
    const byNode = ranks.values(fleet, unknown);
    for (const w of watched) if (w.lastProbe) w.guard.setRanks(byNode.get(w.spec.name) ?? []);
  };

  let first = true;
  const heap = heapReporter(io);
  try {
    while (!signal.aborted && result === null) {
      const started = Date.now();
      await Promise.all(watched.map((w) => pollOne(w, first)));
      judgeRanks();
      heap();
      first = false;
      if (result !== null || signal.aborted) break;
      const wait = Math.max(200, opts.intervalS * 1000 - (Date.now() - started));
      await sleep(wait, signal, () => result !== null);
    }
  } finally {
    for (const w of watched) {
      w.guard.dispose();
      w.monitor.dispose();
      w.history?.flush();
    }
  }
  if (result !== null) return result;
  return EXIT.interrupted;
}

/**
 * GPU_SESSIONS_DEBUG_HEAP=N (hidden, for leak hunts): every N polls, after a forced collection (node --expose-gc),
 * one line on stderr with the heap in use and the RSS. Without the variable it does nothing.
 */
function heapReporter(io: WatchIo, env: NodeJS.ProcessEnv = process.env): () => void {
  const every = Math.floor(Number(env.GPU_SESSIONS_DEBUG_HEAP));
  if (!(every >= 1)) return () => undefined;
  const gc = (globalThis as { gc?: () => void }).gc;
  const started = Date.now();
  let polls = 0;
  return () => {
    if (++polls % every) return;
    gc?.();
    const m = process.memoryUsage();
    const mb = (n: number) => (n / 1024 / 1024).toFixed(2);
    io.err(
      `gpu-sessions: heap poll ${polls} t=${Math.round((Date.now() - started) / 1000)}s heapUsed=${mb(m.heapUsed)} MB ` +
        `rss=${mb(m.rss)} MB external=${mb(m.external)} MB${gc ? '' : ' (no gc: run node with --expose-gc)'}\n`,
    );
  };
}

function progressPaths(p: ProbeResult): { progressPath: string | null; donePath: string | null } | null {
  const prog = p.artifacts.find((a) => a.kind === 'progress' && /progress[^/]*\.json$/.test(a.path));
  const done = p.artifacts.find((a) => a.kind === 'progress' && a.path.endsWith('/.done_indices'));
  return prog || done ? { progressPath: prog?.path ?? null, donePath: done?.path ?? null } : null;
}

/** The first sample waits (≤ 5 s) for the log channel's first lines, so it does not report "ready" for a busy server. */
async function waitForLogs(w: Watched, probe: ProbeResult, signal: AbortSignal): Promise<void> {
  const files = probe.servers.map((s) => s.logFile).filter((f): f is string => !!f);
  const deadline = Date.now() + 5000;
  while (!signal.aborted && Date.now() < deadline && !files.every((f) => (w.monitor.stats.stats(f)?.lines ?? 0) > 0)) {
    await new Promise((r) => setTimeout(r, 100));
  }
}

function sleep(ms: number, signal: AbortSignal, stop: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    const end = Date.now() + ms;
    const tick = () => {
      if (signal.aborted || stop() || Date.now() >= end) {
        signal.removeEventListener('abort', onAbort);
        resolve();
      } else timer = setTimeout(tick, Math.min(100, end - Date.now()));
    };
    const onAbort = () => {
      clearTimeout(timer);
      resolve();
    };
    let timer = setTimeout(tick, Math.min(100, ms));
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
