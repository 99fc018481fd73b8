/**
 * Live monitoring of a node's SGLang servers: ONE tail channel per node follows every server log
 * (StatsTracker keeps the latest decode stats per rank), /health (and /metrics when enabled) through
 * the pooled connection, and generation progress (progress.json, .done_indices) read in one exec.
 * The extension's status bar and tree read from here; nothing here imports vscode.
 */
import { EventEmitter } from 'node:events';
import { errorMessage } from '../util/errors';
import { Health, checkHealth, httpGet, metricsSummary, parseMetrics } from '../sglang/endpoints';
import type { RemoteOperation } from '../remote/operation';
import { runOperation } from '../remote/operation';
import type { SglangServer } from '../sglang/serverArgv';
import type { ProbeResult } from './probe';
import { ProgressInfo, parseProgressJson } from './jobProgress';
import { shq } from '../remote/quote';
import { RemoteTail, StatsTracker, untailablePath } from '../remote/tail';
import type { Transport } from '../ssh/transport';

export interface DoneIndicesSummary {
  path: string;
  count: number;
  lowest: number | null;
  highest: number | null;
  gaps: number;
}

export interface NodeProgress {
  progressFile: string | null;
  progress: ProgressInfo | null;
  doneIndices: DoneIndicesSummary | null;
  readAt: number;
}

/** Reads progress.json (bounded) and summarizes .done_indices on the node (count, min, max) in one exec. */
export function progressOperation(progressPath: string | null, donePath: string | null): RemoteOperation<Omit<NodeProgress, 'readAt'>> {
  const parts: string[] = [];
  if (progressPath) parts.push(`printf '@@P@@\\n'; head -c 1048576 -- ${shq(progressPath)} 2>&1`);
  if (donePath)
    parts.push(
      `printf '\\n@@D@@\\n'; awk 'BEGIN{n=0} /^[ \\t]*[0-9]+[ \\t]*$/ {v=$1+0; if(n==0||v<lo)lo=v; if(n==0||v>hi)hi=v; n++} END{printf "%d %s %s\\n", n, (n?lo:"-"), (n?hi:"-")}' < ${shq(donePath)} 2>&1`,
    );
  parts.push(`printf '\\n@@E@@\\n'`);
  return {
    name: 'progress',
    command: 'sh -s',
    stdin: parts.join('\n') + '\n',
    timeoutMs: 30_000,
    idempotent: true,
    parse(r) {
      const text = r.stdout.toString('utf8');
      const p = text.indexOf('@@P@@\n');
      const d = text.indexOf('\n@@D@@\n');
      const e = text.lastIndexOf('\n@@E@@\n');
      let progress: ProgressInfo | null = null;
      if (progressPath && p >= 0) progress = parseProgressJson(text.slice(p + 6, d >= 0 ? d : e >= 0 ? e : undefined));
      let doneIndices: DoneIndicesSummary | null = null;
      if (donePath && d >= 0) {
        const m = /^(\d+) (-?\d+|-) (-?\d+|-)/.exec(text.slice(d + 7));
        if (m) {
          const count = Number(m[1]);
          const lowest = m[2] === '-' ? null : Number(m[2]);
          const highest = m[3] === '-' ? null : Number(m[3]);
          doneIndices = {
            path: donePath,
            count,
            lowest,
            highest,
            gaps: lowest !== null && highest !== null ? Math.max(0, highest - lowest + 1 - count) : 0,
          };
        }
      }
      return { progressFile: progressPath, progress, doneIndices };
    },
  };
}

export interface ServerLive {
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
}

export interface NodeLive {
  node: string;
  servers: ServerLive[];
  genThroughput: number;
  runningReqs: number;
  progress: NodeProgress | null;
  tailError: string | null;
}

function fmtInt(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Follows one node. Call update(probe) after every probe; dispose() stops the tail channel. */
export class NodeMonitor {
  private tail: RemoteTail | null = null;
  private files: string[] = [];
  readonly stats = new StatsTracker();
  private servers: SglangServer[] = [];
  private health = new Map<number, { health: Health | 'unknown'; detail: string }>();
  private metrics = new Map<number, ReturnType<typeof metricsSummary>>();
  private progress: NodeProgress | null = null;
  private tailError: string | null = null;
  private skipped = new Map<string, string>();
  private readonly events = new EventEmitter();
  private disposed = false;
  private changeTimer: NodeJS.Timeout | null = null;

  constructor(
    readonly node: string,
    private readonly t: Transport,
  ) {}

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
          if (e.type === 'line') {
            this.stats.feed(e.file, e.line);
            this.changed();
          } else if (e.kind === 'error') {
            this.tailError = e.message;
            this.changed();
          }
        });
        this.tail = tail;
        tail.start().catch((e) => {
          this.tailError = errorMessage(e);
          this.changed();
        });
      }
    }
    await this.poll(probe);
  }

  private async poll(probe: ProbeResult): Promise<void> {
    const jobs: Array<Promise<unknown>> = [];
    for (const s of this.servers) {
      jobs.push(
        checkHealth(this.t, s.host, s.port, 5000)
          .then((h) => this.health.set(s.port, h))
          .catch((e) => this.health.set(s.port, { health: 'unknown', detail: errorMessage(e) })),
      );
      if (s.enableMetrics) {
        jobs.push(
          httpGet(this.t, s.host, s.port, '/metrics', { timeoutMs: 5000, maxBytes: 4 * 1024 * 1024 })
            .then((r) => {
              if (r.status === 200) this.metrics.set(s.port, metricsSummary(parseMetrics(r.body)));
            })
            .catch(() => undefined),
        );
      }
    }
    const prog = probe.artifacts.find((a) => a.kind === 'progress' && /progress[^/]*\.json$/.test(a.path));
    const done = probe.artifacts.find((a) => a.kind === 'progress' && a.path.endsWith('/.done_indices'));
    if (prog || done) {
      jobs.push(
        runOperation(this.t, progressOperation(prog?.path ?? null, done?.path ?? null))
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
        const tot = this.totalFor(s.logFile!);
        gen = tot.gen;
        run = tot.run;
        queue = tot.queue;
        text = this.stats.describe(s.logFile!);
        source = 'log';
      } else if (m && m.genThroughput !== null) {
        gen = m.genThroughput;
        run = m.runningReqs ?? 0;
        queue = m.queueReqs ?? 0;
        text = `${fmtInt(gen)} tok/s · ${fmtInt(run)} run · ${fmtInt(queue)} queue${m.specAcceptLength ? ` · accept ${m.specAcceptLength.toFixed(2)}` : ''}`;
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

  /** Sum over the DP ranks of one server's latest decode lines (fresh ones only, like StatsTracker.total). */
  private totalFor(file: string): { gen: number; run: number; queue: number } {
    const st = this.stats.stats(file);
    if (!st) return { gen: 0, run: 0, queue: 0 };
    const now = Date.now();
    let gen = 0;
    let run = 0;
    let queue = 0;
    for (const [rank, rec] of st.ranks) {
      const seen = st.rankSeenAt.get(rank) ?? 0;
      if (now - seen > 120_000) continue;
      gen += rec.genThroughput ?? 0;
      run += rec.runningReqs ?? 0;
      queue += rec.queueReqs ?? 0;
    }
    return { gen, run, queue };
  }

  dispose(): void {
    this.disposed = true;
    this.tail?.stop();
    this.tail = null;
    if (this.changeTimer) clearTimeout(this.changeTimer);
    this.events.removeAllListeners();
  }
}
