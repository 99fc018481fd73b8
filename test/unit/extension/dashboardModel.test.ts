import * as assert from 'node:assert/strict';
import type { HistoryEntry } from '../../../src/core/node/history';
import { nodeThroughput } from '../../../src/core/node/guard';
import { SESSION_GAP_S, buildDashboardModel, markerOf, nodeWindow, shortFigure, summarize } from '../../../src/extension/dashboardModel';

/** The Node Dashboard's model (issue 30, item 10): what the webview draws, shaped and tested here. */
const T0 = Date.parse('2026-12-02T22:00:00Z');
const utcClock = (ms: number) => new Date(ms).toISOString().slice(11, 16);

function sample(i: number, gens: Record<number, number>, extra: Partial<HistoryEntry> = {}): HistoryEntry {
  const servers = Object.entries(gens).map(([port, g]) => ({
    port: Number(port),
    state: g < 0 ? 'crashed' : 'serving',
    genThroughput: Math.abs(g),
    runningReqs: 4,
    queueReqs: 1,
    tokenUsage: 0.5,
    acceptLen: null,
  }));
  return {
    type: 'sample',
    node: 'n1',
    time: new Date(T0 + i * 60_000).toISOString(),
    reachable: true,
    message: null,
    genThroughput: nodeThroughput(servers),
    servers,
    gpus: [
      {
        index: 0,
        name: 'B200',
        state: 'ok',
        utilizationPct: 80 + i,
        memoryUsedMiB: 50,
        memoryTotalMiB: 100,
        powerW: 700,
        temperatureC: 60,
      },
      { index: 1, name: 'B200', state: 'ok', utilizationPct: 90, memoryUsedMiB: 10, memoryTotalMiB: 100, powerW: null, temperatureC: 55 },
    ],
    ...extra,
  };
}

/** Eleven samples a minute apart (10 min), two servers whose sum goes 12.1 k … 14.2 k, a crash at 22:02. */
function history(): HistoryEntry[] {
  const totals = [12100, 13000, 13500, 14200, 13800, 13900, 13700, 13600, 13950, 13850, 13900];
  const out: HistoryEntry[] = totals.map((t, i) =>
    sample(i, { 22795: t - 6000, 22796: 6000 }, { spend: { total: i, perMillionTokens: 0.8 + i / 100, perMillionTokensNow: 0.8 } }),
  );
  out.splice(3, 0, {
    type: 'transition',
    node: 'n1',
    time: new Date(T0 + 2 * 60_000 + 5000).toISOString(),
    subject: 'server',
    port: 22795,
    from: 'serving',
    to: 'crashed',
    class: 'crash',
    message: 'RuntimeError: boom',
  });
  out.splice(6, 0, {
    type: 'transition',
    node: 'n1',
    time: new Date(T0 + 4 * 60_000).toISOString(),
    subject: 'server',
    port: 22795,
    from: 'crashed',
    to: 'serving',
    message: 'serving again',
  });
  return out;
}

describe('dashboardModel: what the Node Dashboard draws', () => {
  it("the node-total tok/s chart comes first: per sample, the sum over servers (the guard's nodeThroughput)", () => {
    const m = buildDashboardModel({ node: 'n1', entries: history(), clock: utcClock });
    assert.equal(m.type, 'model');
    assert.equal(m.charts[0].id, 'total');
    assert.equal(m.charts[0].group, 'node');
    assert.equal(m.charts[0].series.length, 1);
    assert.deepEqual(m.charts[0].series[0].values, [12100, 13000, 13500, 14200, 13800, 13900, 13700, 13600, 13950, 13850, 13900]);
    assert.equal(m.times.length, 11);
    assert.equal(m.times[0], T0 / 1000);
    assert.equal(m.empty, null);
  });

  it("a crashed server counts 0 in the total, as in the guard's samples", () => {
    const m = buildDashboardModel({ node: 'n1', entries: [sample(0, { 1: 100, 2: -50 })] });
    assert.deepEqual(m.charts[0].series[0].values, [100]);
    assert.equal(nodeThroughput([{ state: 'crashed', genThroughput: 50 }]), 0);
  });

  it('the aria summary: "Node throughput: 13.9 k tok/s now, min 12.1 k, max 14.2 k over the last 10 min"', () => {
    const m = buildDashboardModel({ node: 'n1', entries: history() });
    assert.equal(m.charts[0].summary, 'Node throughput: 13.9 k tok/s now, min 12.1 k, max 14.2 k over the last 10 min');
    for (const c of m.charts) assert.ok(c.summary.length > 10, `${c.id} has a summary`);
  });

  it("$/Mtok second, the spend module's figure over the rental (one window)", () => {
    const m = buildDashboardModel({ node: 'n1', entries: history() });
    const cost = m.charts[1];
    assert.equal(cost.id, 'cost');
    assert.equal(cost.series[0].values[0], 0.8);
    assert.equal(cost.series[0].values[10], 0.9);
    assert.equal(cost.summary, 'Cost per million output tokens: $0.90 now, min $0.80, max $0.90 over the last 10 min');
  });

  it('the cost chart draws the window figure once there is one, never mixed with the "so far" one (issue 30, item 9)', () => {
    // "so far" on a node booted hours before its servers: 60,000 $/Mtok, then the window figure, 0.79
    const entries = Array.from({ length: 20 }, (_, i) =>
      sample(i, { 1: 14_000 }, { spend: { total: 480, perMillionTokens: 60_000 - i, perMillionTokensWindow: i < 5 ? null : 0.79 } }),
    );
    const cost = buildDashboardModel({ node: 'n1', entries }).charts.find((c) => c.id === 'cost')!;
    assert.deepEqual(cost.series[0].values.slice(0, 5), [null, null, null, null, null]);
    assert.ok(cost.series[0].values.slice(5).every((v) => v === 0.79));
    assert.match(cost.summary, /\$0\.79 now, min \$0\.79, max \$0\.79/);
  });

  it('no spend configured: no cost chart', () => {
    const m = buildDashboardModel({ node: 'n1', entries: [sample(0, { 1: 5 }), sample(1, { 1: 6 })] });
    assert.deepEqual(
      m.charts.map((c) => c.id),
      ['total', 'server-1', 'run', 'queue', 'usage', 'accept', 'gpu0', 'gpu1'],
    );
  });

  it('per-server small multiples, one series each, then the details behind the toggle', () => {
    const m = buildDashboardModel({ node: 'n1', entries: history() });
    const servers = m.charts.filter((c) => c.group === 'server');
    assert.deepEqual(
      servers.map((c) => c.id),
      ['server-22795', 'server-22796'],
    );
    assert.ok(servers.every((c) => c.small && c.series.length === 1));
    assert.equal(servers[0].series[0].values[0], 6100);
    assert.match(servers[1].summary, /^Server :22796 throughput: 6\.0 k tok\/s now/);
    const detail = m.charts.filter((c) => c.group === 'detail');
    assert.deepEqual(
      detail.map((c) => c.id),
      ['run', 'queue', 'usage', 'accept'],
    );
    assert.equal(detail[0].summary, 'Running requests per server, now: :22795 4, :22796 4');
    assert.equal(detail[3].summary, 'Accept length per server, now: :22795 none, :22796 none');
    // the order: node charts, then servers, details and GPUs
    const groups = m.charts.map((c) => c.group);
    assert.deepEqual([...new Set(groups)], ['node', 'server', 'detail', 'gpu']);
  });

  it('GPU charts name the GPU in every legend entry ("GPU 0 · util %")', () => {
    const m = buildDashboardModel({ node: 'n1', entries: history() });
    const g = m.charts.filter((c) => c.group === 'gpu');
    assert.deepEqual(
      g.map((c) => c.id),
      ['gpu0', 'gpu1'],
    );
    assert.deepEqual(
      g[0].series.map((s) => s.name),
      ['GPU 0 · util %', 'GPU 0 · memory %', 'GPU 0 · power W/10', 'GPU 0 · °C'],
    );
    assert.deepEqual(g[0].series[1].values.slice(0, 2), [50, 50]);
    assert.deepEqual(g[1].series[2].values.slice(0, 2), [null, null], 'an unknown power is a gap, not 0');
    assert.equal(g[0].summary, 'GPU 0 utilisation: 90 % now, min 80, max 90 over the last 10 min');
  });

  it('markers carry labels "HH:MM :PORT crashed" in plain words; a recovery is not bad', () => {
    const m = buildDashboardModel({ node: 'n1', entries: history(), clock: utcClock });
    assert.deepEqual(
      m.markers.map((x) => [x.label, x.bad]),
      [
        ['22:02 :22795 crashed', true],
        ['22:04 :22795 serving', false],
      ],
    );
    assert.equal(m.markers[0].t, (T0 + 125_000) / 1000);
    const oom = markerOf(
      {
        type: 'transition',
        time: new Date(T0).toISOString(),
        subject: 'server',
        port: 30001,
        from: 'serving',
        to: 'crashed',
        class: 'oom',
      },
      utcClock,
    );
    assert.equal(oom.label, '22:00 :30001 crashed: out of GPU memory');
    const gpu = markerOf(
      { type: 'transition', time: new Date(T0).toISOString(), subject: 'gpu', gpu: 3, from: 'ok', to: 'gpu-lost' },
      utcClock,
    );
    assert.equal(gpu.label, '22:00 GPU 3 GPU lost');
    assert.equal(gpu.bad, true);
  });

  it('the default clock is local HH:MM', () => {
    const d = new Date(T0 + 125_000);
    const hhmm = `${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
    assert.match(buildDashboardModel({ node: 'n1', entries: history() }).markers[0].label, new RegExp(`^${hhmm} :22795 crashed$`));
  });

  it('markers older than the samples drawn are left out', () => {
    const entries = history();
    const m = buildDashboardModel({ node: 'n1', entries, maxPoints: 4, clock: utcClock });
    assert.equal(m.times.length, 4);
    assert.deepEqual(m.markers, []);
  });

  it('unreachable samples are gaps in the total, and the last one unreachable is the empty state with its reason', () => {
    const entries = [
      sample(0, { 1: 100 }),
      {
        type: 'sample',
        node: 'n1',
        time: new Date(T0 + 60_000).toISOString(),
        reachable: false,
        message: 'connect ECONNREFUSED 10.0.0.1:22',
      },
    ];
    const m = buildDashboardModel({ node: 'n1', entries });
    assert.deepEqual(m.charts[0].series[0].values, [100, null]);
    assert.deepEqual(m.empty, { reason: 'n1 is not reachable: connect ECONNREFUSED 10.0.0.1:22' });
  });

  it("no samples: the empty state says why; the fleet's failed probe wins with its reason", () => {
    const m = buildDashboardModel({ node: 'n1', entries: [] });
    assert.match(m.empty!.reason, /^No samples of n1 yet: /);
    assert.deepEqual(m.times, []);
    assert.equal(m.charts[0].summary, 'Node throughput: no values yet');
    const u = buildDashboardModel({ node: 'n1', entries: history(), reachable: { ok: false, reason: 'Timed out after 10 s' } });
    assert.deepEqual(u.empty, { reason: 'n1 is not reachable: Timed out after 10 s' });
    assert.equal(u.charts[0].id, 'total', 'the history is still drawn under the reason');
    assert.equal(buildDashboardModel({ node: 'n1', entries: history(), reachable: { ok: true } }).empty, null);
    const named = buildDashboardModel({
      node: 'n1',
      entries: [],
      reachable: { ok: false, reason: 'n1 (me@h:22) is unreachable: refused' },
    });
    assert.deepEqual(named.empty, { reason: 'n1 (me@h:22) is unreachable: refused' }, 'the node named once');
    assert.deepEqual(buildDashboardModel({ node: 'n1', entries: [], reachable: { ok: false } }).empty, { reason: 'n1 is not reachable' });
  });

  it('shortFigure and summarize', () => {
    assert.deepEqual([13900, 870, 42.25, 4.2, 0.35, 0, 2_500_000].map(shortFigure), ['13.9 k', '870', '42.3', '4.2', '0.35', '0', '2.5 M']);
    assert.equal(summarize('X', [1, null, 3], 30, String, 'u'), 'X: 3 u now, min 1, max 3 over the last 30 s');
    assert.equal(summarize('X', [null], 30, String), 'X: no values yet');
  });
});

describe('dashboard markers of deliberate stops (issue 43)', () => {
  it('a transition the user made is a neutral "stopped by you" marker, a crash stays red', () => {
    const clock = () => '10:59';
    const crash = { type: 'transition', time: '2026-12-04T10:59:00Z', subject: 'server', port: 30001, from: 'serving', to: 'crashed' };
    assert.equal(markerOf(crash as never, clock).bad, true);
    const mine = markerOf({ ...crash, byYou: true } as never, clock);
    assert.equal(mine.bad, false);
    assert.equal(mine.label, '10:59 :30001 stopped by you');
  });
});

describe("the node's time window, shared by every chart (issue 43, item 11)", () => {
  const at = (i: number) => sample(i, { 22795: 6000 });
  const minute = 60;

  it("yesterday's session is not drawn: the charts start at today's first sample and end now", () => {
    // 30 samples of a session 20 h ago, then 10 min of today's: the old one left today's servers a sliver
    const old = Array.from({ length: 30 }, (_, i) => at(i - 20 * 60));
    const today = Array.from({ length: 11 }, (_, i) => at(i));
    const now = T0 + 10 * 60_000 + 20_000;
    const m = buildDashboardModel({ node: 'n1', entries: [...old, ...today], now });
    assert.equal(m.times.length, 11);
    assert.equal(m.times[0], T0 / 1000);
    assert.deepEqual(m.range, { min: T0 / 1000, max: now / 1000 });
    // every chart one value per drawn time: all on the same axis
    for (const c of m.charts) for (const s of c.series) assert.equal(s.values.length, m.times.length, `${c.id} ${s.name}`);
    const server = m.charts.find((c) => c.id === 'server-22795')!;
    assert.ok(
      server.series[0].values.every((v) => v === 6000),
      'the server draws across the whole window',
    );
  });

  it("a server that started later than the node's window: its first value is inside the window, not squeezed", () => {
    const entries = Array.from({ length: 11 }, (_, i) => (i < 6 ? sample(i, {}) : at(i)));
    const m = buildDashboardModel({ node: 'n1', entries, now: T0 + 10 * 60_000 });
    const server = m.charts.find((c) => c.id === 'server-22795')!;
    assert.equal(
      server.series[0].values.findIndex((v) => v !== null),
      6,
    );
    assert.deepEqual(m.range, { min: T0 / 1000, max: T0 / 1000 + 10 * minute });
  });

  it('the window starts at the first sample where the node answered', () => {
    const down = (i: number) => ({ ...sample(i, {}), reachable: false, servers: [], gpus: [], message: 'refused' });
    const entries = [down(0), down(1), down(2), at(3), at(4)];
    const w = nodeWindow(entries, T0 / 1000 + 5 * minute);
    assert.equal(w.from, 3);
    assert.deepEqual(w.range, { min: T0 / 1000 + 3 * minute, max: T0 / 1000 + 5 * minute });
    assert.equal(nodeWindow([down(0), down(1)], T0 / 1000 + minute).from, 0, 'never answered: the whole session');
  });

  it("the node's boot (its uptime) starts the session: samples from before a reboot are not drawn", () => {
    // a reboot of 4 minutes (shorter than a session gap): the newest sample says the node is up 2 min
    const entries = [at(0), at(1), at(2), { ...at(6), uptimeS: 60 }, { ...at(7), uptimeS: 120 }];
    assert.equal(nodeWindow(entries, T0 / 1000 + 7 * minute).from, 3);
  });

  it('a session that is over ends at its last sample, not now', () => {
    const entries = [at(0), at(1), at(2)];
    const late = T0 / 1000 + 2 * minute + SESSION_GAP_S + 60;
    assert.deepEqual(nodeWindow(entries, late).range, { min: T0 / 1000, max: T0 / 1000 + 2 * minute });
    assert.deepEqual(nodeWindow([], late), { from: 0, range: null });
  });
});
