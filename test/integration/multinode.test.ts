/**
 * A multi-node SGLang server (`--nnodes 2 --node-rank R --dist-init-addr HOST:PORT`) on two simulated nodes behind
 * real OpenSSH sshds (issue 28, item 4): rank 1 serves only SGLang's dummy /health, and the fleet reads the two
 * processes as one server — its GPUs counted on rank 0, rank 1 never a server with an API; a rank that goes is
 * named as missing on the rank-0 server.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { foldMultiNode, headSummary } from '../../src/core/gateway/multinode';
import { cli } from '../helpers/cli';
import { freeTestPorts } from '../helpers/ports';
import { SimNode, startSimNode, writeFleetConfig } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';
import { CLI } from '../helpers/watchCli';

interface ProbeServer {
  pid: number;
  port: number;
  modelPath: string;
  nnodes: number;
  nodeRank: number;
  distInitAddr: string | null;
  gpuCount: number;
  gpus: number[];
  flags: Record<string, string | boolean>;
}

function httpStatus(port: number, p: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: p, timeout: 3000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

describe('a multi-node server on two simulated nodes (real sshd, issue 28)', function () {
  this.timeout(150_000);
  let a: SimNode;
  let b: SimNode;
  let tmp: string;
  let cfg: string;
  let kh: string;
  let ports: { a: number; b: number; rendezvous: number };

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    a = await startSimNode({ user: 'gs28mna', gpuCount: 2, startServers: false });
    b = await startSimNode({ user: 'gs28mnb', gpuCount: 2, startServers: false });
    tmp = mkdtempSync(path.join(os.tmpdir(), 'gs28mn-'));
    ({ cfg, kh } = writeFleetConfig(tmp, { 'mn-a': a, 'mn-b': b }));
    const p = await freeTestPorts(3);
    ports = { a: p, b: p + 1, rendezvous: p + 2 };
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const run = (args: string[]) => cli(['--ssh-config', cfg, '--known-hosts', kh, ...args], { timeoutMs: 60_000 });

  /** One rank of a tp-4 server over two 2-GPU nodes, started over ssh as a user would. */
  function startRank(n: SimNode, rank: number, port: number): void {
    const cmd =
      `. ~/venv/bin/activate; cd ~; CUDA_VISIBLE_DEVICES=0,1 setsid nohup python3 -m sglang.launch_server ` +
      `--model-path ${n.layout.modelPath} --port ${port} --host 127.0.0.1 --tp-size 4 --nnodes 2 --node-rank ${rank} ` +
      `--dist-init-addr 127.0.0.1:${ports.rendezvous} > ~/logs/multinode_rank${rank}.log 2>&1 < /dev/null & echo started`;
    const r = n.sshd.ssh(cmd);
    assert.match(r.stdout, /started/, `rank ${rank} did not start: ${r.stderr}`);
  }

  async function probe(alias: string): Promise<ProbeServer[]> {
    const r = await run(['probe', alias, '--json']);
    assert.equal(r.code, 0, r.stderr);
    return (JSON.parse(r.stdout) as { servers: ProbeServer[] }).servers.filter((s) => s.nnodes > 1);
  }

  it('rank 1 serves only a dummy /health and reads as part of the rank-0 server: one server, 4 GPUs on both nodes', async () => {
    startRank(a, 0, ports.a);
    startRank(b, 1, ports.b);
    const logOf = (n: SimNode, rank: number) => {
      try {
        return readFileSync(path.join(n.home, 'logs', `multinode_rank${rank}.log`), 'utf8');
      } catch {
        return '';
      }
    };
    await waitFor('rank 0 ready', () => logOf(a, 0).includes('The server is fired up and ready to roll!'), 30_000);
    await waitFor('rank 1 dummy health server', () => logOf(b, 1).includes('Dummy health check server started'), 30_000);
    // the simulator is faithful to SGLang's rank ≥ 1: /health answers, nothing else is there
    assert.equal(await httpStatus(ports.b, '/health'), 200);
    assert.equal(await httpStatus(ports.b, '/server_info'), 404);
    assert.equal(await httpStatus(ports.a, '/server_info'), 200);
    assert.doesNotMatch(logOf(b, 1), /Decode batch|Prefill batch|ready to roll/, 'rank 1 prints no stat lines and no ready line');

    const sa = await probe('mn-a');
    const sb = await probe('mn-b');
    assert.equal(sa.length, 1);
    assert.equal(sb.length, 1);
    assert.deepEqual([sa[0].nodeRank, sb[0].nodeRank], [0, 1]);
    assert.equal(sa[0].distInitAddr, `127.0.0.1:${ports.rendezvous}`);
    assert.deepEqual([sa[0].gpuCount, sb[0].gpuCount], [2, 2], 'tp 4 over 2 nodes: 2 GPUs on each');

    const fleet = [
      { node: 'mn-a', servers: sa },
      { node: 'mn-b', servers: sb },
    ];
    const folded = foldMultiNode(fleet);
    assert.equal(folded.length, 1, 'two processes on two nodes are one server');
    assert.deepEqual(folded[0].head, { node: 'mn-a', port: ports.a, pid: sa[0].pid });
    assert.equal(folded[0].gpuCount, 4);
    assert.deepEqual(folded[0].missingRanks, []);
    assert.deepEqual(headSummary(fleet, 'mn-a', sa[0]), { text: '4 GPUs on mn-a, mn-b', missing: [] });
    assert.equal(headSummary(fleet, 'mn-b', sb[0]), null, 'a rank ≥ 1 has no row of its own to summarise');

    // the CLI's text names the rank as part of its server, never as one with an API
    const text = await run(['probe', 'mn-b']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /rank 1 of 2 nodes · API on rank 0 \(127\.0\.0\.1\)/);
  });

  it('rank 1 gone: `watch` of both nodes gives one rank-lost transition on the rank-0 server, and it names the missing rank', async () => {
    const w = spawn(
      process.execPath,
      [CLI, '--ssh-config', cfg, '--known-hosts', kh, 'watch', 'mn-a', 'mn-b', '--json', '--interval', '1'],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const lines: Array<Record<string, unknown>> = [];
    let buf = '';
    w.stdout!.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
        const l = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
      }
    });
    const rankTransitions = () => lines.filter((l) => l.type === 'transition' && l.to === 'rank-lost');
    try {
      await waitFor(
        'a sample of each node',
        () => ['mn-a', 'mn-b'].every((n) => lines.some((l) => l.type === 'sample' && l.node === n)),
        30_000,
      );
      assert.deepEqual(rankTransitions(), [], 'both ranks run: nothing to say');
      const r = b.sshd.ssh(`pkill -TERM -u "$(id -u)" -f 'node-ran[k] 1' ; echo done`);
      assert.match(r.stdout, /done/);
      await waitFor('the rank-lost transition', () => rankTransitions().length > 0, 20_000);
      await new Promise((res) => setTimeout(res, 2500)); // two more polls: still one transition
      const t = rankTransitions();
      assert.equal(t.length, 1, JSON.stringify(t));
      assert.equal(t[0].node, 'mn-a', 'reported on the rank-0 node, where the server (and its API) is');
      assert.equal(t[0].port, ports.a);
      assert.equal(t[0].class, 'crash');
      assert.match(String(t[0].message), /lost rank 1 \(on mn-b\)/);
    } finally {
      w.kill('SIGINT');
    }
  });

  it('rank 1 gone: the rank-0 server names the missing rank', async () => {
    const r = b.sshd.ssh(`pkill -TERM -u "$(id -u)" -f 'node-ran[k] 1' ; echo done`);
    assert.match(r.stdout, /done/);
    await waitFor('rank 1 to exit', async () => (await probe('mn-b')).length === 0, 20_000);
    const fleet = [
      { node: 'mn-a', servers: await probe('mn-a') },
      { node: 'mn-b', servers: [] },
    ];
    assert.deepEqual(foldMultiNode(fleet)[0].missingRanks, [1]);
    assert.deepEqual(headSummary(fleet, 'mn-a', fleet[0].servers[0]), {
      text: "rank 1 of 2 not seen on the fleet's nodes",
      missing: [1],
    });
  });
});
