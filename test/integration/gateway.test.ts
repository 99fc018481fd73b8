/**
 * The SGLang Model Gateway over a REAL OpenSSH sshd, two simulated nodes: node A runs the (simulated) gateway and one
 * server, node B two servers. In each API profile: discovery without visible flags (the title only), the probe's
 * gateways[] and the worker ↔ server mapping (A's own worker from A's probe; B's through release --dry-run);
 * a worker turning unhealthy gives one watch transition; `release B --via A` removes every worker of B before its
 * servers stop (the gateway's request log vs the server processes' exits), no client request fails, the gateway
 * keeps running and the salvage after it is safe.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, appendFileSync } from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { addBackToGateways } from '../../src/core/gateway/addBack';
import { gatewayRef, listWorkerUrls } from '../../src/core/gateway/client';
import { removeFromGateways } from '../../src/core/flows/release';
import { routingTo } from '../../src/core/gateway/rotation';
import { probeOperation } from '../../src/core/node/probe';
import { runOperation } from '../../src/core/remote/operation';
import { listNodes } from '../../src/core/ssh/nodes';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { cli } from '../helpers/cli';
import { freeTestPorts } from '../helpers/ports';
import { SimNode, startSimNode, writeFleetConfig } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';
import { processRunning } from '../helpers/procs';

interface GatewayJson {
  pid: number;
  port: number | null;
  metricsPort: number | null;
  version: string | null;
  profile: string | null;
  policy: string | null;
  workers: Array<{
    id: string;
    url: string;
    type: string;
    healthy: boolean | null;
    status: string | null;
    load: number | null;
    node: string | null;
    serverPort: number | null;
  }>;
}

/** Idle servers, real in-flight requests only (each takes 0.4 s), scoped to the node's own folder. */
function idleKnobs(home: string): void {
  appendFileSync(path.join(home, '.sim', 'env.sh'), 'export SGLANG_SIM_RUNNING=0\nexport SGLANG_SIM_REQUEST_S=0.4\n');
  appendFileSync(path.join(home, '.ssh', 'environment'), `GPU_SESSIONS_SIM_HOME=${home}\n`);
}

function post(port: number, p: string): Promise<number> {
  return new Promise((resolve) => {
    const body = JSON.stringify({ text: 'hello', sampling_params: { max_new_tokens: 8 } });
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path: p,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', () => resolve(0));
    req.setTimeout(10_000, () => req.destroy());
    req.end(body);
  });
}

describe('SGLang Model Gateway over real sshd (simulated gateway, two nodes)', function () {
  this.timeout(300_000);
  let a: SimNode;
  let b: SimNode;
  let cfg: string;
  let kh: string;
  let tmp: string;
  const started: number[] = [];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    a = await startSimNode({ user: 'gs28gwa', gpuCount: 1, beforeStart: idleKnobs });
    b = await startSimNode({ user: 'gs28gwb', gpuCount: 2, beforeStart: idleKnobs });
    tmp = mkdtempSync(path.join(os.tmpdir(), 'gs28-'));
    ({ cfg, kh } = writeFleetConfig(tmp, { nodeA: a, nodeB: b }));
  });
  after(async () => {
    for (const pid of started)
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    await a?.stop();
    await b?.stop();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const run = (args: string[], timeoutMs = 120_000) => cli(['--ssh-config', cfg, '--known-hosts', kh, ...args], { timeoutMs });

  /** Start the simulated gateway on node A over ssh, in profile `profile`; resolves to its pid and ports. */
  async function startGateway(
    profile: string,
    launcher: 'router' | 'smg' | 'smg-visible',
    extra: string[] = [],
  ): Promise<{ pid: number; port: number; mport: number; reqLog: string }> {
    const [port, mport] = await freeTestPorts(2).then((p) => [p, p + 1]);
    const urls = [...a.layout.ports, ...b.layout.ports].map((p) => `http://127.0.0.1:${p}`);
    const reqLog = path.join(a.home, `gw_${port}.jsonl`);
    const mod = launcher === 'router' ? '-m sglang_router.launch_router' : '-m smg launch';
    const env = `SMG_SIM_PROFILE=${profile} SMG_SIM_REQUEST_LOG=${reqLog} SMG_SIM_JOB_DELAY_S=0.3${launcher === 'smg-visible' ? ' SMG_SIM_ARGV=visible' : ''}`;
    const cmd =
      `cd ~; ${env} setsid nohup python3 ${mod} --host 127.0.0.1 --port ${port} --prometheus-port ${mport} ` +
      `--worker-urls ${urls.join(' ')} --health-check-interval-secs 0.3 --drain-settle-secs 1 --log-dir ~/gwlogs ${extra.join(' ')} ` +
      `> ~/gateway_${port}.log 2>&1 < /dev/null & echo "pid $!"`;
    const r = a.sshd.ssh(cmd);
    const m = /pid (\d+)/.exec(r.stdout);
    assert.ok(m, `gateway did not start: ${r.stderr}`);
    const pid = Number(m[1]);
    started.push(pid);
    await waitFor(
      'the gateway to be ready',
      () =>
        new Promise<boolean>((res) =>
          http
            .get({ host: '127.0.0.1', port, path: '/readiness' }, (x) => (x.resume(), res(x.statusCode === 200)))
            .on('error', () => res(false)),
        ),
      30_000,
    );
    return { pid, port, mport, reqLog };
  }

  const stopGateway = (pid: number) => {
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      /* gone */
    }
  };

  /**
   * Restart Server's rotation steps, in the profile's own calls: B's first server taken out of A's gateway (the
   * release's removal), then added back (core/gateway/addBack.ts) — listed again, and the add came after the removal.
   */
  async function outAndBack(reqLog: string, profile: string): Promise<void> {
    const specs = listNodes({ sshConfigFile: cfg }).nodes;
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([kh]) });
    try {
      const fleet = await Promise.all(
        ['nodeA', 'nodeB'].map(async (name) => {
          const spec = specs.find((n) => n.name === name)!;
          const p = await runOperation(pool.get(spec), probeOperation(name));
          return { node: name, host: spec.host, hostname: p.hostname, servers: p.servers, gateways: p.gateways ?? [] };
        }),
      );
      const port = b.layout.ports[0];
      const url = `http://127.0.0.1:${port}`;
      const rs = routingTo(fleet, 'nodeB', port);
      assert.equal(rs.length, 1);
      const tOf = (n: string) => pool.get(specs.find((x) => x.name === n)!);
      await removeFromGateways(rs, tOf, { deadline: Date.now() + 20_000 });
      const ref = gatewayRef(rs[0].gateway)!;
      assert.ok(!(await listWorkerUrls(tOf('nodeA'), ref)).includes(url), 'out of rotation');
      const back = await addBackToGateways(rs, tOf, { timeoutMs: 20_000 });
      assert.deepEqual(back, [{ node: 'nodeA', port: ref.port, added: [url], failed: [] }]);
      assert.ok((await listWorkerUrls(tOf('nodeA'), ref)).includes(url), 'listed again');
      const events = readFileSync(reqLog, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { t: number; event?: string; method?: string; path?: string; url?: string });
      const removed = events.findIndex((e) => e.event === 'removed' && e.url === url);
      const addCall = events.findIndex(
        (e, i) =>
          i > removed && e.method === 'POST' && (profile === 'legacy-0.1' ? e.path?.startsWith('/add_worker?') : e.path === '/workers'),
      );
      assert.ok(removed >= 0 && addCall > removed, `remove then add in the gateway's log: ${JSON.stringify(events.slice(-8))}`);
    } finally {
      pool.dispose();
    }
  }

  for (const [profile, launcher] of [
    ['legacy-0.1', 'router'],
    ['rest-by-url-0.2', 'router'],
    ['rest-by-uuid-0.3', 'router'],
    ['smg-1.x', 'smg'],
    ['smg-1.x', 'smg-visible'],
  ] as const) {
    it(`${profile} (${launcher}): probe --json finds it${launcher === 'router' && profile !== 'legacy-0.1' ? ' by its title alone' : ''}, maps its workers; release --dry-run names B's; out of rotation and back`, async () => {
      const gw = await startGateway(profile, launcher);
      try {
        const cmdline = readFileSync(`/proc/${gw.pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
        if (launcher === 'router' && profile !== 'legacy-0.1') assert.deepEqual(cmdline, ['sglang::router'], 'flags hidden by the title');
        if (launcher === 'smg') assert.deepEqual(cmdline, ['smg::router']);
        if (launcher === 'smg-visible') assert.deepEqual(cmdline.slice(0, 2), ['smg', 'launch']);
        const r = await run(['probe', 'nodeA', '--json']);
        assert.equal(r.code, 0, r.stderr);
        const p = JSON.parse(r.stdout) as { gateways: GatewayJson[]; servers: Array<{ port: number }> };
        assert.deepEqual(
          p.servers.map((s) => s.port),
          a.layout.ports,
          "A's probe lists A's server only",
        );
        assert.equal(p.gateways.length, 1, JSON.stringify(p.gateways));
        const g = p.gateways[0];
        for (const k of ['pid', 'port', 'metricsPort', 'version', 'profile', 'policy', 'workers']) assert.ok(k in g, k);
        assert.equal(g.pid, gw.pid);
        assert.equal(g.port, gw.port);
        assert.equal(g.metricsPort, gw.mport);
        assert.equal(g.profile, profile);
        assert.equal(g.policy, 'cache_aware');
        assert.equal(g.workers.length, 3);
        for (const w of g.workers) {
          for (const k of ['id', 'url', 'type', 'healthy', 'status', 'load', 'node', 'serverPort']) assert.ok(k in w, k);
          assert.equal(w.type, 'regular');
          assert.equal(w.healthy, true, JSON.stringify(w));
        }
        if (profile === 'rest-by-uuid-0.3' || profile === 'smg-1.x') assert.match(g.workers[0].id, /^[0-9a-f]{8}-/);
        else assert.equal(g.workers[0].id, g.workers[0].url);
        const local = g.workers.find((w) => w.url.endsWith(`:${a.layout.ports[0]}`))!;
        assert.equal(local.node, 'nodeA');
        assert.equal(local.serverPort, a.layout.ports[0]);
        // the fleet: B's workers are B's servers
        const d = await run(['release', 'nodeB', '--via', 'nodeA', '--dry-run', '--json']);
        assert.equal(d.code, 0, d.stderr);
        const dj = JSON.parse(d.stdout) as { node: string; gateways: Array<{ node: string; port: number; removed: string[] }> };
        assert.equal(dj.node, 'nodeB');
        assert.deepEqual(dj.gateways, [{ node: 'nodeA', port: gw.port, removed: b.layout.ports.map((x) => `http://127.0.0.1:${x}`) }]);
        // the dry run changed nothing
        const again = JSON.parse((await run(['probe', 'nodeA', '--json'])).stdout) as { gateways: GatewayJson[] };
        assert.equal(again.gateways[0].workers.length, 3);
        await outAndBack(gw.reqLog, profile);
      } finally {
        stopGateway(gw.pid);
      }
    });
  }

  it('watch: a worker turning unhealthy gives exactly one transition (the gateway stays ready)', async () => {
    const gw = await startGateway('rest-by-uuid-0.3', 'router');
    const child = spawn(
      process.execPath,
      [
        path.join(__dirname, '..', '..', '..', 'dist', 'cli.js'),
        '--ssh-config',
        cfg,
        '--known-hosts',
        kh,
        'watch',
        'nodeA',
        '--json',
        '--interval',
        '1',
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (x) => (out += x));
    try {
      await waitFor('the first sample', () => out.includes('"type":"sample"'), 30_000);
      const victim = b.layout.ports[1];
      const f = b.sshd.ssh(`sim-fault ${victim} health-wedged`);
      assert.equal(f.status, 0, f.stderr);
      const isWorker = (l: Record<string, unknown>) => l.type === 'transition' && l.worker === `http://127.0.0.1:${victim}`;
      const lines = () =>
        out
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>);
      await waitFor('the worker transition', () => lines().some(isWorker), 30_000);
      // a few more samples: still one
      const n = lines().filter((l) => l.type === 'sample').length;
      await waitFor('two more samples', () => lines().filter((l) => l.type === 'sample').length >= n + 2, 90_000);
      const ts = lines().filter(isWorker);
      assert.equal(ts.length, 1, JSON.stringify(ts));
      assert.equal(ts[0].from, 'ready');
      assert.equal(ts[0].to, 'unhealthy');
      assert.equal(ts[0].port, gw.port);
      assert.ok(
        !lines().some((l) => l.type === 'transition' && String(l.to) === 'not-ready'),
        'the gateway stays ready with 2 of 3 workers',
      );
    } finally {
      child.kill('SIGINT');
      b.sshd.ssh(`sim-fault ${b.layout.ports[1]} clear`);
      stopGateway(gw.pid);
    }
  });

  it('release B --via A: every worker of B removed before its servers stop, no request fails, the gateway keeps running, the salvage is safe', async () => {
    const gw = await startGateway('smg-1.x', 'smg');
    const serverPids = b.layout.ports.map((port) =>
      Number(readFileSync(path.join(b.layout.runDir, `server_${port}.pid`), 'utf8').split(' ')[0]),
    );
    const exits = new Map<number, number>();
    const watcher = setInterval(() => {
      for (const p of serverPids) if (!exits.has(p) && !processRunning(p)) exits.set(p, Date.now() / 1000);
    }, 20);
    let stop = false;
    const codes: number[] = [];
    const clients = Array.from({ length: 4 }, async () => {
      while (!stop) codes.push(await post(gw.port, '/generate'));
    });
    try {
      await new Promise((r) => setTimeout(r, 1500));
      const dest = path.join(tmp, 'release');
      const r = await run(['release', 'nodeB', '--via', 'nodeA', '--yes', '--json', '--dest', dest, '--drain-timeout', '60'], 240_000);
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const j = JSON.parse(r.stdout) as {
        node: string;
        gateways: Array<{ node: string; port: number; removed: string[] }>;
        drained: Array<{ port: number; runningAtStart: number | null; seconds: number }>;
        salvage: { verdict: string; dest: string };
      };
      assert.equal(j.node, 'nodeB');
      assert.deepEqual(j.gateways, [{ node: 'nodeA', port: gw.port, removed: b.layout.ports.map((x) => `http://127.0.0.1:${x}`) }]);
      assert.deepEqual(
        j.drained.map((d) => d.port),
        b.layout.ports,
      );
      for (const d of j.drained) assert.ok(typeof d.seconds === 'number' && d.runningAtStart !== undefined);
      assert.equal(j.salvage.verdict, 'safe');
      assert.ok(existsSync(j.salvage.dest), j.salvage.dest);
      // ordering: each removal applied (the gateway's own log) before either of B's servers exited
      const events = readFileSync(gw.reqLog, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { t: number; event?: string; method?: string; url?: string });
      const removedAt = events.filter((e) => e.event === 'removed').map((e) => e.t);
      const deletes = events.filter((e) => e.method === 'DELETE');
      assert.equal(deletes.length, 2, JSON.stringify(events));
      assert.equal(removedAt.length, 2);
      assert.equal(exits.size, 2, 'both of B’s servers exited');
      const firstExit = Math.min(...exits.values());
      assert.ok(Math.max(...removedAt) < firstExit, `removed at ${removedAt} vs first exit ${firstExit}`);
      // the gateway keeps running and routing to A's server
      assert.ok(processRunning(gw.pid), 'the gateway still runs');
      stop = true;
      await Promise.all(clients);
      assert.ok(codes.length > 10, `${codes.length} requests`);
      assert.deepEqual(
        codes.filter((c) => c !== 200),
        [],
        'no client request failed',
      );
      assert.equal(await post(gw.port, '/generate'), 200);
    } finally {
      stop = true;
      clearInterval(watcher);
      await Promise.all(clients);
      stopGateway(gw.pid);
    }
  });
});
