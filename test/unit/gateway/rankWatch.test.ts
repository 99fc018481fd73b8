import assert from 'node:assert/strict';
import { RankWatch } from '../../../src/core/gateway/rankWatch';
import { NodeGuard } from '../../../src/core/node/guard';
import { NodeMonitor } from '../../../src/core/node/monitor';
import { LocalTransport } from '../../../src/core/ssh/transport';
import { serverFromArgv } from '../../../src/core/sglang/serverArgv';

const srv = (pid: number, args: string) =>
  serverFromArgv({ pid, ppid: 1, exact: true, argv: ['python3', '-m', 'sglang.launch_server', ...args.split(' ')] })!;
const common = '--model-path /m/DeepSeek-V3 --tp 16 --nnodes 2 --dist-init-addr 10.0.0.2:25000 --port 30000';
const r0 = srv(100, `${common} --node-rank 0`);
const r1 = srv(200, `${common} --node-rank 1`);

describe('RankWatch: a rank ≥ 1 that goes is a failure of the rank-0 server', () => {
  it('ok while both run; rank-lost (crash) on the head node once rank 1 is gone; ok again when it is back', () => {
    const w = new RankWatch();
    const both = w.values([
      { node: 'a', servers: [r0] },
      { node: 'b', servers: [r1] },
    ]);
    assert.deepEqual([...both.keys()], ['a'], 'only the rank-0 node carries the value');
    assert.equal(both.get('a')![0][0], 'ranks:30000');
    assert.equal(both.get('a')![0][1].value, 'ok');
    const gone = w.values([
      { node: 'a', servers: [r0] },
      { node: 'b', servers: [] },
    ]);
    const [, v] = gone.get('a')![0];
    assert.equal(v.value, 'rank-lost');
    assert.equal(v.class, 'crash');
    assert.equal(v.extra.port, 30000);
    assert.match(v.message, /lost rank 1 \(on b\)/);
    const back = w.values([
      { node: 'a', servers: [r0] },
      { node: 'b', servers: [r1] },
    ]);
    assert.equal(back.get('a')![0][1].value, 'ok');
  });

  it('a rank never seen (its node not watched) or on an unreachable node is not judged lost', () => {
    const w = new RankWatch();
    assert.equal(w.values([{ node: 'a', servers: [r0] }]).get('a')![0][1].value, 'ok', 'never seen: nothing known');
    w.values([
      { node: 'a', servers: [r0] },
      { node: 'b', servers: [r1] },
    ]);
    const v = w.values([{ node: 'a', servers: [r0] }], new Set(['b']));
    assert.equal(v.get('a')![0][1].value, 'ok', 'b unreachable: its rank is unknown, not lost');
  });

  it('feeds NodeGuard: one transition into rank-lost, none while it stays lost', () => {
    const g = new NodeGuard('a', new NodeMonitor('a', new LocalTransport()));
    const seen: string[] = [];
    g.onTransition((t) => seen.push(`${t.port}:${t.from}→${t.to}:${t.class ?? ''}`));
    const w = new RankWatch();
    g.setRanks(
      w
        .values([
          { node: 'a', servers: [r0] },
          { node: 'b', servers: [r1] },
        ])
        .get('a')!,
    );
    g.setRanks(
      w
        .values([
          { node: 'a', servers: [r0] },
          { node: 'b', servers: [] },
        ])
        .get('a')!,
    );
    g.setRanks(
      w
        .values([
          { node: 'a', servers: [r0] },
          { node: 'b', servers: [] },
        ])
        .get('a')!,
    );
    assert.deepEqual(seen, ['30000:ok→rank-lost:crash']);
    g.dispose();
  });
});
