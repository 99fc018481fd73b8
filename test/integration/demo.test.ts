/** The embedded demo node: ssh2 server + simulated node, no root and no OpenSSH server needed. */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DemoNode, findFreePortBlock, startDemoNode } from '../../src/sim/demoServer';
import { cli } from '../helpers/cli';

describe('demo node', function () {
  this.timeout(90_000);
  let demo: DemoNode;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-demo-test-'));
    demo = await startDemoNode({ dir, sim: { basePort: await findFreePortBlock(34000, 7) } });
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
