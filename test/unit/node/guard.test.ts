/**
 * The live guard (core/node/guard): a reconnect keeps every state, and no secret in its outputs.
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
