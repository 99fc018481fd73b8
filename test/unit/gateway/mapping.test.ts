import assert from 'node:assert/strict';
import { mapFleetWorkers, mapLocalWorkers, workerAddress } from '../../../src/core/gateway/mapping';
import { isLoopback } from '../../../src/core/util/net';

const w = (url: string) => ({ url, node: null as string | null, serverPort: null as number | null });

describe('gateway worker ↔ server mapping', () => {
  it('parses worker URLs (IPv6, default ports, DP-aware @rank, grpc)', () => {
    assert.deepEqual(workerAddress('http://127.0.0.1:30001'), { host: '127.0.0.1', port: 30001 });
    assert.deepEqual(workerAddress('http://[::1]:30001/'), { host: '::1', port: 30001 });
    assert.deepEqual(workerAddress('http://10.0.0.7:30000@1'), { host: '10.0.0.7', port: 30000 });
    assert.deepEqual(workerAddress('https://gpu-a'), { host: 'gpu-a', port: 443 });
    assert.deepEqual(workerAddress('grpc://h:20000'), { host: 'h', port: 20000 });
    assert.equal(workerAddress('not a url'), null);
    assert.ok(isLoopback('localhost') && isLoopback('127.0.0.2') && !isLoopback('10.0.0.1'));
  });

  it('local: loopback or the node’s hostname, only onto a server listening on that port', () => {
    const ws = [w('http://127.0.0.1:30001'), w('http://gpu-a:30002'), w('http://127.0.0.1:39999'), w('http://10.0.0.9:30001')];
    mapLocalWorkers(ws, { node: 'a', hostname: 'gpu-a', servers: [{ port: 30001 }, { port: 30002 }] });
    assert.deepEqual(
      ws.map((x) => [x.node, x.serverPort]),
      [
        ['a', 30001],
        ['a', 30002],
        [null, null],
        [null, null],
      ],
    );
  });

  it('fleet: by HostName and probed servers; loopback reaches the gateway’s node first', () => {
    const ws = [w('http://10.0.0.2:30000'), w('http://127.0.0.1:30000'), w('http://10.0.0.3:30000'), w('http://10.0.0.4:31000')];
    mapFleetWorkers('gw', ws, [
      { node: 'gw', host: '10.0.0.1', servers: [{ port: 30000 }] },
      { node: 'b', host: '10.0.0.2', servers: [{ port: 30000 }] },
      { node: 'c', host: '10.0.0.3', servers: [] },
      { node: 'd', host: '10.0.0.4' },
    ]);
    assert.deepEqual(
      ws.map((x) => [x.node, x.serverPort]),
      [
        ['b', 30000],
        ['gw', 30000],
        [null, null], // c was probed: no server on that port (a rank ≥ 1 or a dead server is not a worker's server)
        ['d', 31000], // d not probed: its address alone
      ],
    );
  });
});

describe('worker URL hosts (issue 39, G7)', () => {
  it('a short name matches its full name; two different full names never match by their first label', async () => {
    const { sameHost } = await import('../../../src/core/gateway/mapping');
    assert.equal(sameHost('gpu-01', 'gpu-01.cluster.local'), true);
    assert.equal(sameHost('gpu-01.cluster.local', 'gpu-01'), true);
    assert.equal(sameHost('gpu-01.cluster.local', 'gpu-01.cluster.local'), true);
    assert.equal(sameHost('gpu-01.evil.example', 'gpu-01.cluster.local'), false);
    assert.equal(sameHost('gpu-02', 'gpu-01.cluster.local'), false);
  });
});
