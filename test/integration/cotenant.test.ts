/**
 * #24 f1/f2: a co-tenant (another unprivileged user on the node) runs processes whose 5 MB command lines
 * contain "sglang". The probe lists only the user's own servers, caps each record on the node, and neither
 * fails nor grows: before, three such processes pushed it past its 32 MiB output bound and probe, salvage
 * and watch all failed.
 */
import assert from 'node:assert/strict';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { SimNode, startSimNode } from '../helpers/simnode';

const CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');

describe('security: a co-tenant cannot disable the probe (#24 f1, f2)', function () {
  this.timeout(240_000);
  let sim: SimNode;
  const hogs: ChildProcess[] = [];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: 'gs24co', gpuCount: 1 });
    // Three processes of `nobody`, each with ~5 MB of argv mentioning sglang (ulimit -s raises the argv limit).
    const script =
      'ulimit -s 65536; exec python3 -c "import time; time.sleep(600)" ' +
      "$(python3 -c \"print(' '.join(['--sglang-' + 'x' * 120000] * 42))\")";
    for (let i = 0; i < 3; i++) {
      const p = spawn('su', ['-s', '/bin/bash', 'nobody', '-c', script], { stdio: 'ignore', detached: true });
      hogs.push(p);
    }
    // wait until all three are running with their long argv
    for (let i = 0; i < 100; i++) {
      const n = spawnSync('pgrep', ['-u', 'nobody', '-f', '--', '--sglang-x']).stdout.toString().trim().split('\n').filter(Boolean).length;
      if (n >= 3) break;
      await new Promise((r) => setTimeout(r, 200));
    }
  });
  after(async () => {
    // Only the processes this test started, by pid: each su and the python3 it runs.
    for (const p of hogs) {
      if (!p.pid) continue;
      const kids = spawnSync('pgrep', ['-P', String(p.pid)])
        .stdout.toString()
        .trim()
        .split('\n')
        .filter(Boolean);
      for (const k of kids) spawnSync('kill', ['-KILL', k]);
      p.kill('SIGKILL');
    }
    await sim?.stop();
  });

  it('probe --json succeeds, lists only the own servers, and stays small', () => {
    const others = spawnSync('pgrep', ['-u', 'nobody', '-f', '--', '--sglang-x']).stdout.toString().trim().split('\n').filter(Boolean);
    assert.ok(others.length >= 3, `the co-tenant's processes run (${others.length})`);
    const r = spawnSync(
      process.execPath,
      [CLI, '--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile, 'probe', 'simnode', '--json'],
      { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, timeout: 180_000 },
    );
    assert.equal(r.status, 0, r.stderr.slice(0, 2000));
    assert.ok(r.stdout.length < 1024 * 1024, `probe --json is ${r.stdout.length} bytes`);
    const p = JSON.parse(r.stdout) as { servers: Array<{ pid: number; port: number }> };
    assert.ok(p.servers.length >= 1, 'the own server is listed');
    for (const s of p.servers) assert.ok(!others.includes(String(s.pid)), `a co-tenant process ${s.pid} was listed`);
    assert.ok(p.servers.every((s) => sim.layout.ports.includes(s.port)));
  });
});
