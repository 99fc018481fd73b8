import assert from 'node:assert/strict';
import type { GatewayWorker } from '../../../src/core/gateway/api';
import type { Gateway } from '../../../src/core/gateway/discover';
import { cancelledMessage, executeRelease, ReleasePlan } from '../../../src/core/flows/release';
import { RotationNode, routingLines, routingTo } from '../../../src/core/gateway/rotation';
import type { SglangServer } from '../../../src/core/sglang/serverArgv';
import { GpuSessionsError } from '../../../src/core/util/errors';

const worker = (url: string, node: string | null = null, serverPort: number | null = null): GatewayWorker => ({
  id: url,
  url,
  type: 'regular',
  healthy: true,
  status: 'ready',
  load: 0,
  bootstrapPort: null,
  job: null,
  node,
  serverPort,
});

const gateway = (pid: number, port: number, workers: GatewayWorker[]): Gateway => ({
  pid,
  port,
  metricsPort: null,
  version: null,
  profile: 'smg-1.x',
  policy: 'cache_aware',
  foundBy: 'title',
  title: 'smg::router',
  args: [],
  listening: [port],
  ready: true,
  readyReason: null,
  authRequired: false,
  workers,
  cwd: null,
  logFile: null,
});

describe('gateway rotation: which gateways route to a node or one of its servers', () => {
  // gw (10.0.0.1) runs a gateway over its own server (local mapping already done by the probe) and b's two servers;
  // b (10.0.0.2) runs a second gateway over its own :30001 (loopback); c has no gateway.
  const fleet = (): RotationNode[] => [
    {
      node: 'gw',
      host: '10.0.0.1',
      servers: [{ port: 30000 }],
      gateways: [
        gateway(100, 8000, [
          worker('http://127.0.0.1:30000', 'gw', 30000),
          worker('http://10.0.0.2:30001'),
          worker('http://10.0.0.2:30002'),
          worker('http://10.0.0.9:30001'),
        ]),
      ],
    },
    {
      node: 'b',
      host: '10.0.0.2',
      servers: [{ port: 30001 }, { port: 30002 }],
      gateways: [gateway(200, 9000, [worker('http://127.0.0.1:30001', 'b', 30001)])],
    },
    { node: 'c', host: '10.0.0.3', servers: [{ port: 30001 }] },
  ];

  it('a node: every gateway with a worker on any of its servers, with just those workers', () => {
    const rs = routingTo(fleet(), 'b');
    assert.deepEqual(
      rs.map((r) => [r.node, r.gateway.port, r.workers.map((w) => [w.url, w.node, w.serverPort])]),
      [
        [
          'gw',
          8000,
          [
            ['http://10.0.0.2:30001', 'b', 30001],
            ['http://10.0.0.2:30002', 'b', 30002],
          ],
        ],
        ['b', 9000, [['http://127.0.0.1:30001', 'b', 30001]]],
      ],
    );
  });

  it('one server: only the workers reaching that port', () => {
    const rs = routingTo(fleet(), 'b', 30002);
    assert.deepEqual(
      rs.map((r) => [r.node, r.workers.map((w) => w.url)]),
      [['gw', ['http://10.0.0.2:30002']]],
    );
    assert.deepEqual(
      routingTo(fleet(), 'gw', 30000).map((r) => [r.node, r.gateway.pid]),
      [['gw', 100]],
    );
  });

  it('nothing when no gateway routes there (another node, another port, an unknown address)', () => {
    assert.deepEqual(routingTo(fleet(), 'c'), []);
    assert.deepEqual(routingTo(fleet(), 'b', 31000), []);
    assert.deepEqual(routingTo([], 'b'), []);
  });

  it('leaves the probes as they were (maps copies) and names each gateway in the review lines', () => {
    const f = fleet();
    const before = JSON.stringify(f);
    const rs = routingTo(f, 'b');
    assert.equal(JSON.stringify(f), before);
    assert.deepEqual(routingLines(rs), [
      'Gateway :8000 on gw (smg-1.x): remove http://10.0.0.2:30001, http://10.0.0.2:30002',
      'Gateway :9000 on b (smg-1.x): remove http://127.0.0.1:30001',
    ]);
  });
});

describe('release: cancelled during the drain', () => {
  const server = (port: number) => ({ port, pid: 1000 + port, flags: {}, gpus: [] }) as unknown as SglangServer;

  it('says what was left, stops nothing, and carries the result so far', async () => {
    const plan: ReleasePlan = { node: 'b', targets: [], servers: [server(30001)], probes: new Map(), skipped: [] };
    const ac = new AbortController();
    const progress: string[] = [];
    let salvaged = false;
    setTimeout(() => ac.abort(), 700);
    const err = await executeRelease(plan, new Map([['b', {} as never]]), {
      drainTimeoutMs: 60_000,
      signal: ac.signal,
      onProgress: (m) => progress.push(m),
      loadOf: async () => 2,
      salvage: async () => {
        salvaged = true;
        return null;
      },
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(err instanceof GpuSessionsError && err.code === 'cancelled', String(err));
    assert.match(err.message, /^Release of b cancelled: no worker was removed from a gateway; server\(s\) :30001 still running on b/);
    assert.equal(salvaged, false);
    assert.ok(progress.includes('Draining :30001 (2 running)…'), progress.join('\n'));
    const drained = (err.detail?.partial as { drained: Array<{ port: number; runningAtStart: number }> }).drained;
    assert.deepEqual(
      drained.map((d) => [d.port, d.runningAtStart]),
      [[30001, 2]],
    );
  });

  it('names the workers already out of rotation', () => {
    assert.equal(
      cancelledMessage('b', [{ node: 'gw', port: 8000, removed: ['http://10.0.0.2:30001'] }], [server(30001), server(30002)]),
      'Release of b cancelled: http://10.0.0.2:30001 removed from the gateway :8000 on gw (they stay out of rotation); ' +
        'server(s) :30001 :30002 still running on b, nothing stopped.',
    );
  });
});

describe('gateway rotation: the last healthy worker (issue 43)', () => {
  it('warns when a removal leaves a gateway no healthy worker, not when another stays', async () => {
    const { lastWorkerLines } = await import('../../../src/core/gateway/rotation');
    const a = worker('http://127.0.0.1:30001', 'n', 30001);
    const b = { ...worker('http://127.0.0.1:30002', 'n', 30002), healthy: false };
    const fleet: RotationNode[] = [
      { node: 'n', host: '127.0.0.1', servers: [{ port: 30001 }, { port: 30002 }], gateways: [gateway(1, 30000, [a, b])] },
    ];
    assert.deepEqual(lastWorkerLines(routingTo(fleet, 'n', 30001)), [
      'Gateway :30000 on n: this is its last healthy worker; it answers 503 until another is added.',
    ]);
    const c = worker('http://127.0.0.1:30003', 'n', 30003);
    const fleet2: RotationNode[] = [{ ...fleet[0], servers: [{ port: 30001 }, { port: 30003 }], gateways: [gateway(1, 30000, [a, c])] }];
    assert.deepEqual(lastWorkerLines(routingTo(fleet2, 'n', 30001)), []);
  });
});
