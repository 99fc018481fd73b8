/** NodeGuard: lines that arrive before a probe names their server. */
import assert from 'node:assert/strict';
import { GuardTransition, NodeGuard } from '../../../src/core/node/guard';
import { NodeMonitor } from '../../../src/core/node/monitor';
import type { ProbeResult } from '../../../src/core/node/probe';
import type { Transport } from '../../../src/core/ssh/transport';

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
