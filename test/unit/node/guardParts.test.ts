/**
 * The live guard's parts on recorded inputs: the server state machine (time passed in), lost-GPU parsing
 * (the healthy GPUs stay), spend / $ per million tokens / deadline arithmetic, and the history store's bounds.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ServerStateMachine } from '../../../src/core/sglang/serverState';
import { parseLostGpus } from '../../../src/core/node/nvidiaSmi';
import { WatchEconomics, deadlineAt, perMillion } from '../../../src/core/node/spend';
import { formatDuration } from '../../../src/core/util/format';
import { HistoryStore, historyFileName } from '../../../src/core/node/history';
import { GuardSample, GuardTransition, NodeGuard } from '../../../src/core/node/guard';
import { NodeMonitor } from '../../../src/core/node/monitor';
import type { ProbeResult } from '../../../src/core/node/probe';
import type { Transport } from '../../../src/core/ssh/transport';

const decode = (t: string, run: number, gen: number, queue = 0, extra = '') =>
  `[2026-03-01 ${t}] Decode batch, #running-req: ${run}, #token: 9000, token usage: 0.40,${extra} gen throughput (token/s): ${gen.toFixed(2)}, #queue-req: ${queue}, `;
const healthy = { alive: true, pid: 10, health: { health: 'healthy', detail: 'HTTP 200', durationMs: 30 } };

describe('ServerStateMachine', () => {
  it('serving, then a silent stall with queued requests, then back to serving', () => {
    const m = new ServerStateMachine(30000, { silentMinMs: 3000, silentIntervals: 3 });
    let t = 0;
    for (let i = 0; i < 10; i++, t += 1000) m.feedLine(decode('10:00:00', 32, 2000), t);
    m.observe(healthy, t);
    assert.equal(m.verdict(t).state, 'serving');
    m.feedLine(decode('10:00:10', 32, 0, 12), t);
    t += 5000;
    const v = m.verdict(t);
    assert.equal(v.state, 'stalled');
    assert.equal(v.class, 'hang');
    assert.match(v.reason, /no stat line/);
    m.feedLine(decode('10:00:15', 32, 1900), t);
    assert.equal(m.verdict(t).state, 'serving');
  });

  it('an idle server (last line with one request, then silence) is idle, not stalled', () => {
    const m = new ServerStateMachine(30000);
    let t = 0;
    for (const run of [32, 16, 8, 4, 2, 1]) m.feedLine(decode('10:00:00', run, 100 * run), (t += 1000));
    m.observe(healthy, t);
    assert.equal(m.verdict(t + 60_000).state, 'idle');
  });

  it('a crash burst takes its most specific class; a gone process is crashed; a restart starts over', () => {
    const m = new ServerStateMachine(30000);
    m.feedLine(decode('10:00:00', 32, 2000), 0);
    m.observe(healthy, 0);
    m.feedLine('[2026-03-01 10:00:01] Scheduler hit an exception: Traceback (most recent call last):', 1000);
    m.feedLine('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.', 1001);
    m.feedLine('[2026-03-01 10:00:01] Received sigquit from a child process. It usually means the child failed.', 1002);
    const v = m.verdict(1500);
    assert.equal(v.state, 'crashed');
    assert.equal(v.class, 'oom');
    m.observe({ alive: false, health: null }, 3000);
    assert.equal(m.verdict(3000).class, 'oom');
    m.observe({ ...healthy, pid: 11 }, 10_000);
    assert.notEqual(m.verdict(10_000).state, 'crashed');
  });

  it('/health: 503 after ready or no answer for 20 s is unhealthy; 503 before ready is starting', () => {
    const m = new ServerStateMachine(30000);
    m.observe({ alive: true, health: { health: 'starting', detail: 'HTTP 503' } }, 0);
    assert.equal(m.verdict(0).state, 'starting');
    m.feedLine('[2026-03-01 10:00:00] The server is fired up and ready to roll!', 100);
    m.observe({ alive: true, health: { health: 'starting', detail: 'HTTP 503' } }, 200);
    assert.equal(m.verdict(200).state, 'unhealthy');
    m.observe({ alive: true, health: { health: 'healthy', detail: 'HTTP 200' }, healthInFlightSince: 1000 }, 21_500);
    assert.equal(m.verdict(21_500).state, 'unhealthy');
  });

  it('/health refused while the process runs: a dying server is crashed with its class, unhealthy only if it stays so', () => {
    const dead = { health: 'dead', detail: 'connection closed: socket hang up' };
    const dying = new ServerStateMachine(30000);
    dying.feedLine('[2026-03-01 10:00:00] The server is fired up and ready to roll!', 0);
    dying.observe(healthy, 0);
    dying.observe({ alive: true, pid: 10, health: dead }, 4000); // the probe still saw it; /health already closed
    assert.notEqual(dying.verdict(4000).state, 'unhealthy', 'not a hang: it is dying');
    dying.feedLine('[rank0]:[E0301 10:00:04 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout', 4500);
    dying.observe({ alive: false, health: dead }, 8000);
    assert.equal(dying.verdict(8000).state, 'crashed');
    assert.equal(dying.verdict(8000).class, 'nccl');
    const refusing = new ServerStateMachine(30001);
    refusing.feedLine('[2026-03-01 10:00:00] The server is fired up and ready to roll!', 0);
    refusing.observe(healthy, 0);
    refusing.observe({ alive: true, pid: 10, health: dead }, 4000);
    refusing.observe({ alive: true, pid: 10, health: dead }, 8000);
    assert.notEqual(refusing.verdict(8000).state, 'unhealthy', 'within the grace');
    refusing.observe({ alive: true, pid: 10, health: dead }, 12_000);
    assert.equal(refusing.verdict(12_000).state, 'unhealthy');
    refusing.observe(healthy, 16_000);
    assert.notEqual(refusing.verdict(16_000).state, 'unhealthy');
  });

  it('DP rank under half the median of its peers for the imbalance time → dp-imbalance', () => {
    const m = new ServerStateMachine(30000, { imbalanceMs: 5000 });
    let t = 0;
    for (let i = 0; i < 8; i++, t += 1000) {
      for (const [dp, g] of [
        [0, 2000],
        [1, 2100],
        [2, 600],
      ])
        m.feedLine(decode('10:00:00', 32, g).replace(']', ` DP${dp}]`), t);
      m.observe(healthy, t);
    }
    const c = m.conditions(t);
    assert.equal(c.value.balance, 'dp-imbalance');
    assert.match(c.messages.balance, /DP2/);
  });
});

describe('lost GPUs', () => {
  it('keeps the healthy GPUs and infers the lost index from the gap', () => {
    const text =
      '0, NVIDIA B200, GPU-a, 183359, 1, 0, 30, 100.00\nUnable to determine the device handle for GPU00000000:43:00.0: Unknown Error\n2, NVIDIA B200, GPU-c, 183359, 1, 0, 30, 100.00\n';
    const lost = parseLostGpus(text, [0, 2]);
    assert.deepEqual(lost, [
      { index: 1, busId: '00000000:43:00.0', message: 'Unable to determine the device handle for GPU00000000:43:00.0: Unknown Error' },
    ]);
  });
});

describe('spend and deadline arithmetic', () => {
  const sample = (time: number, gen: number, uptimeS: number | null, tokens: number | null = null): GuardSample =>
    ({
      type: 'sample',
      node: 'n',
      time: new Date(time).toISOString(),
      reachable: true,
      message: null,
      genThroughput: gen,
      runningReqs: 1,
      servers: [],
      gpus: [],
      disks: [],
      job: { state: 'running', percent: 50, etaS: 7200, completed: 1, total: 2, outputTokens: null },
      uptimeS,
      generationTokensTotal: tokens,
    }) as GuardSample;

  it('$ per million tokens from the integrated throughput equals price / (rate × 3600) × 1e6', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const e = new WatchEconomics({ pricePerHour: 12.5, now: () => t0 });
    let last;
    for (let i = 0; i <= 60; i++) last = e.annotate(sample(t0 + i * 10_000, 14_000, null));
    const expected = (12.5 / (14_000 * 3600)) * 1e6;
    assert.ok(Math.abs(last!.spend!.perMillionTokens! - expected) < 1e-3, `${last!.spend!.perMillionTokens} vs ${expected}`);
    assert.ok(Math.abs(last!.spend!.total - 12.5 * (600 / 3600)) < 1e-3);
    assert.equal(last!.spend!.outputTokens, 14_000 * 600);
  });

  it('spend counts from the node boot (uptime); counters win over integration', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const e = new WatchEconomics({ pricePerHour: 10, now: () => t0 });
    e.annotate(sample(t0, 1000, 7200, 5_000_000));
    const r = e.annotate(sample(t0 + 3_600_000, 1000, 10_800, 8_600_000));
    assert.equal(r.spend!.total, 30);
    assert.equal(r.spend!.outputTokens, 8_600_000);
    assert.ok(Math.abs(r.spend!.perMillionTokens! - 10 / 3.6) < 1e-3);
  });

  it('deadline: seconds left, the job ETA against it, deadline-near once at the lead time', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const d = deadlineAt(new Date(now + 3600_000), now, 7200 + 1200);
    assert.equal(d.secondsLeft, 3600);
    assert.equal(d.jobOverrunS, 4800);
    assert.match(d.message, /job ends 1 h 20 min after the rental/);
    assert.equal(formatDuration(4800), '1 h 20 min');
    assert.equal(perMillion(1, 0), null);
    const e = new WatchEconomics({ deadline: new Date(now + 40 * 60_000), leadMs: 30 * 60_000, now: () => now });
    const a = e.annotate(sample(now, 1, null));
    assert.deepEqual(e.transitions(sample(now, 1, null), a), []);
    const later = sample(now + 11 * 60_000, 1, null);
    const b = e.annotate(later);
    const tr = e.transitions(later, b);
    assert.equal(tr.length, 1);
    assert.equal(tr[0].to, 'deadline-near');
    assert.deepEqual(e.transitions(later, b), [], 'once');
  });
});

describe('HistoryStore bounds', () => {
  it('keeps the file under maxBytes, entries in memory under maxEntries, drops entries older than maxAge, survives a reload', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-hist-'));
    try {
      let now = Date.UTC(2026, 0, 1);
      const h = new HistoryStore(dir, 'node/../x y', { maxBytes: 20_000, maxEntries: 50, maxAgeMs: 3600_000, now: () => now });
      assert.ok(!historyFileName('node/../x y').includes('/'));
      for (let i = 0; i < 2000; i++) {
        now += 1000;
        h.addSample({ type: 'sample', time: new Date(now).toISOString(), i, pad: 'x'.repeat(50) });
      }
      assert.ok(statSync(h.file).size <= 20_000, String(statSync(h.file).size));
      assert.equal(h.all().length, 50);
      const again = new HistoryStore(dir, 'node/../x y', { maxBytes: 20_000, maxEntries: 50, maxAgeMs: 3600_000, now: () => now });
      assert.equal(again.all().length, 50);
      assert.equal((again.all().pop() as unknown as { i: number }).i, 1999);
      now += 2 * 3600_000;
      assert.equal(new HistoryStore(dir, 'node/../x y', { maxAgeMs: 3600_000, now: () => now }).all().length, 0, 'older than 24 h');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('NodeGuard.attach (a reconnect replaces the monitor)', () => {
  const file = '/home/u/logs/sglang_gpu0.log';
  const probe = {
    servers: [{ port: 30000, pid: 10, logFile: file, modelPath: '/models/m' }],
    gpus: [],
    lostGpus: [],
    disks: [],
    artifacts: [],
    progress: null,
  } as unknown as ProbeResult;
  const fakeTransport = { label: 'n' } as unknown as Transport;

  it('keeps every state: a crashed server stays crashed, with no second transition', () => {
    let now = 0;
    const m1 = new NodeMonitor('n', fakeTransport);
    const g = new NodeGuard('n', m1, { now: () => now, settleMs: 0 });
    const seen: GuardTransition[] = [];
    g.onTransition((t) => seen.push(t));
    g.update(probe);
    for (let i = 0; i < 5; i++) {
      now += 1000;
      g.feedLine(file, decode('10:00:00', 8, 900));
    }
    g.update(probe);
    g.feedLine(file, '[2026-03-01 10:00:09] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.');
    now += 2000;
    g.update(probe);
    const crashes = () => seen.filter((t) => t.subject === 'server' && t.to === 'crashed');
    assert.equal(crashes().length, 1, JSON.stringify(seen));
    const m2 = new NodeMonitor('n', fakeTransport);
    g.attach(m2);
    now += 5000;
    g.update(probe);
    assert.equal(g.states().get('server:30000'), 'crashed');
    assert.equal(crashes().length, 1, 'no second alert after the reconnect');
    g.dispose();
    m1.dispose();
    m2.dispose();
  });
});
