/** The embedded demo node: ssh2 server + simulated node, no root and no OpenSSH server needed. */
import assert from 'node:assert/strict';
import { ChildProcess, execFile, spawn, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DemoNode, startDemoNode } from '../../src/sim/demoServer';
import { cli } from '../helpers/cli';
import { processesUnder as procsUnder } from '../helpers/procs';
import { freeTestPorts } from '../helpers/ports';
import { waitFor } from '../helpers/wait';

describe('demo node', function () {
  this.timeout(90_000);
  let demo: DemoNode;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-demo-test-'));
    demo = await startDemoNode({ dir, sim: { basePort: await freeTestPorts(7) } });
  });
  after(async () => {
    await demo?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves a 7-GPU node with 7 SGLang servers to the CLI over its ssh config and known_hosts', async () => {
    // The demo shares this machine's process table: count only the servers on its own ports.
    const mine = (x: { servers: Array<{ port: number; args: string[] }> }) => x.servers.filter((s) => demo.layout.ports.includes(s.port));
    let p: { gpus: Array<{ name: string }>; servers: Array<{ port: number; args: string[] }> } = { gpus: [], servers: [] };
    for (let i = 0; i < 40 && mine(p).length < 7; i++) {
      const r = await cli(['--ssh-config', demo.sshConfigFile, 'probe', demo.alias, '--json']);
      assert.equal(r.code, 0, r.stderr);
      p = JSON.parse(r.stdout);
      p.servers = mine(p);
      if (p.servers.length < 7) await new Promise((res) => setTimeout(res, 250));
    }
    assert.equal(p.gpus.length, 7);
    assert.ok(p.gpus.every((g) => g.name === 'NVIDIA B200'));
    assert.equal(p.servers.length, 7);
    assert.deepEqual(p.servers[0].args.slice(0, 3), ['python3', '-m', 'sglang.launch_server']);
  });

  it('lists only its own servers while another simulated server runs on the machine', async () => {
    // Another harness's "SGLang server" on this machine, running from a folder outside the demo's home.
    const other = spawn(
      'python3',
      ['-c', 'import time; time.sleep(60)', '-m', 'sglang.launch_server', '--model-path', '/nonexistent/other-model', '--port', '39999'],
      { cwd: os.tmpdir(), stdio: 'ignore' },
    );
    try {
      await new Promise((r) => setTimeout(r, 300));
      const r = await cli(['--ssh-config', demo.sshConfigFile, 'probe', demo.alias, '--json']);
      assert.equal(r.code, 0, r.stderr);
      const p = JSON.parse(r.stdout) as { servers: Array<{ port: number; logFile: string | null }> };
      assert.deepEqual(
        p.servers.map((s) => s.port).sort((a, b) => a - b),
        demo.layout.ports,
        JSON.stringify(p.servers.map((s) => [s.port, s.logFile])),
      );
      for (const s of p.servers) assert.ok(s.logFile?.startsWith(demo.home + '/'), String(s.logFile));
    } finally {
      other.kill('SIGKILL');
    }
  });

  it('is reachable with the OpenSSH client using the config it wrote (host key pinned)', async function () {
    if (spawnSync('which', ['ssh']).status !== 0) this.skip();
    // Async: the demo server lives in this process, so a synchronous spawn would block it.
    const r = await promisify(execFile)(
      'ssh',
      ['-F', demo.sshConfigFile, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes', demo.alias, 'nvidia-smi -L | wc -l'],
      { encoding: 'utf8', timeout: 20_000 },
    );
    assert.equal(r.stdout.trim(), '7', r.stderr);
  });

  it('refuses port forwards to non-loopback destinations', async () => {
    const { ConnectionPool } = await import('../../src/core/ssh/pool');
    const { KnownHostsStore } = await import('../../src/core/ssh/knownHosts');
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([demo.knownHostsFile]) });
    try {
      const t = pool.get({
        name: 'demo',
        host: '127.0.0.1',
        port: demo.port,
        user: 'demo',
        identityFiles: [demo.identityFile],
        source: 'demo',
      });
      const s = await t.connectTcp('127.0.0.1', demo.layout.ports[0]);
      s.destroy();
      await assert.rejects(t.connectTcp('10.1.2.3', 80), /cannot reach 10\.1\.2\.3:80/);
    } finally {
      pool.dispose();
    }
  });
});

/** Processes whose working directory or command line lies under dir (the demo's exec children, servers). */
/** "pid argv" lines of the processes that belong to the folder (readable in an assertion message). */
const processesUnder = (dir: string): string[] => procsUnder(dir).map((p) => `${p.pid} ${p.cmd}`);

/** After a demo run: nothing of it may still run under `dir` (what does is killed, then named); the folder goes. */
async function nothingLeftUnder(dir: string): Promise<void> {
  let left: string[] = [];
  try {
    await waitFor('no process left', () => processesUnder(dir).length === 0, 25_000);
  } catch {
    left = processesUnder(dir);
  }
  for (const p of processesUnder(dir))
    try {
      process.kill(Number(p.split(' ')[0]), 'SIGKILL');
    } catch {
      /* gone */
    }
  rmSync(dir, { recursive: true, force: true });
  assert.deepEqual(left, [], `left behind:\n${left.join('\n')}`);
}

/** `ssh -F config alias 'tail -n 200 -F ...'` through the demo: the process issue 13 saw outlive it. */
function sshTail(configFile: string, alias: string): ChildProcess {
  const c = spawn(
    'ssh',
    ['-F', configFile, '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=yes', alias, 'tail -n 200 -F logs/sglang_gpu0.log'],
    { stdio: ['ignore', 'ignore', 'ignore'] },
  );
  c.on('error', () => undefined);
  return c;
}

describe('demo node leaves no process behind', function () {
  this.timeout(120_000);
  // The remote side of the ssh command (the demo's exec child), not the local ssh client naming it.
  const tails = (dir: string) => processesUnder(dir).filter((p) => /^\d+ tail -n 200 -F /.test(p));

  before(function () {
    if (spawnSync('which', ['ssh']).status !== 0) this.skip();
  });

  it('stop() ends its exec children (a tail -F) and its simulated servers', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-demo-stop-'));
    const demo = await startDemoNode({ dir });
    const ssh = sshTail(demo.sshConfigFile, demo.alias);
    try {
      await waitFor('the tail through the demo', () => tails(dir).length > 0, 20_000);
      assert.ok(
        processesUnder(dir).some((p) => p.includes('sglang.launch_server')),
        'servers are running',
      );
      await demo.stop();
      let left: string[] = [];
      try {
        await waitFor('no process left', () => processesUnder(dir).length === 0, 15_000);
      } catch {
        left = processesUnder(dir);
      }
      assert.deepEqual(left, [], `left behind:\n${left.join('\n')}`);
    } finally {
      ssh.kill('SIGKILL');
      await demo.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  for (const sig of ['SIGINT', 'SIGKILL'] as const) {
    it(`the CLI demo ended by ${sig === 'SIGINT' ? 'Ctrl-C (SIGINT)' : 'SIGKILL (no chance to clean up)'} leaves nothing running`, async () => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-demo-cli-'));
      const cliJs = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');
      const demo = spawn(process.execPath, [cliJs, 'demo', '--keep', '--no-salvage', dir], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      demo.stderr!.on('data', (b) => (err += b));
      const exited = new Promise<void>((r) => demo.once('exit', () => r()));
      let ssh: ChildProcess | undefined;
      try {
        await waitFor('the demo running', () => err.includes('Press Ctrl-C'), 60_000);
        ssh = sshTail(path.join(dir, 'ssh_config'), 'gpu-demo');
        await waitFor('the tail through the demo', () => tails(dir).length > 0, 20_000);
        const before = processesUnder(dir).length;
        demo.kill(sig);
        await exited;
        let left: string[] = [];
        try {
          await waitFor('no process left', () => processesUnder(dir).length === 0, 25_000);
        } catch {
          left = processesUnder(dir);
        }
        assert.deepEqual(left, [], `${before} process(es) before; left behind:\n${left.join('\n')}`);
      } finally {
        ssh?.kill('SIGKILL');
        demo.kill('SIGKILL');
        for (const p of processesUnder(dir)) {
          try {
            process.kill(Number(p.split(' ')[0]), 'SIGKILL');
          } catch {
            /* gone */
          }
        }
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

  it("demo --guard: the node's own guard syncs to the demo's S3 and is shown; the salvage counts its copies; nothing left running", async function () {
    this.timeout(420_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-demo-guard-'));
    const cliJs = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');
    try {
      const r = await promisify(execFile)(process.execPath, [cliJs, 'demo', dir, '--guard', '--json'], {
        encoding: 'utf8',
        timeout: 400_000,
        maxBuffer: 16 << 20,
      });
      assert.match(r.stderr, /Guard started on gpu-demo \(pid \d+\): every 5 s → s3:\/\/demo-train-dflash\/guard\//);
      // its status, with the first pass that copied and verified files (a live job keeps writing its logs)
      assert.match(r.stderr, /Guard on gpu-demo: running \(pid \d+\)/);
      assert.match(r.stderr, /last verified sync: /);
      assert.match(r.stderr, /Z {2}sync {2}atRisk=\d+ bytes=\d+ changing=\d+ copied=[1-9]\d* /, r.stderr.slice(-3000));
      assert.match(r.stderr, /The demo's guard \(pid \d+\) stopped\./);
      const j = JSON.parse(r.stdout) as { verdict: string; guard: { counted: number; confirmed: number; s3: string } | null };
      assert.equal(j.verdict, 'safe', r.stderr.slice(-3000));
      assert.equal(j.guard?.s3, 's3://demo-train-dflash/guard/');
      assert.ok((j.guard?.counted ?? 0) > 0, JSON.stringify(j.guard));
      assert.equal(j.guard?.confirmed, j.guard?.counted, 'each counted file read back from S3');
    } finally {
      await nothingLeftUnder(dir);
    }
  });

  it('demo --fleet: two nodes, a gateway and a multi-node server; release gpu-demo-b is safe, touches nothing of gpu-demo-a, leaves nothing running', async function () {
    this.timeout(150_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-demo-fleet-'));
    const cliJs = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');
    try {
      const r = await promisify(execFile)(process.execPath, [cliJs, 'demo', '--fleet', dir, '--json'], {
        encoding: 'utf8',
        timeout: 120_000,
        maxBuffer: 16 << 20,
      });
      const j = JSON.parse(r.stdout) as {
        node: string;
        gateways: Array<{ node: string; port: number; removed: string[] }>;
        drained: Array<{ port: number }>;
        salvage: { verdict: string; dest: string };
        warnings: string[];
      };
      assert.equal(j.node, 'gpu-demo-b');
      assert.equal(j.gateways.length, 1, JSON.stringify(j.gateways));
      assert.equal(j.gateways[0].node, 'gpu-demo-a', 'the gateway runs on gpu-demo-a');
      assert.equal(j.gateways[0].removed.length, 2, "both of gpu-demo-b's one-GPU servers taken out of rotation");
      assert.equal(j.drained.length, 2, 'the rank ≥ 1 has no API of its own to drain');
      assert.equal(j.salvage.verdict, 'safe', r.stderr.slice(-3000));
      assert.deepEqual(
        j.warnings.map((w) => /runs rank 1 of a 2-node server/.test(w)),
        [true],
        'the review says stopping rank 1 stops the whole server',
      );
      // the salvage of b is b's: nothing of a's home copied, only b's servers stopped
      const md = readFileSync(path.join(j.salvage.dest, 'SALVAGE.md'), 'utf8');
      assert.ok(!md.includes(path.join(dir, 'gpu-demo-a')), "a's folders are not b's");
      assert.equal((md.match(/Stopped the server on port/g) ?? []).length, 3, 'two one-GPU servers and rank 1');
    } finally {
      await nothingLeftUnder(dir);
    }
  });
});
