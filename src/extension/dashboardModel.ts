/**
 * What the Node Dashboard draws, shaped from the node's history: the node-total tok/s chart
 * first (the guard's own sum, `nodeThroughput`), then $ per million output tokens (the spend module's figure over
 * the rental so far: one window), then one small chart per server, the per-server details, and per-GPU charts
 * whose legends name the GPU. Event markers carry labels ("22:02 :22795 crashed"), every chart a sentence for
 * screen readers, and a node that is unreachable or has no samples yet gets an empty state with the reason.
 * The webview (media/dashboard.js) only draws this. Pure: no vscode import (unit-tested).
 */
import type { HistoryEntry } from '../core/node/history';
import { isOkValue, nodeThroughput } from '../core/node/guard';
import { plainState } from '../core/node/plainWords';
import { formatDuration } from '../core/util/format';

interface DashboardSeries {
  /** The legend's name ("node total", ":30001", "GPU 0 · util %"). */
  name: string;
  /** One value per entry of `DashboardModel.times`; null where there is none (a gap, never 0). */
  values: Array<number | null>;
}

interface DashboardChart {
  /** DOM id of the chart's box: "total", "cost", "server-30001", "run", "gpu0"… */
  id: string;
  title: string;
  /** node: total and cost, first; server: one small chart per server; detail: behind the per-server toggle; gpu. */
  group: 'node' | 'server' | 'detail' | 'gpu';
  /** Drawn small (small multiples). */
  small: boolean;
  series: DashboardSeries[];
  /** One sentence for screen readers: the canvas's aria-label. */
  summary: string;
}

interface DashboardMarker {
  /** Unix seconds (the charts' x). */
  t: number;
  /** "22:02 :22795 crashed" */
  label: string;
  /** Trouble (drawn red) rather than a recovery. */
  bad: boolean;
}

export interface DashboardModel {
  type: 'model';
  node: string;
  /** Unix seconds of the samples drawn (the shared x axis of every chart). */
  times: number[];
  /** The x window every chart of the node draws (unix seconds): the node's session, from its first sample with a
   *  value to now. Null when there are no samples. */
  range: { min: number; max: number } | null;
  charts: DashboardChart[];
  markers: DashboardMarker[];
  /** Set when there is nothing live to show: the node is unreachable or has no samples (with Retry). */
  empty: { reason: string } | null;
  /** Spend, deadline and problems in words (the extension's summary line). */
  text: string;
}

interface ModelInput {
  node: string;
  entries: readonly HistoryEntry[];
  /** The node's state now, when the caller knows it (the fleet's last probe). */
  reachable?: { ok: boolean; reason?: string };
  text?: string;
  /** At most this many samples, the newest (default 4000). */
  maxPoints?: number;
  /** "HH:MM" of a time (default: local time). */
  clock?: (ms: number) => string;
  /** Unix ms now (default Date.now()): where the charts' window ends. */
  now?: number;
}

/** Samples further apart than this belong to different sessions (the node or the watch was down in between). */
export const SESSION_GAP_S = 30 * 60;

/**
 * The node's time window: which samples are the node's current session and the x range every
 * chart of the node shares. The session starts at the node's boot (the newest sample's uptime) or after the last
 * gap of more than `gapS` without samples, whichever is later; the window starts at the first sample of it where
 * the node answered (before that no series holds a value) and ends now — or at the last sample when the session is
 * over (no sample for more than `gapS`). Older history is not drawn: a day-old session, or hours of a node with no
 * answer, left today's servers a sliver at the right edge of every chart. Pure.
 */
export function nodeWindow(
  samples: readonly HistoryEntry[],
  nowS: number,
  gapS = SESSION_GAP_S,
): { from: number; range: { min: number; max: number } | null } {
  const t = samples.map((s) => Date.parse(s.time) / 1000);
  if (!t.length) return { from: 0, range: null };
  let from = 0;
  for (let i = t.length - 1; i > 0; i--)
    if (t[i] - t[i - 1] > gapS) {
      from = i;
      break;
    }
  for (let i = samples.length - 1; i >= from; i--) {
    const up = samples[i].uptimeS;
    if (typeof up !== 'number' || !Number.isFinite(up) || up < 0) continue;
    const boot = t[i] - up;
    while (from < i && t[from] < boot - 1) from++;
    break;
  }
  // the first sample where the node answered; none: the whole session (its gaps are its message)
  const answered = samples.findIndex((s, i) => i >= from && s.reachable !== false);
  if (answered >= 0) from = answered;
  const last = t[t.length - 1];
  const max = nowS - last > gapS ? last : Math.max(nowS, last);
  return { from, range: { min: t[from], max: Math.max(max, t[from] + 1) } };
}

interface ServerRow {
  port: number;
  state: string;
  genThroughput: number;
  runningReqs?: number;
  queueReqs?: number;
  tokenUsage?: number | null;
  acceptLen?: number | null;
}

interface GpuRow {
  index: number;
  utilizationPct?: number | null;
  memoryUsedMiB?: number | null;
  memoryTotalMiB?: number | null;
  powerW?: number | null;
  temperatureC?: number | null;
}

const localClock = (ms: number): string => {
  const d = new Date(ms);
  return `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
};

/** "13.9 k", "870", "4.2", "0.35": a chart's figure, short. */
export function shortFigure(v: number): string {
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)} M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(1)} k`;
  if (a >= 100 || v === 0) return String(Math.round(v));
  if (a >= 10) return v.toFixed(1).replace(/\.0$/, '');
  return v.toFixed(2).replace(/0$/, '').replace(/\.0$/, '');
}

/** "Node throughput: 13.9 k tok/s now, min 12.1 k, max 14.2 k over the last 10 min" (null values skipped). */
export function summarize(
  what: string,
  values: ReadonlyArray<number | null>,
  spanS: number,
  fmt: (v: number) => string,
  unit = '',
): string {
  const xs = values.filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
  if (!xs.length) return `${what}: no values yet`;
  const now = xs[xs.length - 1];
  const over = spanS >= 60 ? ` over the last ${formatDuration(spanS)}` : spanS > 0 ? ` over the last ${Math.round(spanS)} s` : '';
  const u = unit ? ` ${unit}` : '';
  return `${what}: ${fmt(now)}${u} now, min ${fmt(Math.min(...xs))}, max ${fmt(Math.max(...xs))}${over}`;
}

const isSample = (e: HistoryEntry) => e.type === 'sample';
const rowsOf = <T>(v: unknown): T[] => (Array.isArray(v) ? (v as T[]) : []);
const lastOf = (xs: ReadonlyArray<number | null>): number | null => {
  for (let i = xs.length - 1; i >= 0; i--) if (xs[i] !== null) return xs[i];
  return null;
};
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** The subject of a transition in a marker's label: ":30001", "GPU 3", "/data", "job". */
function subjectOf(e: HistoryEntry): string {
  if (typeof e.port === 'number' && (e.subject === 'server' || e.subject === 'condition' || e.subject === undefined)) return `:${e.port}`;
  if (typeof e.gpu === 'number') return `GPU ${e.gpu}`;
  if (e.subject === 'disk' && typeof e.mount === 'string') return e.mount;
  if (e.subject === 'data' && typeof e.path === 'string') return e.path.split('/').pop() || e.path;
  if (e.subject === 'gateway') return typeof e.port === 'number' ? `gateway :${e.port}` : 'gateway';
  if (e.subject === 'job') return 'job';
  return '';
}

/** The marker of one transition: "22:02 :22795 crashed" (plain words, as in the alerts). */
export function markerOf(e: HistoryEntry, clock: (ms: number) => string = localClock): DashboardMarker {
  const ms = Date.parse(e.time);
  const to = String(e.to ?? '');
  const words = plainState(to, typeof e.class === 'string' ? e.class : null, typeof e.message === 'string' ? e.message : '');
  const subject = subjectOf(e);
  // A stop the user made (Stop/Restart Server, a salvage or release that stopped it) is no trouble: neutral.
  if (e.byYou === true) return { t: ms / 1000, label: [clock(ms), subject, 'stopped by you'].filter(Boolean).join(' '), bad: false };
  return { t: ms / 1000, label: [clock(ms), subject, words].filter(Boolean).join(' '), bad: !isOkValue(to) };
}

/** The dashboard's model of a node's history. */
export function buildDashboardModel(input: ModelInput): DashboardModel {
  const clock = input.clock ?? localClock;
  const all = input.entries.filter(isSample);
  // the node's session only, one window for every chart
  const win = nodeWindow(all.slice(-(input.maxPoints ?? 4000)), (input.now ?? Date.now()) / 1000);
  const samples = all.slice(-(input.maxPoints ?? 4000)).slice(win.from);
  const times = samples.map((s) => Date.parse(s.time) / 1000);
  const spanS = times.length > 1 ? times[times.length - 1] - times[0] : 0;
  const up = (s: HistoryEntry) => s.reachable !== false;
  const servers = (s: HistoryEntry) => rowsOf<ServerRow>(s.servers);
  const gpus = (s: HistoryEntry) => rowsOf<GpuRow>(s.gpus);
  const charts: DashboardChart[] = [];

  const total = samples.map((s) => (up(s) ? nodeThroughput(servers(s)) : null));
  charts.push({
    id: 'total',
    title: 'Node throughput (tok/s, all servers)',
    group: 'node',
    small: false,
    series: [{ name: 'node total', values: total }],
    summary: summarize('Node throughput', total, spanS, shortFigure, 'tok/s'),
  });

  // the window figure (stable at a constant rate, whenever the rental began); a history from before it has "so far"
  // only. Not mixed: "so far" on a node booted hours before its servers is orders of magnitude above the window's.
  const spendOf = (s: HistoryEntry) => s.spend as { perMillionTokens?: unknown; perMillionTokensWindow?: unknown } | undefined;
  const windowed = samples.some((s) => num(spendOf(s)?.perMillionTokensWindow) !== null);
  const cost = samples.map((s) => {
    const sp = spendOf(s);
    return up(s) && sp ? num(windowed ? sp.perMillionTokensWindow : sp.perMillionTokens) : null;
  });
  if (cost.some((v) => v !== null)) {
    const usd = (v: number) => `$${v.toFixed(2)}`;
    charts.push({
      id: 'cost',
      title: '$ per million output tokens (last 10 min)',
      group: 'node',
      small: false,
      series: [{ name: '$/Mtok', values: cost }],
      summary: summarize('Cost per million output tokens', cost, spanS, usd),
    });
  }

  const ports = [...new Set(samples.flatMap((s) => servers(s).map((x) => x.port)))]
    .filter((p) => typeof p === 'number')
    .sort((a, b) => a - b);
  const per = (port: number, f: (v: ServerRow) => number | null | undefined) =>
    samples.map((s) => {
      const v = servers(s).find((x) => x.port === port);
      return v ? (num(f(v)) ?? null) : null;
    });
  for (const port of ports) {
    const tps = per(port, (v) => (v.state === 'crashed' ? 0 : v.genThroughput));
    charts.push({
      id: `server-${port}`,
      title: `:${port} tok/s`,
      group: 'server',
      small: true,
      series: [{ name: `:${port}`, values: tps }],
      summary: summarize(`Server :${port} throughput`, tps, spanS, shortFigure, 'tok/s'),
    });
  }
  const detail = (id: string, title: string, what: string, f: (v: ServerRow) => number | null | undefined) => {
    const series = ports.map((p) => ({ name: `:${p}`, values: per(p, f) }));
    const summary = series.length
      ? `${what} per server, now: ${series.map((x) => `${x.name} ${lastOf(x.values) === null ? 'none' : shortFigure(lastOf(x.values)!)}`).join(', ')}`
      : `${what}: no servers`;
    charts.push({ id, title, group: 'detail', small: false, series, summary });
  };
  if (ports.length) {
    detail('run', 'Running requests per server', 'Running requests', (v) => v.runningReqs);
    detail('queue', 'Queued requests per server', 'Queued requests', (v) => v.queueReqs);
    detail('usage', 'KV token usage per server', 'KV token usage', (v) => v.tokenUsage);
    detail('accept', 'Accept length per server', 'Accept length', (v) => v.acceptLen);
  }

  // The data guard's shares over time: the worst output file of each sample, in %.
  if (samples.some((s) => Array.isArray(s.data) && s.data.length)) {
    const worst = (k: string) =>
      samples.map((s) => {
        const files = rowsOf<{ shares?: Record<string, unknown> }>(s.data);
        return files.length ? 100 * Math.max(...files.map((f) => num(f?.shares?.[k]) ?? 0)) : null;
      });
    const series = [
      { name: 'empty', values: worst('empty') },
      { name: 'same answer', values: worst('topResponse') },
      { name: 'looping', values: worst('repetitive') },
      { name: 'cut at length', values: worst('truncated') },
    ];
    charts.push({
      id: 'data',
      title: 'Data quality: % of the sampled answers (worst file)',
      group: 'detail',
      small: false,
      series,
      summary: summarize('Worst share of empty answers', series[0].values, spanS, shortFigure, '%'),
    });
  }

  const indexes = [...new Set(samples.flatMap((s) => gpus(s).map((g) => g.index)))]
    .filter((i) => typeof i === 'number')
    .sort((a, b) => a - b);
  for (const g of indexes) {
    const col = (f: (v: GpuRow) => number | null | undefined) =>
      samples.map((s) => {
        const v = gpus(s).find((x) => x.index === g);
        return v ? (num(f(v)) ?? null) : null;
      });
    const util = col((v) => v.utilizationPct);
    charts.push({
      id: `gpu${g}`,
      title: `GPU ${g}`,
      group: 'gpu',
      small: true,
      series: [
        { name: `GPU ${g} · util %`, values: util },
        {
          name: `GPU ${g} · memory %`,
          values: col((v) => (v.memoryTotalMiB && v.memoryUsedMiB != null ? (100 * v.memoryUsedMiB) / v.memoryTotalMiB : null)),
        },
        { name: `GPU ${g} · power W/10`, values: col((v) => (typeof v.powerW === 'number' ? v.powerW / 10 : null)) },
        { name: `GPU ${g} · °C`, values: col((v) => v.temperatureC) },
      ],
      summary: summarize(`GPU ${g} utilisation`, util, spanS, (v) => String(Math.round(v)), '%'),
    });
  }

  const t0 = times.length ? times[0] : -Infinity;
  const markers = input.entries
    .filter((e) => e.type === 'transition' && Date.parse(e.time) / 1000 >= t0 - 1)
    .map((e) => markerOf(e, clock));

  return {
    type: 'model',
    node: input.node,
    times,
    range: win.range,
    charts,
    markers,
    empty: emptyState(input, samples),
    text: input.text ?? '',
  };
}

/** Why there is nothing live to show (null: there is). */
function emptyState(input: ModelInput, samples: HistoryEntry[]): { reason: string } | null {
  const last = samples[samples.length - 1];
  // the probe's own message usually names the node already ("gpu-a (me@host:22) is unreachable: …"): said once
  const unreachable = (why: unknown) =>
    typeof why !== 'string' || !why
      ? `${input.node} is not reachable`
      : why.includes(input.node)
        ? why
        : `${input.node} is not reachable: ${why}`;
  if (input.reachable && !input.reachable.ok) return { reason: unreachable(input.reachable.reason) };
  if (last && last.reachable === false) return { reason: unreachable(last.message) };
  if (!samples.length)
    return {
      reason:
        `No samples of ${input.node} yet: the live guard records one after each probe of a node that runs SGLang servers ` +
        '(every few seconds while it answers).',
    };
  return null;
}
