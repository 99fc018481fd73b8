/**
 * Live monitoring of a node's SGLang servers: ONE tail channel per node follows every server log
 * (StatsTracker keeps the latest decode stats per rank), /health (and /metrics when enabled) through
 * the pooled connection, and generation progress (progress.json, .done_indices) read in one exec.
 * The extension's status bar and tree read from here; nothing here imports vscode.
 */
import { EventEmitter } from 'node:events';
import { errorMessage } from '../util/errors';
import { Health, MetricsSummary, authHeaders, checkHealth, fetchMetrics } from '../sglang/endpoints';
import { RemoteOperation, incomplete, runOperation, stderrTail } from '../remote/operation';
import { NO_HTTP_PORT, SglangServer, healthLimitMs, httpPortOf } from '../sglang/serverArgv';
import { isSecondaryRank } from '../gateway/multinode';
import type { ProbeResult } from './probe';
import { NodeProgress, parseProgressSection, progressComplete, progressScript } from './progressRead';
import { newNonce } from '../remote/sections';
import { RemoteTail, untailablePath } from '../remote/tail';
import { StatsTracker, formatLoad } from '../sglang/liveStats';
import { fetchLoads, lacksDecodeLines } from '../sglang/loads';
import { ReplayFilter } from './replayFilter';
import type { Transport } from '../ssh/transport';

/**
 * Reads progress.json (bounded) and summarizes .done_indices on the node (count, min, max) in one exec.
 * The markers carry a per-run nonce; a run without its end marker fails with `remote-incomplete`.
 */
export function progressOperation(
  progressPath: string | null,
  donePath: string | null,
  nodeName = 'the node',
): RemoteOperation<Omit<NodeProgress, 'readAt'>> {
  const nonce = newNonce();
  return {
    name: 'progress',
    command: 'sh -s',
    stdin: progressScript(progressPath, donePath, nonce),
    timeoutMs: 30_000,
    // progress.json is read up to 1 MiB; the .done_indices summary is one line.
    maxOutputBytes: 2 * 1024 * 1024,
    idempotent: true,
    parse: (r) => {
      const text = r.stdout.toString('utf8');
      if (!progressComplete(text, nonce)) {
        const err = stderrTail(r);
        throw incomplete(`Reading the job progress did not complete on ${nodeName} (exit ${r.code}${err ? `: ${err}` : ''}).`, r);
      }
      return parseProgressSection(text, { progressPath, donePath }, nonce);
    },
  };
}

interface HealthResult {
  health: Health | 'unknown';
  detail: string;
  /** when the answer (or the failure) came */
  at?: number;
  durationMs?: number;
}

interface ServerLive {
  port: number;
  logFile: string | null;
  health: Health | 'unknown';
  healthDetail: string;
  /** Text like "1,987 tok/s · 32 run · 0 queue · accept 2.71" from the log, else from /metrics. */
  stats: string;
  genThroughput: number;
  runningReqs: number;
  queueReqs: number;
  source: 'log' | 'metrics' | 'none';
  /** Why this server's log is not followed (its path cannot be tailed), else null. */
  logSkipped: string | null;
  /** From the live guard (serverState): starting … crashed, why, and the failure class. */
  state?: string;
  stateReason?: string;
  stateClass?: string | null;
}

export interface NodeLive {
  node: string;
  servers: ServerLive[];
  genThroughput: number;
  runningReqs: number;
  progress: NodeProgress | null;
  tailError: string | null;
  /** From the live guard: what is not OK on the node now ("`:30001` crashed — oom: …"). */
  problems?: Array<{ key: string; to: string; message: string; class?: string; port?: number; logFile?: string | null }>;
  /** Servers the user stopped through the extension (not problems): port and when (ms). */
  stoppedByYou?: Array<{ port: number; at: number }>;
  /** Gateway workers the extension removed (Release Node): neutral rows, not problems. */
  removedByYou?: Array<{ key: string; message: string; at: number }>;
  /** With a price per hour / rental deadline known: set, or told by the provider (core/node/spend.ts, rental.ts). */
  spend?: {
    perHour: number;
    total: number;
    outputTokens: number;
    perMillionTokens: number | null;
    perMillionTokensNow?: number | null;
    perMillionTokensWindow?: number | null;
    windowS?: number | null;
    since: string;
    /** Where the price came from ("runpodctl", "settings"). */
    priceSource?: string;
  };
  deadline?: { at: string; secondsLeft: number; jobEta: number | null; jobOverrunS: number | null; message: string; source?: string };
}

/** Follows one node. Call update(probe) after every probe; dispose() stops the tail channel. */
export class NodeMonitor {
  private tail: RemoteTail | null = null;
  private files: string[] = [];
  readonly stats = new StatsTracker();
  private servers: SglangServer[] = [];
  private health = new Map<number, HealthResult>();
  /** port → when its /health check started (one in flight per server; it may take up to 20 s) */
  private healthInFlight = new Map<number, number>();
  private metrics = new Map<number, MetricsSummary>();
  private progress: NodeProgress | null = null;
  private tailError: string | null = null;
  private skipped = new Map<string, string>();
  private readonly events = new EventEmitter();
  private disposed = false;
  private changeTimer: NodeJS.Timeout | null = null;
  /** a restarted tail re-sends the last lines of logs it followed before: delivered once only */
  private readonly replay = new ReplayFilter((file, line) => {
    this.stats.feed(file, line);
    this.events.emit('line', file, line);
    this.changed();
  });

  constructor(
    readonly node: string,
    private readonly t: Transport,
  ) {}

  /** Every line of every followed log, as it arrives (the live guard classifies them). */
  onLine(fn: (file: string, line: string) => void): () => void {
    this.events.on('line', fn);
    return () => this.events.off('line', fn);
  }

  /** Latest /health result of a server, and since when a check is in flight (null when none is). */
  healthOf(port: number): { result: HealthResult | null; inFlightSince: number | null } {
    return { result: this.health.get(port) ?? null, inFlightSince: this.healthInFlight.get(port) ?? null };
  }

  /** Latest /metrics summary of a server (servers launched with --enable-metrics), or, for a server without stat
   *  lines and metrics, its /v1/loads or /server_info figures (sglang/loads.ts). */
  metricsOf(port: number): MetricsSummary | null {
    return this.metrics.get(port) ?? null;
  }

  onDidChange(fn: () => void): () => void {
    this.events.on('change', fn);
    return () => this.events.off('change', fn);
  }

  private changed(): void {
    if (this.changeTimer || this.disposed) return;
    this.changeTimer = setTimeout(() => {
      this.changeTimer = null;
      this.events.emit('change');
    }, 500);
  }

  /** New probe: follow the servers' logs (restarting the tail only when the set of files changed), then poll. */
  async update(probe: ProbeResult): Promise<void> {
    if (this.disposed) return;
    this.servers = probe.servers;
    // A path that cannot be followed (any process on the node can name its log so) is skipped with
    // its reason; it must not stop the tail of every other server.
    const logs = [...new Set(probe.servers.map((s) => s.logFile).filter((f): f is string => !!f))];
    this.skipped = new Map(logs.map((f) => [f, untailablePath(f)] as const).filter((e): e is [string, string] => e[1] !== null));
    const files = logs.filter((f) => !this.skipped.has(f)).sort();
    if (files.join('\0') !== this.files.join('\0')) {
      this.tail?.stop();
      for (const f of this.files) if (!files.includes(f)) this.stats.forget(f);
      this.files = files;
      this.tail = null;
      if (files.length) {
        let tail: RemoteTail;
        try {
          tail = new RemoteTail(this.t, { files, initialLines: 60 });
        } catch (e) {
          this.tailError = errorMessage(e);
          this.changed();
          await this.poll(probe);
          return;
        }
        tail.on('event', (e) => {
          if (tail !== this.tail) return;
          if (e.type === 'line') this.replay.line(e.file, e.line);
          else if (e.kind === 'error') {
            this.tailError = e.message;
            this.changed();
          }
        });
        this.tail = tail;
        this.replay.tailStarting(files);
        tail
          .start()
          .catch((e) => {
            this.tailError = errorMessage(e);
            this.changed();
          })
          .finally(() => {
            if (tail === this.tail) this.replay.backlogDone();
          });
      }
    }
    await this.poll(probe);
  }

  private async poll(probe: ProbeResult): Promise<void> {
    const jobs: Array<Promise<unknown>> = [];
    for (const s of this.servers) {
      const httpPort = httpPortOf(s);
      if (httpPort === null) {
        this.health.set(s.port, { health: 'unknown', detail: NO_HTTP_PORT, at: Date.now() });
        continue;
      }
      // /health may take up to 20 s (SGLang's own limit): wait at most 5 s for it here, let it finish later
      if (!this.healthInFlight.has(s.port)) {
        const started = Date.now();
        this.healthInFlight.set(s.port, started);
        // the server's own limit (SGLANG_HEALTH_CHECK_TIMEOUT from its environment); with the health generation
        // off (SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0) /health answers at once: /health_generate still generates
        const limitMs = healthLimitMs(s);
        const check = checkHealth(this.t, s.host, httpPort, limitMs, {
          limitMs,
          path: s.healthGeneration === false ? '/health_generate' : '/health',
        })
          .then((h) => this.health.set(s.port, { ...h, at: Date.now(), durationMs: Date.now() - started }))
          .catch((e) => this.health.set(s.port, { health: 'unknown', detail: errorMessage(e), at: Date.now() }))
          .finally(() => {
            this.healthInFlight.delete(s.port);
            this.changed();
          });
        jobs.push(Promise.race([check, new Promise((r) => setTimeout(r, 5000).unref?.())]));
      }
      // A rank ≥ 1 of a multi-node server serves no requests: its throughput is rank 0's, counted there once.
      if (isSecondaryRank(s)) continue;
      if (!s.enableMetrics && lacksDecodeLines(s)) {
        // no stat lines and no /metrics: /v1/loads or /server_info carry its throughput and queue
        jobs.push(fetchLoads(this.t, s).then((l) => (l ? this.metrics.set(s.port, l) : this.metrics.delete(s.port))));
      }
      if (s.enableMetrics) {
        jobs.push(
          fetchMetrics(this.t, s.host, httpPort, { timeoutMs: 5000, headers: authHeaders(s) })
            .then((r) => {
              if (r.summary) this.metrics.set(s.port, r.summary);
              else if (r.status === 200) this.metrics.delete(s.port); // over METRICS_MAX_BYTES: no figures rather than stale ones
            })
            .catch(() => undefined),
        );
      }
    }
    const prog = probe.artifacts.find((a) => a.kind === 'progress' && /progress[^/]*\.json$/.test(a.path));
    const done = probe.artifacts.find((a) => a.kind === 'progress' && a.path.endsWith('/.done_indices'));
    if (probe.progress) {
      this.progress = probe.progress; // read in the probe's own exec
    } else if (prog || done) {
      jobs.push(
        runOperation(this.t, progressOperation(prog?.path ?? null, done?.path ?? null, this.node))
          .then((p) => (this.progress = { ...p, readAt: Date.now() }))
          .catch(() => undefined),
      );
    } else this.progress = null;
    await Promise.all(jobs);
    this.changed();
  }

  live(): NodeLive {
    const servers: ServerLive[] = this.servers.map((s) => {
      const st = s.logFile ? this.stats.stats(s.logFile) : undefined;
      const h = this.health.get(s.port) ?? { health: 'unknown' as const, detail: '' };
      const m = this.metrics.get(s.port);
      const fromLog = st && st.ranks.size > 0;
      let gen = 0;
      let run = 0;
      let queue = 0;
      let text = '';
      let source: ServerLive['source'] = 'none';
      if (fromLog) {
        const tot = this.stats.serverTotal(s.logFile!);
        gen = tot.genThroughput;
        run = tot.runningReqs;
        queue = tot.queueReqs;
        text = this.stats.describe(s.logFile!);
        source = 'log';
      } else if (m && m.genThroughput !== null) {
        gen = m.genThroughput;
        run = m.runningReqs ?? 0;
        queue = m.queueReqs ?? 0;
        text = formatLoad(gen, run, queue, m.specAcceptLength || null);
        source = 'metrics';
      }
      return {
        port: s.port,
        logFile: s.logFile,
        health: h.health,
        healthDetail: h.detail,
        stats: text,
        genThroughput: gen,
        runningReqs: run,
        queueReqs: queue,
        source,
        logSkipped: s.logFile ? (this.skipped.get(s.logFile) ?? null) : null,
      };
    });
    return {
      node: this.node,
      servers,
      genThroughput: servers.reduce((a, b) => a + b.genThroughput, 0),
      runningReqs: servers.reduce((a, b) => a + b.runningReqs, 0),
      progress: this.progress,
      tailError: this.tailError,
    };
  }

  dispose(): void {
    this.disposed = true;
    this.tail?.stop();
    this.tail = null;
    if (this.changeTimer) clearTimeout(this.changeTimer);
    this.events.removeAllListeners();
  }
}
