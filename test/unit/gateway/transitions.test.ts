import assert from 'node:assert/strict';
import type { Gateway } from '../../../src/core/gateway/discover';
import { gatewaySummary, workerBad, workerDescription, workerState } from '../../../src/core/gateway/discover';
import { GatewayWatch } from '../../../src/core/gateway/transitions';

function gw(workers: Array<[string, boolean | null, string | null]>, ready: boolean | null = true): Gateway {
  return {
    pid: 1,
    port: 30000,
    metricsPort: 29000,
    version: null,
    profile: 'smg-1.x',
    policy: 'cache_aware',
    foundBy: 'title',
    title: 'smg::router',
    args: [],
    listening: [29000, 30000],
    ready,
    readyReason: ready ? null : 'insufficient healthy workers',
    authRequired: false,
    cwd: null,
    logFile: null,
    workers: workers.map(([url, healthy, status]) => ({
      id: url,
      url,
      type: 'regular',
      healthy,
      status,
      load: 0,
      bootstrapPort: null,
      job: null,
      node: null,
      serverPort: null,
    })),
  };
}

describe('gateway values for watch', () => {
  it('ready / unhealthy / draining / removed per worker; readiness from /readiness', () => {
    const gwWatch = new GatewayWatch();
    const v1 = new Map(
      gwWatch.values([
        gw([
          ['http://a:1', true, 'ready'],
          ['http://b:1', true, 'ready'],
        ]),
      ]),
    );
    assert.equal(v1.get('gateway:30000')?.value, 'ready');
    assert.equal(v1.get('gateway:30000:http://b:1')?.value, 'ready');
    const v2 = new Map(
      gwWatch.values([
        gw([
          ['http://a:1', false, 'not_ready'],
          ['http://b:1', true, 'draining'],
        ]),
      ]),
    );
    assert.equal(v2.get('gateway:30000:http://a:1')?.value, 'unhealthy');
    assert.equal(v2.get('gateway:30000:http://b:1')?.value, 'draining');
    const v3 = new Map(gwWatch.values([gw([['http://a:1', false, 'not_ready']], false)]));
    assert.equal(v3.get('gateway:30000:http://b:1')?.value, 'removed');
    assert.equal(v3.get('gateway:30000')?.value, 'not-ready');
    assert.match(v3.get('gateway:30000')!.message, /503/);
  });

  it('the tree row summary', () => {
    assert.equal(
      gatewaySummary(
        gw([
          ['http://a:1', true, 'ready'],
          ['http://b:1', true, 'ready'],
          ['http://c:1', true, 'ready'],
        ]),
      ),
      'Gateway :30000 · cache_aware · 3/3 healthy',
    );
    assert.equal(gatewaySummary(gw([['http://a:1', null, null]])), 'Gateway :30000 · cache_aware · 1 worker');
  });

  it("the tree's worker rows: state, load, job and the server the URL reaches; out of rotation is bad", () => {
    const [ready, draining, unknown] = gw([
      ['http://127.0.0.1:30001', true, 'ready'],
      ['http://b:1', true, 'draining'],
      ['http://c:1', null, null],
    ]).workers;
    ready.node = 'gpu-b';
    ready.serverPort = 30001;
    ready.load = 3;
    assert.equal(workerDescription(ready), 'ready · load 3 · → gpu-b :30001');
    draining.job = { type: 'RemoveWorker', status: 'pending', message: null };
    assert.equal(workerDescription(draining), 'draining · load 0 · RemoveWorker pending · no probed server');
    unknown.load = null;
    assert.equal(workerState(unknown), 'health unknown');
    assert.equal(workerDescription(unknown), 'health unknown · no probed server');
    assert.deepEqual([ready, draining, unknown].map(workerBad), [false, true, false]);
    assert.equal(workerState({ ...unknown, healthy: false }), 'unhealthy');
    assert.equal(workerBad({ ...unknown, healthy: false }), true);
  });
});
