/**
 * `gpu-sessions watch --json` over a real sshd against the simulated node: each fault mode of the simulator,
 * triggered at run time with `sim-fault` over ssh, gives exactly one transition with the right state and class
 * within two intervals (plus the one-second settle after a failure line); recovery gives one transition back;
 * the other GPUs stay listed when one is lost; spend grows with time at the simulator's rate.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { isOkValue } from '../../src/core/node/guard';
import { SimNode, startSimNode } from '../helpers/simnode';
import { CLI, Line, Watch } from '../helpers/watchCli';
import { waitFor } from '../helpers/wait';

const INTERVAL_S = 4;
/** two intervals, plus the guard's one-second settle and scheduling slack */
const WITHIN_MS = 2 * INTERVAL_S * 1000 + 2000;

const delays: string[] = [];

describe('gpu-sessions watch: fault modes of the simulated node', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let cache: string;
  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    cache = mkdtempSync(path.join(os.tmpdir(), 'gs-watch-cache-'));
    sim = await startSimNode({ user: 'gswatch', gpuCount: 6, genTokPerSec: 2000, enableMetrics: true });
  });
  after(async () => {
    if (delays.length) console.log(`    fault → transition: ${delays.join(', ')}`);
    await sim?.stop();
    if (cache) rmSync(cache, { recursive: true, force: true });
  });

  const fault = (cmd: string) => {
    const r = sim.sshd.ssh(`sim-fault ${cmd}`);
    assert.equal(r.status, 0, `sim-fault ${cmd}: ${r.stderr}`);
  };

  /** Triggers, then expects exactly one transition per expected key (and none else for those ports) in time. */
  async function phase(w: Watch, trigger: () => void, expected: Array<Partial<Line> & { key: (l: Line) => boolean }>) {
    const t0 = Date.now() - 50;
    trigger(); // (each sim-fault is one ssh round trip: the last fault is in place when this returns)
    const t1 = Date.now();
    await waitFor(
      `transitions ${JSON.stringify(expected.map(({ key: _k, ...e }) => e))}; seen ${JSON.stringify(w.transitions(t0))}`,
      () => expected.every((e) => w.transitions(t0).some(e.key)),
      WITHIN_MS,
    );
    // one more interval: nothing else may follow for the same subjects
    await new Promise((r) => setTimeout(r, INTERVAL_S * 1000 + 500));
    for (const e of expected) {
      const got = w.transitions(t0).filter(e.key);
      assert.equal(got.length, 1, `exactly one: ${JSON.stringify(got)}`);
      for (const k of ['from', 'to', 'class'] as const)
        if (e[k] !== undefined) assert.equal(got[0][k], e[k], `${k} of ${JSON.stringify(got[0])}`);
      const delay = Date.parse(got[0].time) - t1;
      assert.ok(delay <= WITHIN_MS, `in time: ${delay} ms for ${JSON.stringify(got[0])}`);
      delays.push(`${got[0].to}${got[0].class ? `/${got[0].class}` : ''} ${delay} ms`);
    }
  }

  it('crash, oom, nccl, stall, /health wedged, kv pressure, hang, dp-slow, accept drop, lost GPU, full disk, job done', async () => {
    const p = sim.layout.ports;
    const w = new Watch(sim, ['--interval', String(INTERVAL_S), '--price-per-hour', '12.5'], {
      GPU_SESSIONS_CACHE_DIR: cache,
      GPU_SESSIONS_WATCH_TUNING: 'imbalanceMs=2000,acceptDropMs=2000,silentMinMs=3000,silentIntervals=3,kvClearMs=4000',
    });
    try {
      await waitFor(
        `every server serving; stderr ${w.stderr}; lines ${JSON.stringify(w.lines.slice(-2))}`,
        () => {
          // (other suites' simulated servers on this machine are listed too: look at ours)
          const s = w.lastSample() as { servers?: Array<{ port: number; state: string }> } | undefined;
          const ours = (s?.servers ?? []).filter((x) => p.includes(x.port));
          return ours.length === 6 && ours.every((x) => x.state === 'serving');
        },
        40_000,
      );
      // While the servers warm up (the first sample may find one `ready` before its first decode line), the only
      // transitions are into a healthy state, at most one per server and state; once all serve, none for an interval.
      const ours = (l: Line) => l.port === undefined || p.includes(l.port);
      const warmUp = w.transitions(0).filter(ours);
      for (const l of warmUp) assert.ok(isOkValue(l.to!), `only healthy transitions while warming up: ${JSON.stringify(l)}`);
      const seen = new Set(warmUp.map((l) => `${l.subject}:${l.port}:${l.to}`));
      assert.equal(seen.size, warmUp.length, `no repeated warm-up transition: ${JSON.stringify(warmUp)}`);
      const steadyT = Date.now();
      await new Promise((r) => setTimeout(r, INTERVAL_S * 1000 + 500));
      assert.deepEqual(w.transitions(steadyT).filter(ours), [], 'no transition while everything runs');
      const startT = Date.now();

      const port =
        (n: number, subject = 'server') =>
        (l: Line) =>
          l.port === n && (l.subject ?? 'server') === subject;
      // 1. three crashes at once, each of its own class
      await phase(w, () => {
        fault(`${p[0]} crash`);
        fault(`${p[1]} oom`);
        fault(`${p[2]} nccl`);
      }, [
        { key: port(p[0]), from: 'serving', to: 'crashed', class: 'crash' },
        { key: port(p[1]), from: 'serving', to: 'crashed', class: 'oom' },
        { key: port(p[2]), from: 'serving', to: 'crashed', class: 'nccl' },
      ]);
      const crashMsg = w.transitions(startT).find(port(p[1]))!.message!;
      assert.match(crashMsg, /OutOfMemoryError|out of memory/);

      // 2. silent stall, /health wedged, KV pressure
      await phase(w, () => {
        fault(`${p[3]} stall`);
        fault(`${p[4]} health-wedged`);
        fault(`${p[5]} kv-pressure`);
      }, [
        { key: port(p[3]), from: 'serving', to: 'stalled', class: 'hang' },
        { key: port(p[4]), from: 'serving', to: 'unhealthy', class: 'hang' },
        { key: port(p[5], 'condition'), from: 'ok', to: 'kv-pressure', class: 'kv-pressure' },
      ]);
      // recovery: one transition back each
      await phase(w, () => {
        fault(`${p[3]} clear`);
        fault(`${p[4]} clear`);
        fault(`${p[5]} clear`);
      }, [
        { key: port(p[3]), from: 'stalled', to: 'serving' },
        { key: port(p[4]), from: 'unhealthy', to: 'serving' },
        { key: port(p[5], 'condition'), from: 'kv-pressure', to: 'ok' },
      ]);

      // 3. watchdog hang, one slow instance among its peers, speculative accept length drop
      await phase(w, () => {
        fault(`${p[3]} hang`);
        fault(`${p[4]} dp-slow`);
        fault(`${p[5]} accept-drop`);
      }, [
        { key: port(p[3]), from: 'serving', to: 'stalled', class: 'hang' },
        { key: port(p[4], 'condition'), from: 'ok', to: 'dp-imbalance' },
        { key: port(p[5], 'condition'), from: 'ok', to: 'accept-drop' },
      ]);
      assert.match(w.transitions(startT).filter(port(p[3])).pop()!.message!, /Watchdog timeout|Pyspy/);
      await phase(w, () => fault(`${p[3]} clear`), [{ key: port(p[3]), from: 'stalled', to: 'serving' }]);

      // 4. node conditions
      await phase(w, () => {
        fault('gpu-lost 1');
        fault('disk-full');
        fault('job-done');
      }, [
        { key: (l) => l.gpu === 1, from: 'ok', to: 'gpu-lost', class: 'gpu' },
        { key: (l) => l.subject === 'disk', from: 'ok', to: 'disk-full' },
        { key: (l) => l.subject === 'job', from: 'running', to: 'done' },
      ]);
      const s = w.lastSample() as unknown as {
        gpus: Array<{ index: number; state: string; memoryTotalMiB: number | null }>;
        spend: {
          perHour: number;
          total: number;
          perMillionTokens: number | null;
          perMillionTokensNow: number | null;
          outputTokens: number;
        };
      };
      assert.equal(s.gpus.length, 6, 'every GPU stays listed');
      assert.deepEqual(
        s.gpus.map((g) => g.state),
        ['ok', 'gpu-lost', 'ok', 'ok', 'ok', 'ok'],
      );
      assert.ok(
        s.gpus.filter((g) => g.state === 'ok').every((g) => g.memoryTotalMiB! > 0),
        'the healthy GPUs keep their figures',
      );

      // spend: grows with time; $ per million tokens consistent with the simulator's rate while watched
      const spends = w.lines.filter((l) => l.type === 'sample').map((l) => (l as unknown as typeof s).spend);
      assert.ok(spends.length >= 3);
      assert.equal(spends[0].perHour, 12.5);
      assert.ok(spends[spends.length - 1].total > spends[0].total, 'spend grows');
      assert.ok(spends[spends.length - 1].outputTokens > spends[0].outputTokens, 'tokens grow');
      const lastSpend = spends[spends.length - 1];
      const pm = lastSpend.perMillionTokens!;
      assert.ok(pm > 0, String(pm));
      // one period for both figures (issue 23): total / outputTokens × 1e6 on the same sample
      assert.ok(Math.abs(pm - (lastSpend.total / lastSpend.outputTokens) * 1e6) <= pm * 1e-6 + 1e-3, JSON.stringify(lastSpend));
      // the current rate: between the all-six and the two-servers rates (crashes, faults changed it)
      const at = (tps: number) => (12.5 / 3600 / tps) * 1e6;
      const now = lastSpend.perMillionTokensNow!;
      assert.ok(now >= at(6 * 2000 * 1.1) && now <= at(2 * 2000 * 0.9), `$${now}/M tokens vs ${at(12000)}..${at(4000)}`);
    } finally {
      const code = await w.stop();
      assert.equal(code, 130, `Ctrl-C exits 130; stderr: ${w.stderr}`);
      fault('clear');
      fault('job-running');
    }

    // history: the watch run's samples were kept
    const hist = spawn(process.execPath, [CLI, 'history', 'simnode', '--json'], { env: { ...process.env, GPU_SESSIONS_CACHE_DIR: cache } });
    let out = '';
    hist.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const rc = await new Promise((r) => hist.on('exit', r));
    assert.equal(rc, 0);
    const entries = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Line);
    assert.ok(entries.filter((e) => e.type === 'sample').length >= 5);
    assert.ok(entries.some((e) => e.type === 'transition' && e.to === 'crashed'));
  });

  it('--until done exits 0 once the job is done; an unreachable node exits 8', async () => {
    const w = new Watch(sim, ['--interval', '2', '--until', 'done'], { GPU_SESSIONS_CACHE_DIR: cache });
    await waitFor(`a first sample; stderr ${w.stderr}`, () => w.lines.length > 0, 40_000);
    assert.equal(w.exit, null, 'still watching while the job runs');
    fault('job-done');
    await waitFor('watch to exit', () => w.exit !== null, WITHIN_MS);
    assert.equal(w.exit, 0, w.stderr);
    assert.ok(w.lines.some((l) => l.type === 'transition' && l.to === 'done'));

    const bad = new Watch(sim, ['--interval', '1', '--until', 'crashed', '--timeout', '3'], { GPU_SESSIONS_CACHE_DIR: cache });
    await waitFor('a first sample', () => bad.lines.length > 0, 40_000);
    await sim.sshd.dispose();
    await waitFor(`watch to notice; stderr ${bad.stderr}`, () => bad.exit !== null, 60_000);
    assert.equal(bad.exit, 8, bad.stderr);
    assert.ok(bad.lines.some((l) => l.type === 'transition' && l.to === 'unreachable'));
  });
});
