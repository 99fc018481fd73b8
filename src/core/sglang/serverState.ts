/**
 * The state of one SGLang server, judged from what the live monitor sees: its log lines (as they arrive),
 * whether its process is alive (the probe), /health answers and /metrics. One state machine, shared by the
 * CLI (`gpu-sessions watch`) and the extension (tree icons, alerts). Pure: the caller passes the time.
 *
 *   starting   the process runs but is not ready yet (no readiness line, /health 503 or refused)
 *   ready      ready, no request seen yet
 *   serving    requests running and tokens generated
 *   idle       ready, nothing running or queued
 *   stalled    requests queued or running but no generated tokens for 60 s, or no stat line for several
 *              decode-log intervals while requests run, or a watchdog timeout line (class hang)
 *   unhealthy  /health failing (503 after the server was ready, refused while the process runs) or slower
 *              than 20 s, as SGLang judges it (class hang)
 *   crashed    the process is gone, or a crash / oom / nccl / gpu line, a hard watchdog (2026:
 *              `… watchdog timeout (…, self.soft=False)`, class hang) or a KV allocation RuntimeError (class
 *              kv-pressure); class = the most specific failure of the burst. A soft watchdog (`self.soft=True`)
 *              is a stall (the process stays). A PD transfer failure (class pd-transfer) loses one request
 *              and changes no state.
 *   stopping   a graceful stop (`SIGTERM received … Draining requests`): /health answers 503 while it drains
 *   stopped    … and its process exited: a deliberate stop, no alert
 *
 * A restart (a new pid on the port) is a boundary: until the new launch's first line (`server_args=…`,
 * `Started server process`) arrives, or RESTART_BACKLOG_MS pass, lines are the earlier process's (a tail restarted
 * on the same log re-sends them) and change nothing.
 *
 * Besides the state, three conditions of the same server: `kv-pressure` (KV pool full, retractions),
 * `dp-imbalance` (one DP rank under half the median of its peers for 2 minutes) and `accept-drop` (the
 * speculative accept length fell well below its own baseline).
 *
 * Nothing here imports vscode.
 */
import {
  FailureClass,
  StatRecord,
  classifyLine,
  isDrainLine,
  isKvPressureStat,
  isLaunchBoundaryLine,
  lineHeader,
  rankLabel,
} from './logLines';
import { describeExitCode } from './failureSignatures';
import { exceptionLine, isTracebackHeader } from './exceptionLine';
import { RANK_STALE_MS, sumFreshRanks } from './liveStats';
import type { MetricsSummary } from './endpoints';

export type ServerStateName = 'starting' | 'ready' | 'serving' | 'idle' | 'stalled' | 'unhealthy' | 'crashed' | 'stopping' | 'stopped';

/** After a new pid on the port, lines that arrive this long without the new launch's first line are still read
 *  as the earlier process's backlog (a restarted tail re-sends the log's last lines at once). */
export const RESTART_BACKLOG_MS = 30_000;

/** After the ready line, how long a 503 or "starting" /health answer is taken for warm-up settling, not a hang. */
const READY_SETTLE_MS = 10_000;

/** Rank labels kept per server (a garbled or hostile log could name endless ones); the least recently seen goes. */
const MAX_RANKS = 1024;

/** Lines of a crash burst kept to find its exception line (the header is not the message). */
const BURST_LINES = 400;

/** A line's own log time to the second ("2026-12-04 10:00:01"), comparable as text; null without a dated header. */
function logSecond(line: string): string | null {
  const t = lineHeader(line).time;
  return t && /^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}/.test(t) ? t.slice(0, 19).replace('T', ' ') : null;
}

/** States that mean the server is not earning (alerts, warning colour). */
export function isBadState(s: ServerStateName): boolean {
  return s === 'stalled' || s === 'unhealthy' || s === 'crashed';
}

export interface StateVerdict {
  state: ServerStateName;
  /** Why, in words ("no stat line for 14 s while 32 requests run"). */
  reason: string;
  class: FailureClass | null;
  /** The log line behind it, when there is one. */
  line: string | null;
  /** The exit code a line of the failure's burst named (`crashed with exit code -9`), when one did. */
  exitCode?: number;
}

/** The verdict's message for an alert: its log line (or reason), with the burst's exit code when the line lacks it. */
export function verdictMessage(v: StateVerdict): string {
  const m = v.line ?? v.reason;
  return v.exitCode !== undefined && m.indexOf('exit code') < 0 ? `${m} [${describeExitCode(v.exitCode)}]` : m;
}

interface ServerConditions {
  kv: 'ok' | 'kv-pressure';
  balance: 'ok' | 'dp-imbalance';
  spec: 'ok' | 'accept-drop';
}

export interface ServerStateTuning {
  /** Requests running/queued but no generated tokens for this long → stalled. Default 60 s. */
  noTokensMs?: number;
  /** No stat line for this many decode-log intervals (the observed spacing) while requests run → stalled. Default 5. */
  silentIntervals?: number;
  /** ... but never sooner than this. Default 8 s. */
  silentMinMs?: number;
  /** One DP rank under half the median of its peers for this long → dp-imbalance. Default 120 s. */
  imbalanceMs?: number;
  /** Accept length under 75 % of its baseline for this long → accept-drop. Default 60 s. */
  acceptDropMs?: number;
  /** KV pressure is over after this long without a pressure line. Default 30 s. */
  kvClearMs?: number;
  /**
   * /health refused or closed while the last probe saw the process: unhealthy only after this long. A dying
   * server refuses before its process is gone and its crash lines arrive; that is a crash, not a hang. Default 6 s.
   */
  deadGraceMs?: number;
}

const DEFAULT_TUNING: Required<ServerStateTuning> = {
  noTokensMs: 60_000,
  silentIntervals: 5,
  silentMinMs: 8_000,
  imbalanceMs: 120_000,
  acceptDropMs: 60_000,
  kvClearMs: 30_000,
  deadGraceMs: 6_000,
};

/** What the poll saw of the server at one moment. */
interface ServerObservation {
  /** The process is listed by the probe. */
  alive: boolean;
  pid?: number | null;
  /** Latest /health result (null: none yet) and since when a check has been waiting for an answer. */
  /** `at`: when the check was sent (the clock of `now`); a check sent before the ready line is not judged after it. */
  health: { health: string; detail: string; durationMs?: number; at?: number } | null;
  healthInFlightSince?: number | null;
  /** The server's own /health limit (SGLANG_HEALTH_CHECK_TIMEOUT), ms; default 20 s. */
  healthLimitMs?: number;
  /** /metrics, or for a server without stat lines and metrics its /v1/loads or /server_info figures. */
  metrics?: (MetricsSummary & { source?: string }) | null;
}

interface RankState {
  stat: StatRecord;
  at: number;
  /** since when this rank has been under half the median of its peers (null: it is not) */
  slowSince: number | null;
}

/** Which class names a crash best when several lines of one burst match: the most specific (a hard watchdog is
 *  followed by the SIGQUIT handler's crash lines: the cause is the hang). */
const FATAL_PRIORITY: FailureClass[] = ['oom', 'kv-pressure', 'nccl', 'gpu', 'hang', 'crash'];

export class ServerStateMachine {
  private readonly tune: Required<ServerStateTuning>;
  private ready = false;
  private everServed = false;
  private readonly ranks = new Map<string, RankState>();
  /** latest prefill line per rank: a PD prefill node prints no decode line */
  private readonly prefillRanks = new Map<string, { stat: StatRecord; at: number }>();
  /** when a prefill line last showed work (new tokens, input throughput) */
  private lastPrefillWorkAt: number | null = null;
  private lastStatAt: number | null = null;
  private lastTokensAt: number | null = null;
  private spacingMs: number | null = null;
  private fatal: { cls: FailureClass; line: string; at: number; exitCode?: number } | null = null;
  /** the lines after a fatal traceback header, until its exception line names the failure */
  private burst: string[] | null = null;
  /** a graceful stop's line (SIGTERM, draining) */
  private draining: { line: string; at: number } | null = null;
  /** since when the lines are an earlier process's (a new pid, no launch line of it yet); null: they are live */
  private backlogSince: number | null = null;
  /** when the last launch line arrived, and when the poll last saw the current pid alive: a launch line after
   *  that is the next process's own, so its pid, seen later, is no boundary (its lines are live) */
  private launchAt: number | null = null;
  /** the log time of the latest crash the log showed (kept across restarts): a launch line dated before it is an
   *  earlier process's, re-sent by a restarted tail, and no restart (read as one, its old traceback would follow) */
  private crashLogTime: string | null = null;
  private pidAliveAt: number | null = null;
  /** when the server last became ready (a /health answer from before says nothing of it since) */
  private readyAt: number | null = null;
  private hang: { line: string; at: number } | null = null;
  private kvAt: number | null = null;
  /** when the log last showed a retraction (its line, dated as it arrived) */
  private kvLogAt: number | null = null;
  /** when the poll last observed the server (/metrics with it) */
  private lastObsAt: number | null = null;
  /** The last `num_retracted_requests_total` seen: a rise is a retraction (kv-pressure). */
  private retractedTotal: number | null = null;
  private kvLine: string | null = null;
  private pid: number | null = null;
  private aliveSeen = false;
  private gone = false;
  private acceptBase: number | null = null;
  private acceptFast: number | null = null;
  private acceptN = 0;
  private acceptLowSince: number | null = null;
  private acceptDropped = false;
  private lastObs: ServerObservation | null = null;
  /** Since when /health has been refused or closed (null: it answered). */
  private deadSince: number | null = null;
  /** set by the node guard when this server (as a whole) is the slow one among manual-DP peers */
  peerSlowSince: number | null = null;

  constructor(
    readonly port: number,
    tuning: ServerStateTuning = {},
  ) {
    this.tune = { ...DEFAULT_TUNING, ...tuning };
  }

  /** One line of the server's log. */
  feedLine(line: string, now: number): void {
    const c = classifyLine(line);
    if (isLaunchBoundaryLine(c)) {
      const t = this.crashLogTime === null ? null : logSecond(line);
      if (t !== null && t < this.crashLogTime!) return; // an earlier process's launch, re-sent
      this.restarted();
      this.launchAt = now;
      return;
    }
    if (this.backlogSince !== null) {
      if (now - this.backlogSince < RESTART_BACKLOG_MS) return; // the earlier process's lines, re-sent
      this.backlogSince = null;
    }
    if (this.burst) this.feedBurst(line, now);
    if (isDrainLine(line)) {
      this.draining ??= { line, at: now };
      return;
    }
    if (c.kind === 'decode' || c.kind === 'prefill') {
      const st = c.stat!;
      if (this.lastStatAt !== null) {
        const gap = now - this.lastStatAt;
        if (gap > 50) this.spacingMs = this.spacingMs === null ? gap : this.spacingMs * 0.8 + gap * 0.2;
      }
      this.lastStatAt = now;
      if (st.kind === 'decode') {
        const label = st.rank ?? rankLabel(st.ranks);
        const prev = this.ranks.get(label);
        this.ranks.set(label, { stat: st, at: now, slowSince: prev?.slowSince ?? null });
        if (!prev) evictStalest(this.ranks);
        if ((st.genThroughput ?? 0) > 0) {
          this.lastTokensAt = now;
          if ((st.runningReqs ?? 0) > 0) this.everServed = true;
        } else if (this.lastTokensAt === null) this.lastTokensAt = now;
        if (st.acceptLen !== null) this.feedAccept(st.acceptLen, now);
      } else this.feedPrefill(st, now);
      this.markReady(now);
      if (this.hang && now - this.hang.at > 1000) this.hang = null; // stat lines again: it recovered
      if (isKvPressureStat(st)) {
        this.kvAt = this.kvLogAt = now;
        this.kvLine ??= line;
      }
      return;
    }
    if (c.kind === 'ready') {
      this.markReady(now);
      return;
    }
    if (c.kind !== 'error' || !c.errorClass || !c.failure) return;
    const cls = c.errorClass;
    const code = c.failure.exitCode;
    if (c.failure.fatal) {
      // within one burst (a traceback and what follows it) keep the most specific class, and any exit code named
      if (!this.fatal) {
        this.fatal = { cls, line, at: now, exitCode: code };
        const t = logSecond(line);
        if (t !== null && (this.crashLogTime === null || t > this.crashLogTime)) this.crashLogTime = t;
        if (isTracebackHeader(line)) this.burst = [line];
      } else if (now - this.fatal.at < 5000) {
        const exitCode = this.fatal.exitCode ?? code;
        if (FATAL_PRIORITY.indexOf(cls) < FATAL_PRIORITY.indexOf(this.fatal.cls)) this.fatal = { cls, line, at: this.fatal.at, exitCode };
        else this.fatal.exitCode = exitCode;
      }
    } else if (cls === 'hang') {
      this.hang ??= { line, at: now };
    } else if (cls === 'kv-pressure') {
      this.kvAt = this.kvLogAt = now;
      this.kvLine = line;
    }
  }

  /** A prefill line: its work is progress, and on a node without decode lines (PD prefill) it is the serving. */
  private feedPrefill(st: StatRecord, now: number): void {
    const label = st.rank ?? rankLabel(st.ranks);
    const known = this.prefillRanks.has(label);
    this.prefillRanks.set(label, { stat: st, at: now });
    if (!known) evictStalest(this.prefillRanks);
    if ((st.newTokens ?? 0) <= 0 && (st.inputThroughput ?? 0) <= 0) return;
    this.lastPrefillWorkAt = now;
    if (this.ranks.size === 0) {
      this.everServed = true;
      this.lastTokensAt = now;
    }
  }

  /** A line of a crash burst whose message is still its traceback's header: the exception line replaces it. */
  private feedBurst(line: string, now: number): void {
    const b = this.burst!;
    if (!this.fatal || now - this.fatal.at >= 5000 || b.length >= BURST_LINES) {
      this.burst = null;
      return;
    }
    b.push(line);
    const exc = exceptionLine(b);
    if (exc === null) return;
    if (this.fatal.line === b[0]) this.fatal.line = exc;
    this.burst = null;
  }

  private markReady(now: number): void {
    if (!this.ready) this.readyAt = now;
    this.ready = true;
  }

  private restarted(): void {
    this.ready = false;
    this.everServed = false;
    this.fatal = null;
    this.burst = null;
    this.draining = null;
    this.backlogSince = null;
    this.hang = null;
    this.gone = false;
    this.ranks.clear();
    this.prefillRanks.clear();
    this.lastPrefillWorkAt = null;
    this.lastStatAt = null;
    this.lastTokensAt = null;
    this.kvAt = null;
    this.kvLogAt = null;
    this.kvLine = null;
    this.deadSince = null;
  }

  private feedAccept(a: number, now: number): void {
    this.acceptN++;
    this.acceptFast = this.acceptFast === null ? a : this.acceptFast * 0.7 + a * 0.3;
    if (!this.acceptDropped) this.acceptBase = this.acceptBase === null ? a : this.acceptBase * 0.97 + a * 0.03;
    const base = this.acceptBase ?? a;
    if (this.acceptN >= 10 && base >= 1.3 && this.acceptFast < 1 + (base - 1) * 0.6) this.acceptLowSince ??= now;
    else if (this.acceptFast >= 1 + (base - 1) * 0.85) {
      this.acceptLowSince = null;
      this.acceptDropped = false;
    }
  }

  /** What the poll saw (process, /health, /metrics). */
  observe(o: ServerObservation, now: number): void {
    this.lastObs = o;
    if (o.alive) {
      if (o.pid != null && this.pid !== null && o.pid !== this.pid) {
        const launchedSince = this.launchAt !== null && this.pidAliveAt !== null && this.launchAt > this.pidAliveAt;
        if (!launchedSince) {
          this.restarted();
          this.backlogSince = now;
        }
      }
      if (o.pid != null) {
        this.pid = o.pid;
        this.pidAliveAt = now;
      }
      this.aliveSeen = true;
      this.gone = false;
    } else if (this.aliveSeen) {
      this.gone = true;
    }
    if (o.health?.health === 'healthy') this.markReady(now);
    this.deadSince = o.health?.health === 'dead' ? (this.deadSince ?? now) : null;
    // /metrics shows retractions at some time since the previous poll; when the log showed retraction lines in
    // that time they are the same ones, dated exactly by their lines (dating them at this poll would hold the
    // condition up to one poll longer after the pressure ended)
    const prevObsAt = this.lastObsAt;
    this.lastObsAt = now;
    const logged = this.kvLogAt !== null && prevObsAt !== null && this.kvLogAt >= prevObsAt;
    if (o.metrics && (o.metrics.retractedReqs ?? 0) > 0 && !logged) this.kvAt = now;
    const rt = o.metrics?.retractedTotal ?? null;
    if (rt !== null) {
      if (this.retractedTotal !== null && rt > this.retractedTotal && !logged) this.kvAt = now;
      this.retractedTotal = rt;
    }
    this.updateImbalance(now);
  }

  private updateImbalance(now: number): void {
    const fresh = [...this.ranks.values()].filter((r) => now - r.at <= RANK_STALE_MS);
    if (fresh.length < 2) {
      for (const r of this.ranks.values()) r.slowSince = null;
      return;
    }
    for (const r of fresh) {
      const others = fresh.filter((x) => x !== r).map((x) => x.stat.genThroughput ?? 0);
      const med = median(others);
      const g = r.stat.genThroughput ?? 0;
      if (med > 0 && g < med / 2) r.slowSince ??= now;
      else r.slowSince = null;
    }
  }

  /** Requests running or queued, from /metrics when there is one, else from the latest stat lines. */
  /**
   * Requests running or queued, from /metrics when there is one, else from the latest stat lines: one replica
   * counted once (PP stages print the same batch), however long ago its line came. A node with only prefill lines
   * (PD prefill): their queue; its requests in flight are transfers, not running ones (its /v1/loads says 0).
   */
  private pending(now: number): { running: number; queued: number; source: string } {
    const m = this.lastObs?.metrics;
    if (m && (m.runningReqs !== null || m.queueReqs !== null))
      return { running: m.runningReqs ?? 0, queued: m.queueReqs ?? 0, source: m.source ?? '/metrics' };
    if (this.ranks.size === 0 && this.prefillRanks.size > 0)
      return { running: 0, queued: sumFreshRanks(this.prefillRanks.values(), now, Infinity).queueReqs, source: 'the last prefill line' };
    const t = sumFreshRanks(this.ranks.values(), now, Infinity);
    return { running: t.runningReqs, queued: t.queueReqs, source: 'the last stat line' };
  }

  /** A prefill-only node's figures now ("1,234 input tok/s · 3 in flight · 0 queued"), or null when it is not one
   *  or its prefill lines are not fresh. */
  private prefillServing(now: number, freshMs: number): string | null {
    if (this.ranks.size > 0 || this.lastPrefillWorkAt === null || now - this.lastPrefillWorkAt > freshMs) return null;
    let input = 0;
    let inflight = 0;
    let queued = 0;
    for (const r of this.prefillRanks.values()) {
      if (now - r.at > freshMs) continue;
      input += r.stat.inputThroughput ?? 0;
      const f = r.stat.extra['#inflight-req'];
      inflight += typeof f === 'number' ? f : 0;
      queued += r.stat.queueReqs ?? 0;
    }
    return `prefill ${Math.round(input)} input tok/s · ${inflight} in flight · ${queued} queued`;
  }

  /** The state now. */
  verdict(now: number): StateVerdict {
    if (this.fatal)
      return {
        state: 'crashed',
        reason: `${this.fatal.cls}: ${this.fatal.line}`,
        class: this.fatal.cls,
        line: this.fatal.line,
        ...(this.fatal.exitCode !== undefined ? { exitCode: this.fatal.exitCode } : {}),
      };
    if (this.draining)
      return this.gone
        ? { state: 'stopped', reason: `stopped after a graceful drain: ${this.draining.line}`, class: null, line: this.draining.line }
        : { state: 'stopping', reason: this.draining.line, class: null, line: this.draining.line };
    // a 2025 watchdog line names no soft flag; its process going shows it was the hard one
    if (this.gone && this.hang)
      return { state: 'crashed', reason: `the server process is gone after: ${this.hang.line}`, class: 'hang', line: this.hang.line };
    if (this.gone) return { state: 'crashed', reason: 'the server process is gone', class: 'crash', line: null };
    if (this.hang) return { state: 'stalled', reason: this.hang.line, class: 'hang', line: this.hang.line };
    const o = this.lastObs;
    const h = o?.health ?? null;
    const inFlight = o?.healthInFlightSince ?? null;
    const limit = o?.healthLimitMs ?? 20_000;
    if (inFlight !== null && now - inFlight >= limit)
      return {
        state: 'unhealthy',
        reason: `/health has not answered for ${Math.round((now - inFlight) / 1000)} s`,
        class: 'hang',
        line: null,
      };
    // a 503 or refusal polled while it started, judged after its ready line arrived: not unhealthy
    // and in its first seconds after the ready line a 503 or a "starting" answer is its warm-up still settling
    // (a poll racing the ready line on another channel), not a hang: a real one lasts well past this.
    const settling =
      this.readyAt !== null && now - this.readyAt < READY_SETTLE_MS && (h?.health === 'unhealthy' || h?.health === 'starting');
    const stale = settling || (h?.at !== undefined && this.readyAt !== null && h.at < this.readyAt);
    if (h && this.ready && !stale) {
      const deadAlive = h.health === 'dead' && o?.alive && now - (this.deadSince ?? now) >= this.tune.deadGraceMs;
      if (h.health === 'unhealthy' || h.health === 'starting' || deadAlive)
        return { state: 'unhealthy', reason: `/health: ${h.detail || h.health}`, class: 'hang', line: null };
      if (h.health === 'healthy' && (h.durationMs ?? 0) > limit)
        return { state: 'unhealthy', reason: `/health took ${Math.round(h.durationMs! / 1000)} s`, class: 'hang', line: null };
    }
    if (!this.ready) return { state: 'starting', reason: h ? `/health: ${h.detail || h.health}` : 'loading', class: null, line: null };
    const p = this.pending(now);
    const work = p.running + p.queued;
    if (work > 0 && this.lastStatAt !== null) {
      const silentFor = now - this.lastStatAt;
      const limit = Math.max(this.tune.silentMinMs, (this.spacingMs ?? 1000) * this.tune.silentIntervals);
      // an idle scheduler prints nothing either: a silence counts only with evidence of pending work
      // (/metrics, or a queue on the last line, or more than one request running on it)
      const evidence = p.source.startsWith('/') || p.queued > 0 || p.running > 1;
      if (evidence && silentFor > limit)
        return {
          state: 'stalled',
          reason: `no stat line for ${Math.round(silentFor / 1000)} s while ${p.running} requests run and ${p.queued} wait (${p.source})`,
          class: 'hang',
          line: null,
        };
      if (this.lastTokensAt !== null && now - this.lastTokensAt > this.tune.noTokensMs)
        return {
          state: 'stalled',
          reason: `no generated tokens for ${Math.round((now - this.lastTokensAt) / 1000)} s while ${work} requests wait`,
          class: 'hang',
          line: null,
        };
    }
    const freshMs = Math.max(this.tune.silentMinMs, (this.spacingMs ?? 1000) * 3);
    const fresh = this.lastStatAt !== null && now - this.lastStatAt <= freshMs;
    const prefill = this.prefillServing(now, freshMs);
    if (prefill) return { state: 'serving', reason: prefill, class: null, line: null };
    // no stat lines (--log-level warning, a PD prefill node): the figure of /metrics, /v1/loads or /server_info
    const gen = this.genThroughput(now) || (o?.metrics?.genThroughput ?? 0);
    if ((fresh && gen > 0) || (o?.metrics?.genThroughput ?? 0) > 0 || (fresh && p.running > 0))
      return { state: 'serving', reason: `${Math.round(gen)} tok/s · ${p.running} running · ${p.queued} queued`, class: null, line: null };
    if (!this.everServed) return { state: 'ready', reason: 'ready, no requests yet', class: null, line: null };
    return { state: 'idle', reason: 'ready, nothing running or queued', class: null, line: null };
  }

  /** Sum over the DP ranks of the latest decode throughput (ranks silent for 2 minutes count 0). */
  genThroughput(now: number): number {
    return sumFreshRanks(this.ranks.values(), now).genThroughput;
  }

  /** Latest per-rank figures, for samples. */
  figures(now: number): {
    genThroughput: number;
    runningReqs: number;
    queueReqs: number;
    tokenUsage: number | null;
    acceptLen: number | null;
  } {
    const t = sumFreshRanks(this.ranks.values(), now);
    let usage: number | null = null;
    for (const r of this.ranks.values())
      if (now - r.at <= RANK_STALE_MS && r.stat.tokenUsage !== null) usage = Math.max(usage ?? 0, r.stat.tokenUsage);
    const m = this.lastObs?.metrics;
    return {
      genThroughput: t.genThroughput || m?.genThroughput || 0,
      runningReqs: this.ranks.size ? t.runningReqs : (m?.runningReqs ?? 0),
      queueReqs: this.ranks.size ? t.queueReqs : (m?.queueReqs ?? 0),
      tokenUsage: usage ?? m?.maxTokenUsage ?? null,
      acceptLen: t.acceptN ? t.acceptSum / t.acceptN : (m?.specAcceptLength ?? null),
    };
  }

  conditions(now: number): { value: ServerConditions; messages: Record<keyof ServerConditions, string> } {
    const kv = this.kvAt !== null && now - this.kvAt < this.tune.kvClearMs;
    if (!kv) this.kvLine = null;
    let slow: string | null = null;
    for (const [label, r] of this.ranks)
      if (r.slowSince !== null && now - r.slowSince >= this.tune.imbalanceMs)
        slow =
          `${label || 'rank'} at ${Math.round(r.stat.genThroughput ?? 0)} tok/s, under half the median of ` +
          `its peers for ${Math.round((now - r.slowSince) / 1000)} s`;
    if (slow === null && this.peerSlowSince !== null && now - this.peerSlowSince >= this.tune.imbalanceMs)
      slow =
        `${Math.round(this.genThroughput(now))} tok/s, under half the median of the node's other instances ` +
        `for ${Math.round((now - this.peerSlowSince) / 1000)} s`;
    if (this.acceptLowSince !== null && now - this.acceptLowSince >= this.tune.acceptDropMs) this.acceptDropped = true;
    return {
      value: { kv: kv ? 'kv-pressure' : 'ok', balance: slow ? 'dp-imbalance' : 'ok', spec: this.acceptDropped ? 'accept-drop' : 'ok' },
      messages: {
        kv: this.kvLine ?? 'KV cache pool full, requests retracted',
        balance: slow ?? '',
        spec: this.acceptDropped ? `accept length ${this.acceptFast?.toFixed(2)} against a baseline of ${this.acceptBase?.toFixed(2)}` : '',
      },
    };
  }
}

/** Past MAX_RANKS labels, the one seen longest ago goes. */
function evictStalest(m: Map<string, { at: number }>): void {
  if (m.size <= MAX_RANKS) return;
  let oldest: string | null = null;
  let at = Infinity;
  for (const [k, r] of m)
    if (r.at < at) {
      at = r.at;
      oldest = k;
    }
  if (oldest !== null) m.delete(oldest);
}

export function median(v: number[]): number {
  if (!v.length) return 0;
  const s = [...v].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
