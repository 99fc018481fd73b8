/**
 * Fleet scale: 20 nodes (20 aliases of one loopback sshd) refreshed concurrently — wall time within
 * 2× the slowest probe of the same refresh, one connection per node, and the event loop stays responsive.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { Fleet } from '../../src/core/node/fleet';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import type { SshTransport } from '../../src/core/ssh/transport';
import { SimNode, startSimNode } from '../helpers/simnode';

describe('fleet of 20 nodes', function () {
  this.timeout(180_000);
  let sim: SimNode;
  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: 'gsfleet', gpuCount: 2, startServers: true });
  });
  after(async () => sim?.stop());

  it('refreshes 20 nodes concurrently over one connection each, with a responsive event loop', async () => {
    const cfg = path.join(sim.sshd.dir, 'fleet_config');
    const hosts = Array.from({ length: 20 }, (_, i) => `gpu-node-${String(i + 1).padStart(2, '0')}`);
    writeFileSync(
      cfg,
      hosts
        .map((h) => `Host ${h}\n  HostName 127.0.0.1\n  Port ${sim.sshd.port}\n  User ${sim.user}\n  IdentityFile ${sim.sshd.clientKey}\n`)
        .join(''),
    );
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const fleet = new Fleet(pool);
    try {
      const nodes = listNodes({ sshConfigFile: cfg }).nodes;
      assert.equal(nodes.length, 20);
      fleet.setNodes(nodes);
      // Event-loop responsiveness: the largest gap between 20 ms ticks while refreshing.
      let maxLag = 0;
      let last = Date.now();
      const tick = setInterval(() => {
        const now = Date.now();
        maxLag = Math.max(maxLag, now - last - 20);
        last = now;
      }, 20);
      await fleet.refreshAll(); // connect (20 handshakes at once) — not part of the measurement
      maxLag = 0; // the lag measured is the refresh's, as the wall time is
      last = Date.now();
      const t0 = Date.now();
      await fleet.refreshAll();
      const wall = Date.now() - t0;
      clearInterval(tick);
      const durations = nodes.map((n) => fleet.status(n.name).probe?.durationMs ?? Infinity);
      const slowest = Math.max(...durations);
      for (const n of nodes) {
        const st = fleet.status(n.name);
        assert.equal(st.state, 'ok', `${n.name}: ${st.error?.message}`);
        assert.equal(st.probe?.gpus.length, 2);
        assert.equal((pool.get(n) as SshTransport).connectCount, 1, `${n.name} used one connection`);
      }
      console.log(
        `      20 nodes refreshed in ${wall} ms; slowest probe ${slowest} ms; fastest ${Math.min(...durations)} ms; max event-loop lag ${maxLag} ms`,
      );
      assert.ok(wall <= 2 * slowest + 50, `wall ${wall} ms vs slowest ${slowest} ms`);
      assert.ok(maxLag < 500, `event loop blocked for ${maxLag} ms`);
    } finally {
      fleet.dispose();
      pool.dispose();
    }
  });
});
