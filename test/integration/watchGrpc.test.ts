/**
 * A `--grpc-mode` server over a real sshd (issue 40 item 3): its port speaks gRPC (an HTTP/1.1 request reads
 * "Expected HTTP/"), so health and metrics are polled on its HTTP sidecar (`--metrics-http-port`): healthy, serving,
 * with throughput, in `watch`. Without a sidecar port the health says why it is unknown and the state still comes
 * from the log.
 */
import assert from 'node:assert/strict';
import { freeTestPorts } from '../helpers/ports';
import { useSimNode } from '../helpers/simnode';
import { Watch } from '../helpers/watchCli';
import { waitFor } from '../helpers/wait';
import { simShell } from '../helpers/simShell';

const INTERVAL_S = 2;

interface ServerSample {
  port: number;
  state: string;
  health: string;
  reason: string;
  genThroughput?: number | null;
  generationTokensTotal?: number | null;
}

describe('gpu-sessions watch: a --grpc-mode server (issue 40)', function () {
  this.timeout(240_000);
  const node = useSimNode({ user: 'gswgrpc', gpuCount: 2, genTokPerSec: 2000 });

  const { ssh, pidOf, argvOf, startInLog } = simShell(node.sim);

  it('health and throughput come from the HTTP sidecar; without one, health says why it is unknown', async () => {
    const sim = node.sim();
    const [p0, p1] = sim.layout.ports;
    // both servers again in gRPC mode, the way a user starts them behind the Model Gateway; p0 with a sidecar port
    const sidecar = await freeTestPorts(1);
    const a0 = argvOf(p0);
    const a1 = argvOf(p1);
    ssh(`kill -INT ${pidOf(p0)} ${pidOf(p1)}`);
    await waitFor('both stopped', () => ssh(`ls ~/.sim/run/ | wc -l`) === '0', 20_000);
    for (const [gpu, a, extra] of [
      [0, a0, `--grpc-mode --metrics-http-port ${sidecar} --enable-metrics`],
      [1, a1, '--grpc-mode'],
    ] as const)
      startInLog(gpu, `${a} ${extra}`);
    // the gRPC port does not speak HTTP/1.1
    await waitFor('the gRPC port listens', () => sim.sshd.ssh(`curl -s -m 2 http://127.0.0.1:${p0}/health`).status !== 7, 20_000);
    assert.notEqual(sim.sshd.ssh(`curl -s -m 2 http://127.0.0.1:${p0}/health`).status, 0);
    const w = new Watch(sim, ['--interval', String(INTERVAL_S)], { GPU_SESSIONS_CACHE_DIR: node.cache() });
    const server = (port: number) =>
      ((w.lastSample() as { servers?: ServerSample[] } | undefined)?.servers ?? []).find((s) => s.port === port);
    try {
      await waitFor(
        `p0 healthy and serving with throughput; seen ${JSON.stringify(server(p0))}; stderr ${w.stderr}`,
        () => {
          const s = server(p0);
          return !!s && s.health === 'healthy' && s.state === 'serving' && (s.generationTokensTotal ?? 0) > 0;
        },
        60_000,
      );
      await waitFor(`p1 serving from its log; seen ${JSON.stringify(server(p1))}`, () => server(p1)?.state === 'serving', 60_000);
      assert.equal(server(p1)!.health, 'unknown');
      assert.doesNotMatch(JSON.stringify(server(p1)), /Expected HTTP/);
    } finally {
      await w.stop();
    }
  });
});
