/**
 * Live figures from SGLang log lines. `StatsTracker` keeps, per server (log file), the latest decode record
 * of every DP rank; node throughput is the SUM over servers and ranks of the latest decode `gen throughput`,
 * not an average. `sumFreshRanks` is the one place that sums per-rank figures: a rank whose last decode
 * line is older than the staleness limit contributes 0 (the tracker here, the guard's server state machine
 * and the node monitor all total through it).
 *
 * This module must not import `vscode`.
 */
import { formatCount } from '../util/format';
import { StatRecord, classifyLine, isRestartLine, rankLabel } from './logLines';

/** One server's load, "1,987 tok/s · 32 run · 0 queue · accept 2.71", from its log or its /metrics. */
export function formatLoad(genThroughput: number, running: number, queue: number, acceptLen: number | null): string {
  const s = `${formatCount(genThroughput)} tok/s · ${formatCount(running)} run · ${formatCount(queue)} queue`;
  return acceptLen !== null ? `${s} · accept ${acceptLen.toFixed(2)}` : s;
}

/** A rank whose latest decode line is older than this counts 0 in totals. */
export const RANK_STALE_MS = 120_000;

interface RankTotals {
  genThroughput: number;
  runningReqs: number;
  queueReqs: number;
  /** ranks that counted (fresh ones) */
  ranks: number;
  /** sum and count of their accept lengths (speculative decoding), for a mean */
  acceptSum: number;
  acceptN: number;
}

/**
 * The replica a rank label belongs to: its tags without the pipeline and attention-CP stages. Every PP stage
 * runs `_pp_process_batch_result` and its attn-TP rank 0 is a stats-logging rank (scheduler_pp_mixin.py), so
 * each stage may print its own decode line for the same tokens. Whether real PP logs do is UNVERIFIED (no
 * real `PP0`/`PP1` decode log was found); the safe reading is to count one replica once: the maximum over its
 * stages, summed over replicas (DP ranks). Without PP/ATTN_CP tags this is the plain sum over ranks.
 */
function replicaKey(ranks: Record<string, number> | undefined, i: number): string {
  // a stage's TP ranks are numbered globally (PP1 holds TP4..7 of a tp 4 × pp 2 server): the replica is its DP rank
  if (ranks && ('pp' in ranks || 'attn_cp' in ranks)) return `dp${ranks.dp ?? ''}`;
  return `#${i}`;
}

/** Sums the latest record of every replica seen within `staleMs` (older ones count 0); PP stages of one
 *  replica count once (their maximum, see replicaKey). */
export function sumFreshRanks(ranks: Iterable<{ stat: StatRecord; at: number }>, now: number, staleMs = RANK_STALE_MS): RankTotals {
  const t: RankTotals = { genThroughput: 0, runningReqs: 0, queueReqs: 0, ranks: 0, acceptSum: 0, acceptN: 0 };
  const replicas = new Map<string, { gen: number; run: number; queue: number }>();
  let i = 0;
  for (const { stat, at } of ranks) {
    if (now - at > staleMs) continue;
    t.ranks++;
    const k = replicaKey(stat.ranks, i++);
    const r = replicas.get(k) ?? { gen: 0, run: 0, queue: 0 };
    r.gen = Math.max(r.gen, stat.genThroughput ?? 0);
    r.run = Math.max(r.run, stat.runningReqs ?? 0);
    r.queue = Math.max(r.queue, stat.queueReqs ?? 0);
    replicas.set(k, r);
    if (stat.acceptLen !== null) {
      t.acceptSum += stat.acceptLen;
      t.acceptN++;
    }
  }
  for (const r of replicas.values()) {
    t.genThroughput += r.gen;
    t.runningReqs += r.run;
    t.queueReqs += r.queue;
  }
  return t;
}

interface ServerStats {
  file: string;
  /** latest decode record per rank label ("" for a server without rank tags) */
  ranks: Map<string, StatRecord>;
  /** when each rank's latest decode line was fed (ms since epoch) */
  rankSeenAt: Map<string, number>;
  /** when the last line of any kind was fed */
  lastLineAt: number | null;
  /** readiness line seen and no restart since */
  ready: boolean;
  /** error and traceback lines */
  errors: number;
  lastError: string | null;
  lines: number;
}

interface StatsTrackerOptions {
  /** A rank whose last decode line is older than this contributes 0. Default 120 s. */
  staleMs?: number;
  /** Clock (tests). */
  now?: () => number;
  /** Bound on rank labels kept per file (hostile input). Default 1024. */
  maxRanksPerFile?: number;
}

interface StatsTotal {
  /** sum over files and ranks of the latest decode gen throughput (fresh ones only) */
  genThroughput: number;
  runningReqs: number;
  queueReqs: number;
  /** files with at least one fresh decode line */
  servers: number;
}

/** Per-server live figures from SGLang log lines (fed by RemoteTail events). */
export class StatsTracker {
  private readonly servers = new Map<string, ServerStats>();
  private readonly staleMs: number;
  private readonly now: () => number;
  private readonly maxRanks: number;

  constructor(opts: StatsTrackerOptions = {}) {
    this.staleMs = opts.staleMs ?? 120_000;
    this.now = opts.now ?? Date.now;
    this.maxRanks = Math.max(1, opts.maxRanksPerFile ?? 1024);
  }

  feed(file: string, line: string): void {
    let s = this.servers.get(file);
    if (!s) {
      s = { file, ranks: new Map(), rankSeenAt: new Map(), lastLineAt: null, ready: false, errors: 0, lastError: null, lines: 0 };
      this.servers.set(file, s);
    }
    const now = this.now();
    s.lastLineAt = now;
    s.lines++;
    const c = classifyLine(line);
    switch (c.kind) {
      case 'decode': {
        const st = c.stat!;
        const label = st.rank ?? rankLabel(st.ranks);
        s.ranks.delete(label); // re-insert: Map order = least recently updated first
        s.ranks.set(label, st);
        s.rankSeenAt.set(label, now);
        if (s.ranks.size > this.maxRanks) {
          const oldest = s.ranks.keys().next().value as string;
          s.ranks.delete(oldest);
          s.rankSeenAt.delete(oldest);
        }
        return;
      }
      case 'ready':
        s.ready = true;
        return;
      case 'startup':
        if (isRestartLine(c)) {
          // a (re)start: figures of the previous process no longer count
          s.ready = false;
          s.ranks.clear();
          s.rankSeenAt.clear();
        }
        return;
      case 'error':
      case 'traceback':
        s.errors++;
        s.lastError = c.message.length > 500 ? c.message.slice(0, 500) + '…' : c.message;
        return;
      default:
        return;
    }
  }

  stats(file: string): ServerStats | undefined {
    return this.servers.get(file);
  }

  files(): string[] {
    return [...this.servers.keys()];
  }

  forget(file: string): void {
    this.servers.delete(file);
  }

  clear(): void {
    this.servers.clear();
  }

  /** Node totals: throughput SUMMED over files and ranks (latest decode line each), stale ranks count 0. */
  total(): StatsTotal {
    const now = this.now();
    let gen = 0;
    let running = 0;
    let queue = 0;
    let servers = 0;
    for (const s of this.servers.values()) {
      const f = this.fresh(s, now);
      if (f.ranks === 0) continue;
      servers++;
      gen += f.genThroughput;
      running += f.runningReqs;
      queue += f.queueReqs;
    }
    return { genThroughput: gen, runningReqs: running, queueReqs: queue, servers };
  }

  /** One server's totals over its DP ranks (fresh ones only, like total()). */
  serverTotal(file: string): RankTotals {
    const s = this.servers.get(file);
    return s ? this.fresh(s, this.now()) : sumFreshRanks([], 0);
  }

  /** One line for a server, e.g. "1,987 tok/s · 32 run · 0 queue · accept 2.71". */
  describe(file: string): string {
    const s = this.servers.get(file);
    if (!s) return 'no lines yet';
    const now = this.now();
    const f = this.fresh(s, now);
    const tail: string[] = [];
    if (s.errors) tail.push(`${s.errors} error${s.errors === 1 ? '' : 's'}`);
    if (f.ranks === 0) {
      let head: string;
      if (s.ranks.size > 0) {
        const last = Math.max(...s.rankSeenAt.values());
        head = `idle · no decode line for ${fmtAge(now - last)}`;
      } else head = s.ready ? 'ready · no decode lines yet' : `${s.lines.toLocaleString('en-US')} lines · not ready yet`;
      return [head, ...tail].join(' · ');
    }
    const parts = [formatLoad(f.genThroughput, f.runningReqs, f.queueReqs, f.acceptN > 0 ? f.acceptSum / f.acceptN : null)];
    if (f.ranks > 1) parts.push(`${f.ranks} ranks`);
    return [...parts, ...tail].join(' · ');
  }

  private fresh(s: ServerStats, now: number): RankTotals {
    const ranks = [...s.ranks].map(([label, stat]) => ({ stat, at: s.rankSeenAt.get(label) ?? 0 }));
    return sumFreshRanks(ranks, now, this.staleMs);
  }
}

function fmtAge(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}
