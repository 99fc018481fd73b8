/**
 * The live guard of one node: "is it still earning?". It combines the probe (process list, GPUs, disks,
 * progress — one exec per interval), the monitor's log channel (every server log, one SSH channel) and its
 * /health and /metrics answers, runs one ServerStateMachine per server and watches the node's conditions:
 *
 *   server  starting | ready | serving | idle | stalled | unhealthy | crashed     (key: port)
 *   server conditions  kv-pressure | dp-imbalance | accept-drop, and back to ok    (key: port)
 *   gpu     ok | gpu-lost: one GPU lost while the others keep reporting           (key: gpu index)
 *   disk    ok | disk-full: under 5 % or 10 GiB free on a folder the job writes  (key: mount)
 *   node    ok | unreachable
 *   job     running | done: progress.json says done or reaches 100 %
 *
 * and emits one transition per change. Used by `gpu-sessions watch` and by the extension's alerts.
 * Nothing here imports vscode.
 */
import { GatewayWatch } from '../gateway/transitions';
import { EventEmitter } from 'node:events';
import * as posixPath from 'node:path/posix';
import { formatBytes } from '../util/format';
import { redactOutput } from '../util/redact';
import type { FailureClass } from '../sglang/logLines';
import {
  ServerStateMachine,
  ServerStateName,
  ServerStateTuning,
  StateVerdict,
  isBadState,
  median,
  verdictMessage,
} from '../sglang/serverState';
import type { NodeMonitor } from './monitor';
import { healthLimitMs } from '../sglang/serverArgv';
import type { DiskInfo, ProbeResult } from './probe';
import type { ProgressInfo } from './jobProgress';

/** Bounds of the lines kept for log files no known server writes yet. */
const UNCLAIMED_FILES = 32;
const UNCLAIMED_LINES = 200;
const UNCLAIMED_MAX_AGE_MS = 5 * 60_000;

/** Where a subject stands before anything is known of it (the `from` of its first transition). */
const FIRST_VALUE: Record<GuardSubject, string> = {
  server: 'starting',
  condition: 'ok',
  gpu: 'ok',
  disk: 'ok',
  node: 'ok',
  job: 'running',
  gateway: 'ready',
  data: 'data-ok',
};

/** `data`: an output file's data verdict (data-ok | data-suspect | data-degenerate), judged by core/data/watch.ts. */
type GuardSubject = 'server' | 'condition' | 'gpu' | 'disk' | 'node' | 'job' | 'data' | 'gateway';

export interface GuardTransition {
  type: 'transition';
  node: string;
  /** ISO 8601 */
  time: string;
  subject: GuardSubject;
  port?: number;
  gpu?: number;
  /** disk: the mount point; the folder the job writes is in `folder` */
  mount?: string;
  folder?: string;
  /** data: the output file */
  path?: string;
  from: string;
  to: string;
  class?: FailureClass;
  /** the log line or the reason, secrets redacted */
  message: string;
  /** server transitions: the server's log file (to open it at the line) */
  logFile?: string | null;
  /** gateway transitions of one worker: its URL (`port` is the gateway's) */
  worker?: string;
}

interface GuardOptions {
  tuning?: ServerStateTuning;
  /** Disk nearly full below this fraction free. Default 0.05. */
  diskMinFraction?: number;
  /** ... or below this many bytes free. Default 10 GiB. */
  diskMinBytes?: number;
  now?: () => number;
  /** Debounce after a failure line before judging (a traceback arrives as several lines). Default 1000 ms. */
  settleMs?: number;
}

interface GuardServerSample {
  port: number;
  pid: number | null;
  logFile: string | null;
  state: ServerStateName;
  reason: string;
  class: FailureClass | null;
  health: string;
  genThroughput: number;
  runningReqs: number;
  queueReqs: number;
  tokenUsage: number | null;
  acceptLen: number | null;
  kvPressure: boolean;
  dpImbalance: boolean;
  acceptDrop: boolean;
  /** This server's generation_tokens_total counter (/metrics), null when it has none (no --enable-metrics). */
  generationTokensTotal?: number | null;
}

export interface GuardSample {
  type: 'sample';
  node: string;
  time: string;
  reachable: boolean;
  message: string | null;
  genThroughput: number;
  runningReqs: number;
  servers: GuardServerSample[];
  gpus: Array<{
    index: number;
    name: string | null;
    state: 'ok' | 'gpu-lost';
    utilizationPct: number | null;
    memoryUsedMiB: number | null;
    memoryTotalMiB: number | null;
    powerW: number | null;
    temperatureC: number | null;
  }>;
  disks: Array<{ mount: string; folders: string[]; availBytes: number; sizeBytes: number; state: 'ok' | 'disk-full' }>;
  job: {
    state: 'running' | 'done' | 'unknown';
    percent: number | null;
    etaS: number | null;
    completed: number | null;
    total: number | null;
    outputTokens: number | null;
  };
  uptimeS: number | null;
  /** output tokens generated (from /metrics counters summed over servers), when known */
  generationTokensTotal: number | null;
}

interface GuardProblem {
  key: string;
  to: string;
  message: string;
  class?: string;
  port?: number;
  logFile?: string | null;
}

interface Value {
  value: string;
  message: string;
  class?: FailureClass;
  extra?: Partial<GuardTransition>;
}

/**
 * The node's throughput: the SUM of its servers' decode tok/s, a crashed server counting 0. The one place that
 * adds servers up — the guard's samples, the spend figures and the dashboard's node-total chart all use it.
 */
export function nodeThroughput(servers: ReadonlyArray<{ state: string; genThroughput: number }>): number {
  return servers.reduce((a, s) => a + (s.state === 'crashed' || s.state === 'stopped' ? 0 : s.genThroughput), 0);
}

/** States and conditions that are not trouble (no alert, no warning colour). */
export function isOkValue(v: string): boolean {
  return (
    v === 'ok' ||
    v === 'data-ok' ||
    v === 'running' ||
    v === 'serving' ||
    v === 'idle' ||
    v === 'ready' ||
    v === 'starting' ||
    v === 'draining' ||
    v === 'stopping' ||
    v === 'stopped'
  );
}

function jobIsDone(p: ProgressInfo | null | undefined): boolean {
  if (!p || !p.ok) return false;
  if (p.status && /^(done|finished|complete|completed|success|succeeded)$/i.test(p.status.trim())) return true;
  return p.percent !== null && p.percent >= 100;
}

/** When a /health check was sent: its answer describes the server as it was then (a 503 sent while it started
 *  may arrive after its ready line, over another channel). */
function healthSentAt(r: { at?: number; durationMs?: number }): number | undefined {
  return r.at === undefined ? undefined : r.at - (r.durationMs ?? 0);
}

export class NodeGuard {
  private readonly machines = new Map<number, ServerStateMachine>();
  private readonly serverInfo = new Map<number, { pid: number | null; logFile: string | null; alive: boolean; modelPath: string }>();
  private readonly values = new Map<string, Value>();
  private readonly events = new EventEmitter();
  private readonly now: () => number;
  private readonly opts: Required<Omit<GuardOptions, 'tuning' | 'now'>>;
  private readonly gpuSeen = new Map<number, string | null>();
  private probe: ProbeResult | null = null;
  private reachable = true;
  private unreachableMessage: string | null = null;
  private settleTimer: NodeJS.Timeout | null = null;
  /**
   * Lines of log files no known server writes yet (a server the next probe will list: its first lines, a crash
   * in its first seconds included, arrive before the probe names it). Replayed when a probe names the file.
   */
  /** The first judgement sets the baseline (what is bad then is the state, not a change). */
  private judgedOnce = false;
  private readonly unclaimed = new Map<string, Array<{ line: string; at: number }>>();
  private offLine: (() => void) | null = null;
  private disposed = false;
  private readonly gatewayWatch = new GatewayWatch();
  /** Multi-node servers headed here (core/gateway/rankWatch.ts): judged over the fleet, set by whoever sees it. */
  private rankValues: Array<[string, Value]> = [];

  constructor(
    readonly node: string,
    private monitor: NodeMonitor,
    private readonly guardOpts: GuardOptions = {},
  ) {
    this.now = guardOpts.now ?? Date.now;
    this.opts = {
      diskMinFraction: guardOpts.diskMinFraction ?? 0.05,
      diskMinBytes: guardOpts.diskMinBytes ?? 10 * 1024 ** 3,
      settleMs: guardOpts.settleMs ?? 1000,
    };
    this.offLine = monitor.onLine((file, line) => this.feedLine(file, line));
  }

  /**
   * Follow another monitor of the same node (its connection was replaced), keeping every state: a server that
   * crashed before stays crashed, with no second alert, and nothing that was fine is reported again.
   */
  attach(monitor: NodeMonitor): void {
    if (monitor === this.monitor) return;
    this.offLine?.();
    this.monitor = monitor;
    this.offLine = monitor.onLine((file, line) => this.feedLine(file, line));
  }

  onTransition(fn: (t: GuardTransition) => void): () => void {
    this.events.on('transition', fn);
    return () => this.events.off('transition', fn);
  }

  private machineFor(port: number): ServerStateMachine {
    let m = this.machines.get(port);
    if (!m) this.machines.set(port, (m = new ServerStateMachine(port, this.guardOpts.tuning)));
    return m;
  }

  /** A log line from the monitor's channel. */
  feedLine(file: string, line: string): void {
    const now = this.now();
    let claimed = false;
    for (const [port, info] of this.serverInfo) {
      if (info.logFile !== file) continue;
      claimed = true;
      const m = this.machineFor(port);
      m.feedLine(line, now);
    }
    if (!claimed) this.keepUnclaimed(file, line, now);
    // a failure line: judge soon (after the rest of its traceback), not only at the next poll
    if (
      !this.settleTimer &&
      /rror|xception|[Ww]atchdog|sigquit|SIGQUIT|failed|crashed|dead|NCCL|KV cache pool|out of memory|GPU|No live scheduler/.test(line)
    ) {
      this.settleTimer = setTimeout(() => {
        this.settleTimer = null;
        if (!this.disposed) this.evaluate();
      }, this.opts.settleMs);
    }
  }

  private keepUnclaimed(file: string, line: string, now: number): void {
    let q = this.unclaimed.get(file);
    if (!q) {
      if (this.unclaimed.size >= UNCLAIMED_FILES) this.unclaimed.delete(this.unclaimed.keys().next().value!);
      this.unclaimed.set(file, (q = []));
    }
    q.push({ line, at: now });
    if (q.length > UNCLAIMED_LINES) q.splice(0, q.length - UNCLAIMED_LINES);
  }

  /** A probe named the file's server: its lines so far, with the times they arrived, then it is followed live. */
  private replayUnclaimed(file: string | null, m: ServerStateMachine, now: number): void {
    const q = file ? this.unclaimed.get(file) : undefined;
    if (!q) return;
    this.unclaimed.delete(file!);
    for (const { line, at } of q) if (now - at <= UNCLAIMED_MAX_AGE_MS) m.feedLine(line, at);
  }

  /** After every probe (and monitor.update(probe)): observe everything, then judge. */
  update(probe: ProbeResult): void {
    const now = this.now();
    this.reachable = true;
    this.unreachableMessage = null;
    this.probe = probe;
    const listed = new Set<number>();
    for (const s of probe.servers) {
      listed.add(s.port);
      this.serverInfo.set(s.port, { pid: s.pid, logFile: s.logFile, alive: true, modelPath: s.modelPath ?? '' });
      const h = this.monitor.healthOf(s.port);
      this.machineFor(s.port).observe(
        {
          alive: true,
          pid: s.pid,
          health: h.result
            ? { health: h.result.health, detail: h.result.detail, durationMs: h.result.durationMs, at: healthSentAt(h.result) }
            : null,
          healthInFlightSince: h.inFlightSince,
          healthLimitMs: healthLimitMs(s),
          metrics: this.monitor.metricsOf(s.port),
        },
        now,
      );
      // after observe: a new pid on the port starts the machine over, then its first lines count
      this.replayUnclaimed(s.logFile, this.machineFor(s.port), now);
    }
    for (const [port, info] of this.serverInfo) {
      if (listed.has(port)) continue;
      info.alive = false;
      this.machineFor(port).observe({ alive: false, health: null }, now);
    }
    for (const g of probe.gpus) this.gpuSeen.set(g.index, g.name);
    for (const l of probe.lostGpus ?? []) if (l.index !== null && !this.gpuSeen.has(l.index)) this.gpuSeen.set(l.index, null);
    this.updatePeers(now);
    this.evaluate();
  }

  /**
   * The fleet's word on the multi-node servers whose rank 0 runs here (`ranks:<port>` → ok | rank-lost), from a
   * RankWatch over every watched node's probe; replaces the last set and judges.
   */
  setRanks(values: ReadonlyArray<[string, Value]>): void {
    this.rankValues = [...values];
    this.evaluate();
  }

  /** The poll could not reach the node. */
  setUnreachable(message: string): void {
    this.reachable = false;
    this.unreachableMessage = message;
    this.evaluate();
  }

  /** Manual DP (one single-rank instance per GPU, same model): a server under half its peers' median. */
  private updatePeers(now: number): void {
    const groups = new Map<string, number[]>();
    for (const [port, info] of this.serverInfo) {
      if (!info.alive) continue;
      const k = info.modelPath;
      groups.set(k, [...(groups.get(k) ?? []), port]);
    }
    for (const ports of groups.values()) {
      for (const port of ports) {
        const m = this.machineFor(port);
        const others = ports.filter((p) => p !== port);
        if (others.length < 2 || m.verdict(now).state !== 'serving') {
          m.peerSlowSince = null;
          continue;
        }
        const med = median(others.map((p) => this.machineFor(p).genThroughput(now)));
        const g = m.genThroughput(now);
        if (med > 0 && g < med / 2) m.peerSlowSince ??= now;
        else m.peerSlowSince = null;
      }
    }
  }

  /** Folders the job writes: the servers' log folders and the progress files' folders. */
  private jobFolders(): string[] {
    const f = new Set<string>();
    for (const s of this.serverInfo.values()) if (s.logFile?.startsWith('/')) f.add(posixPath.dirname(s.logFile));
    const p = this.probe?.progress;
    if (p?.progressFile?.startsWith('/')) f.add(posixPath.dirname(p.progressFile));
    if (p?.doneIndices?.path.startsWith('/')) f.add(posixPath.dirname(p.doneIndices.path));
    return [...f].sort();
  }

  private diskOf(folder: string, disks: DiskInfo[]): DiskInfo | null {
    let best: DiskInfo | null = null;
    for (const d of disks) {
      const m = d.mount === '/' ? '/' : d.mount.replace(/\/+$/, '');
      if ((folder === m || folder.startsWith(m === '/' ? '/' : m + '/')) && (!best || m.length > best.mount.length)) best = d;
    }
    return best;
  }

  private diskRows(): GuardSample['disks'] {
    const disks = this.probe?.disks ?? [];
    const rows = new Map<string, GuardSample['disks'][number]>();
    for (const folder of this.jobFolders()) {
      const d = this.diskOf(folder, disks);
      if (!d) continue;
      let r = rows.get(d.mount);
      if (!r) {
        const avail = d.availKiB * 1024;
        const size = d.sizeKiB * 1024;
        const full = avail < this.opts.diskMinBytes || (size > 0 && avail / size < this.opts.diskMinFraction);
        rows.set(d.mount, (r = { mount: d.mount, folders: [], availBytes: avail, sizeBytes: size, state: full ? 'disk-full' : 'ok' }));
      }
      r.folders.push(folder);
    }
    return [...rows.values()];
  }

  /** Every subject's value now. */
  private current(now: number): Map<string, Value> {
    const out = new Map<string, Value>();
    out.set('node', {
      value: this.reachable ? 'ok' : 'unreachable',
      message: this.reachable ? 'reachable again' : (this.unreachableMessage ?? 'unreachable'),
      extra: { subject: 'node' },
    });
    if (!this.reachable) {
      // keep the last known values of everything else (nothing is known now)
      for (const [k, v] of this.values) if (k !== 'node') out.set(k, v);
      return out;
    }
    for (const [port, m] of this.machines) {
      const info = this.serverInfo.get(port);
      const v: StateVerdict = m.verdict(now);
      const base = { port, logFile: info?.logFile ?? null };
      out.set(`server:${port}`, {
        value: v.state,
        message: verdictMessage(v),
        ...(v.class && isBadState(v.state) ? { class: v.class } : {}),
        extra: { subject: 'server', ...base },
      });
      if (v.state === 'crashed') continue; // conditions of a dead server say nothing
      const c = m.conditions(now);
      out.set(`kv:${port}`, {
        value: c.value.kv,
        message: c.value.kv === 'ok' ? 'KV pressure is over' : c.messages.kv,
        ...(c.value.kv !== 'ok' ? { class: 'kv-pressure' as const } : {}),
        extra: { subject: 'condition', ...base },
      });
      out.set(`balance:${port}`, {
        value: c.value.balance,
        message: c.value.balance === 'ok' ? 'throughput back in line with its peers' : c.messages.balance,
        extra: { subject: 'condition', ...base },
      });
      out.set(`spec:${port}`, {
        value: c.value.spec,
        message: c.value.spec === 'ok' ? 'accept length back to its baseline' : c.messages.spec,
        extra: { subject: 'condition', ...base },
      });
    }
    for (const [k, v] of this.rankValues) out.set(k, v);
    const p = this.probe;
    if (p) {
      const reported = new Set(p.gpus.map((g) => g.index));
      for (const idx of this.gpuSeen.keys()) {
        const lost = p.lostGpus?.find((l) => l.index === idx);
        const gone = !reported.has(idx) && (p.gpus.length > 0 || !!lost);
        out.set(`gpu:${idx}`, {
          value: gone ? 'gpu-lost' : 'ok',
          message: gone ? (lost?.message ?? `GPU ${idx} is no longer reported by nvidia-smi`) : `GPU ${idx} reports again`,
          ...(gone ? { class: 'gpu' as const } : {}),
          extra: { subject: 'gpu', gpu: idx },
        });
      }
      for (const d of this.diskRows()) {
        const pct = d.sizeBytes > 0 ? ((100 * d.availBytes) / d.sizeBytes).toFixed(1) : '?';
        out.set(`disk:${d.mount}`, {
          value: d.state,
          message: `${d.mount}: ${formatBytes(d.availBytes)} free of ${formatBytes(d.sizeBytes)} (${pct} %); the job writes ${d.folders.join(', ')}`,
          extra: { subject: 'disk', mount: d.mount, folder: d.folders[0] },
        });
      }
      for (const [k, v] of this.gatewayWatch.values(p.gateways ?? [])) out.set(k, v);
      const prog = p.progress?.progress ?? null;
      if (prog?.ok) {
        const done = jobIsDone(prog);
        out.set('job', {
          value: done ? 'done' : 'running',
          message: done
            ? `the job is done (${prog.completed ?? '?'} of ${prog.total ?? '?'}${prog.status ? `, status "${prog.status}"` : ''}): ` +
              `the node is idle and billing`
            : `the job runs again (${prog.percent?.toFixed(1) ?? '?'} %)`,
          extra: { subject: 'job' },
        });
      }
    }
    return out;
  }

  /** Judge now: one transition per subject whose value changed. Returns them (also emitted). */
  evaluate(): GuardTransition[] {
    if (this.disposed) return [];
    const now = this.now();
    const cur = this.current(now);
    const emitted: GuardTransition[] = [];
    for (const [k, v] of cur) {
      let prev = this.values.get(k);
      this.values.set(k, v);
      // A subject first seen after the first judgement (a server launched later, a new disk) that is already
      // bad — a server that crashed in its first seconds — is a change too: from where it would have started.
      if (!prev && this.judgedOnce && !isOkValue(v.value)) prev = { value: FIRST_VALUE[v.extra?.subject ?? 'node'], message: '' };
      if (!prev || prev.value === v.value) continue;
      const t: GuardTransition = {
        type: 'transition',
        node: this.node,
        time: new Date(now).toISOString(),
        subject: v.extra?.subject ?? 'node',
        ...v.extra,
        from: prev.value,
        to: v.value,
        ...(v.class ? { class: v.class } : {}),
        message: redactOutput(v.message).slice(0, 2000),
      } as GuardTransition;
      emitted.push(t);
    }
    if (this.probe) this.judgedOnce = true; // the baseline is the first judgement that saw a probe
    for (const t of emitted) this.events.emit('transition', t);
    return emitted;
  }

  /** Current values (for --until and the status bar): subject key → value. */
  states(): Map<string, string> {
    return new Map([...this.values].map(([k, v]) => [k, v.value]));
  }

  /** What is not OK now (tree, status bar tooltip), secrets redacted. */
  problems(): GuardProblem[] {
    const out: GuardProblem[] = [];
    for (const [k, v] of this.values)
      if (!isOkValue(v.value))
        out.push({
          key: k,
          to: v.value,
          message: redactOutput(v.message).slice(0, 500),
          ...(v.class ? { class: v.class } : {}),
          ...(v.extra?.port !== undefined ? { port: v.extra.port, logFile: v.extra.logFile ?? null } : {}),
        });
    return out;
  }

  sample(): GuardSample {
    const now = this.now();
    const p = this.probe;
    const servers: GuardServerSample[] = [...this.machines.entries()]
      .sort((a, b) => a[0] - b[0])
      .map(([port, m]) => {
        const v = m.verdict(now);
        const f = m.figures(now);
        const c = m.conditions(now).value;
        const info = this.serverInfo.get(port);
        return {
          port,
          pid: info?.pid ?? null,
          logFile: info?.logFile ?? null,
          state: v.state,
          reason: redactOutput(v.reason).slice(0, 500),
          class: isBadState(v.state) ? v.class : null,
          health: this.monitor.healthOf(port).result?.health ?? 'unknown',
          ...f,
          kvPressure: c.kv !== 'ok',
          dpImbalance: c.balance !== 'ok',
          acceptDrop: c.spec !== 'ok',
          generationTokensTotal: this.monitor.metricsOf(port)?.generationTokensTotal ?? null,
        };
      });
    const prog = p?.progress?.progress ?? null;
    const reported = new Map((p?.gpus ?? []).map((g) => [g.index, g]));
    const metricsTokens = servers
      .map((s) => this.monitor.metricsOf(s.port)?.generationTokensTotal ?? null)
      .filter((x): x is number => x !== null);
    return {
      type: 'sample',
      node: this.node,
      time: new Date(now).toISOString(),
      reachable: this.reachable,
      message: this.unreachableMessage,
      genThroughput: nodeThroughput(servers),
      runningReqs: servers.reduce((a, s) => a + (s.state === 'crashed' || s.state === 'stopped' ? 0 : s.runningReqs), 0),
      servers,
      gpus: [...this.gpuSeen.keys()]
        .sort((a, b) => a - b)
        .map((index) => {
          const g = reported.get(index);
          return {
            index,
            name: g?.name ?? this.gpuSeen.get(index) ?? null,
            state: g ? ('ok' as const) : ('gpu-lost' as const),
            utilizationPct: g?.utilizationPct ?? null,
            memoryUsedMiB: g?.memoryUsedMiB ?? null,
            memoryTotalMiB: g?.memoryTotalMiB ?? null,
            powerW: g?.powerW ?? null,
            temperatureC: g?.temperatureC ?? null,
          };
        }),
      disks: this.diskRows(),
      job: {
        state: prog?.ok ? (jobIsDone(prog) ? 'done' : 'running') : 'unknown',
        percent: prog?.percent ?? null,
        etaS: prog?.etaS ?? null,
        completed: prog?.completed ?? null,
        total: prog?.total ?? null,
        outputTokens: prog?.outputTokens ?? null,
      },
      uptimeS: p?.uptimeS ?? null,
      generationTokensTotal: metricsTokens.length ? metricsTokens.reduce((a, b) => a + b, 0) : null,
    };
  }

  dispose(): void {
    this.disposed = true;
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.offLine?.();
    this.events.removeAllListeners();
  }
}
