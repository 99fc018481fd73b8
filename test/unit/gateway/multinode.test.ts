import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { foldMultiNode, headSummary, isSecondaryRank, rankPhrase } from '../../../src/core/gateway/multinode';
import { NodeMonitor } from '../../../src/core/node/monitor';
import type { ProbeResult } from '../../../src/core/node/probe';
import { LocalTransport } from '../../../src/core/ssh/transport';
import { serverFromArgv } from '../../../src/core/sglang/serverArgv';

const srv = (pid: number, args: string) =>
  serverFromArgv({ pid, ppid: 1, exact: true, argv: ['python3', '-m', 'sglang.launch_server', ...args.split(' ')] })!;

describe('multi-node servers', () => {
  const common = '--model-path /m/DeepSeek-V3 --tp 16 --nnodes 2 --dist-init-addr 10.0.0.2:25000 --port 30000';
  it('rank 1 folds into the rank-0 server: one server, 16 GPUs, no API of its own', () => {
    const r0 = srv(100, `${common} --node-rank 0`);
    const r1 = srv(200, `${common} --node-rank 1`);
    assert.equal(isSecondaryRank(r0), false);
    assert.equal(isSecondaryRank(r1), true);
    const one = srv(300, '--model-path /m/small --port 30001');
    const f = foldMultiNode([
      { node: 'a', servers: [r0, one] },
      { node: 'b', servers: [r1] },
    ]);
    assert.equal(f.length, 1);
    assert.deepEqual(f[0].head, { node: 'a', port: 30000, pid: 100 });
    assert.deepEqual(
      f[0].ranks.map((r) => [r.node, r.rank]),
      [
        ['a', 0],
        ['b', 1],
      ],
    );
    assert.equal(f[0].gpuCount, 16);
    assert.deepEqual(f[0].missingRanks, []);
  });

  it('a rank that is gone is a failure of the whole server', () => {
    const f = foldMultiNode([{ node: 'a', servers: [srv(100, `${common} --node-rank 0`)] }]);
    assert.deepEqual(f[0].missingRanks, [1]);
  });
});

describe('a rank ≥ 1 in a row and in the live monitor', () => {
  const common = '--model-path /m/DeepSeek-V3 --tp 16 --nnodes 2 --dist-init-addr 10.0.0.2:25000';
  it('reads "rank 1 of 2 nodes · API on rank 0 (host)"; rank 0 "rank 0 of 2 nodes"; a one-node server nothing', () => {
    assert.equal(rankPhrase(srv(1, `${common} --node-rank 1 --port 30000`)), 'rank 1 of 2 nodes · API on rank 0 (10.0.0.2)');
    assert.equal(rankPhrase(srv(1, `${common} --node-rank 0 --port 30000`)), 'rank 0 of 2 nodes');
    assert.equal(rankPhrase(srv(1, '--model-path /m/x --port 30000')), null);
  });

  it('the monitor asks a rank ≥ 1 nothing but /health: no /metrics, no /v1/loads, no throughput of its own', async () => {
    const paths: string[] = [];
    const http = createServer((req, res) => {
      paths.push(req.url ?? '');
      if (req.url === '/metrics') res.end('sglang:gen_throughput{tp_rank="0"} 1234\nsglang:num_running_reqs{tp_rank="0"} 7\n');
      else res.end('');
    });
    await new Promise<void>((r) => http.listen(0, '127.0.0.1', r));
    const port = (http.address() as AddressInfo).port;
    const m = new NodeMonitor('b', new LocalTransport());
    try {
      const r1 = srv(200, `${common} --node-rank 1 --port ${port} --enable-metrics`);
      await m.update({ servers: [r1], artifacts: [], progress: null } as unknown as ProbeResult);
      assert.ok(paths.includes('/health'), `asked: ${paths.join(' ')}`);
      assert.deepEqual(
        paths.filter((p) => p !== '/health'),
        [],
        'only /health',
      );
      assert.equal(m.live().genThroughput, 0);
      // the same server as a one-node server is polled for /metrics
      paths.length = 0;
      await m.update({
        servers: [srv(201, `--model-path /m/x --port ${port} --enable-metrics`)],
        artifacts: [],
        progress: null,
      } as unknown as ProbeResult);
      assert.ok(paths.includes('/metrics'), `asked: ${paths.join(' ')}`);
    } finally {
      m.dispose();
      http.close();
    }
  });
});

describe('the rank-0 row across the fleet (headSummary)', () => {
  const common = '--model-path /m/DeepSeek-V3 --tp 16 --nnodes 2 --dist-init-addr 10.0.0.2:25000 --port 30000';
  it('names the nodes and GPUs when every rank is seen, the missing rank otherwise; nothing for others', () => {
    const r0 = srv(100, `${common} --node-rank 0`);
    const r1 = srv(200, `${common} --node-rank 1`);
    assert.deepEqual(
      headSummary(
        [
          { node: 'a', servers: [r0] },
          { node: 'b', servers: [r1] },
        ],
        'a',
        r0,
      ),
      { text: '16 GPUs on a, b', missing: [] },
    );
    assert.deepEqual(headSummary([{ node: 'a', servers: [r0] }], 'a', r0), {
      text: "rank 1 of 2 not seen on the fleet's nodes",
      missing: [1],
    });
    assert.equal(headSummary([{ node: 'b', servers: [r1] }], 'b', r1), null);
    assert.equal(headSummary([{ node: 'a', servers: [srv(1, '--model-path /m/x')] }], 'a', srv(1, '--model-path /m/x')), null);
  });
});
