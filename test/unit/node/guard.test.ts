/**
 * The live guard (core/node/guard): a reconnect keeps every state, lines that arrive before a probe names
 * their server, and no secret in its outputs.
 *
 * The guard's transitions and problems are outputs (notifications, the tree, the dashboard, watch): a
 * secret seen in a server's argv is scrubbed from a log line that repeats it, whatever its shape — not only
 * values that look like keys (sk-…, hf_…).
 */
import assert from 'node:assert/strict';
import { NodeGuard, type GuardTransition } from '../../../src/core/node/guard';
import { NodeMonitor } from '../../../src/core/node/monitor';
import type { ProbeResult } from '../../../src/core/node/probe';
import { serverFromArgv } from '../../../src/core/sglang/serverArgv';
import type { Transport } from '../../../src/core/ssh/transport';
import { decode } from '../../helpers/sglangLog';

const ADMIN = 'plain-looking-admin-9c41e07b';

describe('NodeGuard: no planted secret in a transition or a problem', () => {
  it('a crash line naming the --admin-api-key value shows <redacted>', async () => {
    let feed: (file: string, line: string) => void = () => undefined;
    const monitor = {
      onLine: (fn: (file: string, line: string) => void) => ((feed = fn), () => undefined),
      healthOf: () => ({ result: null, inFlightSince: null }),
      metricsOf: () => null,
    } as unknown as NodeMonitor;
    const server = serverFromArgv({
      pid: 4242,
      ppid: 1,
      argv: ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--port', '30000', `--admin-api-key=${ADMIN}`],
      exact: true,
      fd1: '/home/u/logs/s.log',
    })!;
    assert.ok(!server.args.join(' ').includes(ADMIN));
    const probe = { node: 'n', servers: [server], gpus: [], lostGpus: [], disks: [], artifacts: [] } as unknown as ProbeResult;
    const g = new NodeGuard('n', monitor, { settleMs: 5 });
    const seen: GuardTransition[] = [];
    g.onTransition((t) => seen.push(t));
    g.update(probe);
    feed('/home/u/logs/s.log', `[2026-12-01 10:00:00] Scheduler hit an exception: RuntimeError: admin key ${ADMIN} refused`);
    await new Promise((r) => setTimeout(r, 50));
    g.update(probe);
    const crash = seen.find((t) => t.to === 'crashed');
    assert.ok(crash, `transitions: ${seen.map((t) => t.to).join(', ')}`);
    assert.match(crash.message, /admin key <redacted> refused/);
    const problems = g.problems();
    assert.ok(problems.some((p) => p.to === 'crashed'));
    for (const p of problems) assert.ok(!p.message.includes(ADMIN), p.message);
    assert.ok(!JSON.stringify(g.sample()).includes(ADMIN));
    g.dispose();
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

/** NodeGuard: lines that arrive before a probe names their server. */
const file = '/home/u/logs/sglang_gpu3.log';
const probeWith = (servers: Array<{ port: number; pid: number; logFile: string }>) =>
  ({
    servers: servers.map((s) => ({ ...s, modelPath: '/models/m' })),
    gpus: [],
    lostGpus: [],
    disks: [],
    artifacts: [],
    progress: null,
  }) as unknown as ProbeResult;
const OOM = [
  '[2026-03-01 10:00:01] Scheduler hit an exception: Traceback (most recent call last):',
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.',
  '[2026-03-01 10:00:01] Received sigquit from a child process. It usually means the child failed.',
];

describe('NodeGuard: a server named by a probe only after its first lines', () => {
  const fakeTransport = { label: 'n' } as unknown as Transport;

  function run(feedBefore: (g: NodeGuard) => void): { seen: GuardTransition[]; g: NodeGuard; m: NodeMonitor; tick: (ms: number) => void } {
    let now = 0;
    const m = new NodeMonitor('n', fakeTransport);
    const g = new NodeGuard('n', m, { now: () => now, settleMs: 0 });
    const seen: GuardTransition[] = [];
    g.onTransition((t) => seen.push(t));
    g.update(probeWith([]));
    feedBefore(g);
    return { seen, g, m, tick: (ms) => (now += ms) };
  }

  it('a crash in its first seconds is judged with its class and line once the probe names it', () => {
    const { seen, g, m, tick } = run((g) => OOM.forEach((l) => g.feedLine(file, l)));
    tick(2000);
    g.update(probeWith([{ port: 30003, pid: 40, logFile: file }]));
    const crash = seen.find((t) => t.subject === 'server' && t.port === 30003 && t.to === 'crashed');
    assert.ok(crash, JSON.stringify(seen));
    assert.equal(crash.class, 'oom');
    assert.match(crash.message, /out of memory/);
    g.dispose();
    m.dispose();
  });

  it('lines of a file no server ever claims are kept bounded and judged for nobody', () => {
    const { seen, g, m, tick } = run((g) => {
      for (let i = 0; i < 5000; i++) g.feedLine(`/tmp/other-${i % 100}.log`, OOM[1]);
    });
    tick(2000);
    g.update(probeWith([{ port: 30004, pid: 41, logFile: '/home/u/logs/sglang_gpu4.log' }]));
    assert.equal(seen.filter((t) => t.to === 'crashed').length, 0, JSON.stringify(seen));
    const kept = (g as unknown as { unclaimed: Map<string, unknown[]> }).unclaimed;
    assert.ok(kept.size <= 32 && [...kept.values()].every((q) => q.length <= 200));
    g.dispose();
    m.dispose();
  });
});
