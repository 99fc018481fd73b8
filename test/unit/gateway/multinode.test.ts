import assert from 'node:assert/strict';
import { foldMultiNode, isSecondaryRank } from '../../../src/core/gateway/multinode';
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
