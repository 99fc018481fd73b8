/**
 * Live monitoring over a real sshd: the node total equals the sum of the simulator's configured
 * rates (within its jitter), health comes through the SSH port forward, progress is read.
 */
import assert from 'node:assert/strict';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { NodeMonitor } from '../../src/core/node/monitor';
import { listNodes } from '../../src/core/ssh/nodes';
import { runOperation } from '../../src/core/remote/operation';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { probeOperation } from '../../src/core/node/probe';
import { SimNode, startSimNode } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';

describe('live monitoring of a node', function () {
  this.timeout(120_000);
  let sim: SimNode;
  const RATE = 1800;
  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: 'gsmon', gpuCount: 4, genTokPerSec: RATE, enableMetrics: true });
  });
  after(async () => sim?.stop());

  it('sums the latest decode throughput of every server, reports health and progress', async () => {
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0];
    const t = pool.get(node);
    const mon = new NodeMonitor('simnode', t);
    try {
      const probe = await runOperation(t, probeOperation('simnode'));
      probe.servers = probe.servers.filter((s) => sim.layout.ports.includes(s.port));
      assert.equal(probe.servers.length, 4);
      await mon.update(probe);
      // decode lines from every log (with --enable-metrics, /metrics may give a figure first: on a loaded machine
      // the tails can lag the first poll, which is the fallback working, not the figure this test checks)
      await waitFor(
        'decode lines from every server',
        () => mon.live().servers.every((s) => s.source === 'log' && s.genThroughput > 0),
        30_000,
      );
      const live = mon.live();
      const expected = 4 * RATE;
      assert.ok(Math.abs(live.genThroughput - expected) <= expected * 0.06, `total ${live.genThroughput} vs ${expected}`);
      for (const s of live.servers) {
        assert.equal(s.health, 'healthy', `${s.port}: ${s.healthDetail}`);
        assert.equal(s.source, 'log');
        assert.match(s.stats, /tok\/s/);
      }
      assert.ok(live.runningReqs > 0);
      assert.ok(live.progress?.progress?.ok, 'progress.json read');
      assert.ok((live.progress?.doneIndices?.count ?? 0) > 0, '.done_indices summarized');
      // One channel holds every log: the pool's other channels stay free.
      await runOperation(t, probeOperation('simnode'));
    } finally {
      mon.dispose();
      pool.dispose();
    }
  });

  it('a server whose log path cannot be followed is skipped with a reason; the others keep their live stats', async () => {
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0];
    const t = pool.get(node);
    const mon = new NodeMonitor('simnode', t);
    try {
      const probe = await runOperation(t, probeOperation('simnode'));
      probe.servers = probe.servers.filter((s) => sim.layout.ports.includes(s.port));
      assert.equal(probe.servers.length, 4);
      // Any process on the node can name its log like this (the probe reads it from /proc/PID/fd/1).
      const bad = { ...probe.servers[0], pid: 999_999, port: 1, logFile: `${sim.home}/logs/evil\nname.log` };
      probe.servers.push(bad);
      await mon.update(probe);
      await waitFor(
        'decode lines from every followable server',
        () =>
          mon
            .live()
            .servers.filter((s) => s.port !== 1)
            .every((s) => s.source === 'log' && s.genThroughput > 0),
        30_000,
      );
      const live = mon.live();
      assert.equal(live.tailError, null);
      const skipped = live.servers.find((s) => s.port === 1)!;
      assert.match(String(skipped.logSkipped), /newline/);
      assert.equal(skipped.source, 'none');
      for (const s of live.servers.filter((x) => x.port !== 1)) {
        assert.equal(s.logSkipped, null);
        assert.equal(s.source, 'log');
        assert.match(s.stats, /tok\/s/);
      }
      // A later probe with the same set keeps following (the tail is not restarted into the same failure).
      const before = mon.live().genThroughput;
      await mon.update(probe);
      assert.ok(
        before > 0 &&
          mon
            .live()
            .servers.filter((s) => s.port !== 1)
            .every((s) => s.source === 'log'),
      );
    } finally {
      mon.dispose();
      pool.dispose();
    }
  });
});
