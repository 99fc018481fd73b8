/**
 * Fault matrix over a real OpenSSH sshd: each case asserts the outcome, not just "no crash".
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Fleet } from '../../src/core/node/fleet';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { runOperation } from '../../src/core/remote/operation';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { probeOperation } from '../../src/core/node/probe';
import { Salvager } from '../../src/core/flows/salvage';
import type { NodeSpec } from '../../src/core/ssh/config';
import type { SshTransport } from '../../src/core/ssh/transport';
import { SimNode, startSimNode } from '../helpers/simnode';
import { freeTestPorts } from '../helpers/ports';

const noSnapshot = async () => ({ json: {}, markdown: '', summary: '' });

describe('fault matrix', function () {
  this.timeout(180_000);
  let sim: SimNode;
  let node: NodeSpec;
  let pool: ConnectionPool;
  const nodeJson = () => path.join(sim.home, '.sim', 'node.json');

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: 'gsfault', gpuCount: 2, startServers: false });
    node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0];
  });
  beforeEach(() => {
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
  });
  afterEach(() => pool?.dispose());
  after(async () => sim?.stop());

  it('sshd killed mid-probe: a clear "unreachable" state, then the next refresh reconnects', async () => {
    const t = pool.get(node) as SshTransport;
    await runOperation(t, probeOperation('n'));
    const orig = readFileSync(nodeJson(), 'utf8');
    writeFileSync(nodeJson(), JSON.stringify({ ...JSON.parse(orig), delayS: 3 }));
    try {
      const p = runOperation(t, probeOperation('n'));
      await new Promise((r) => setTimeout(r, 700));
      await sim.sshd.stop();
      await assert.rejects(p, (e: Error & { code?: string }) => e.code === 'unreachable' && /dropped|unreachable|closed/i.test(e.message));
      assert.notEqual(t.state, 'connected');
    } finally {
      writeFileSync(nodeJson(), orig);
      await sim.sshd.restart();
    }
    const again = await runOperation(t, probeOperation('n'));
    assert.equal(again.gpus.length, 2);
    assert.equal(t.state, 'connected');
  });

  it('host key changed between two refreshes: the second refresh is refused and says so', async () => {
    const fleet = new Fleet(pool);
    fleet.setNodes([node]);
    assert.equal((await fleet.refresh(node.name)).state, 'ok');
    const khBefore = readFileSync(sim.sshd.knownHostsFile, 'utf8');
    await sim.sshd.rotateHostKey(); // re-imaged node; our connection is gone with the old sshd
    try {
      const st = await fleet.refresh(node.name);
      assert.equal(st.state, 'error');
      assert.equal(st.error?.code, 'host-key-changed');
      assert.match(st.error!.message, /SHA256:/);
      assert.equal(readFileSync(sim.sshd.knownHostsFile, 'utf8'), khBefore, 'known_hosts untouched');
    } finally {
      sim.sshd.writeKnownHosts();
      fleet.dispose();
    }
  });

  it('key removed from authorized_keys: the next connection fails with "authentication failed"', async () => {
    const t = pool.get(node) as SshTransport;
    await runOperation(t, probeOperation('n'));
    const keys = readFileSync(sim.sshd.authorizedKeys, 'utf8');
    writeFileSync(sim.sshd.authorizedKeys, '');
    try {
      sim.sshd.dropConnections();
      for (let i = 0; i < 100 && t.state === 'connected'; i++) await new Promise((r) => setTimeout(r, 50));
      await assert.rejects(
        runOperation(t, probeOperation('n')),
        (e: Error & { code?: string }) => e.code === 'auth-failed' && /authorized_keys/.test(e.message),
      );
    } finally {
      writeFileSync(sim.sshd.authorizedKeys, keys);
    }
  });

  it('local disk full during salvage: ENOSPC reported, nothing marked verified that is not, verdict unsafe', async function () {
    const mnt = mkdtempSync(path.join(os.tmpdir(), 'gs-full-'));
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=3m', 'tmpfs', mnt]).status !== 0) this.skip();
    const big = path.join(sim.home, 'data', 'completions_big.jsonl');
    mkdirSync(path.dirname(big), { recursive: true });
    writeFileSync(big, Buffer.alloc(6 * 1024 * 1024, 0x61));
    execFileSync('chown', ['-R', `${sim.user}:${sim.user}`, path.dirname(big)]);
    try {
      const s = new Salvager({ node: 'n', transport: pool.get(node), base: mnt, snapshot: noSnapshot });
      const m = (await s.run())!;
      assert.equal(m.verdict, 'unsafe');
      const it = m.items.find((i) => i.remotePath === big)!;
      assert.equal(it.status, 'failed');
      assert.match(it.reason ?? '', /ENOSPC|disk full/);
      // The manifest on disk (written atomically) only calls verified what is intact.
      const mf = path.join(s.dir, 'salvage-manifest.json');
      if (existsSync(mf)) {
        const onDisk = JSON.parse(readFileSync(mf, 'utf8'));
        for (const x of onDisk.items) {
          if (x.status !== 'verified' || !x.localPath || x.kind === 'git-state' || x.kind === 'server-cmdline') continue;
          const got = createHash('sha256')
            .update(readFileSync(path.join(s.dir, x.localPath)))
            .digest('hex');
          assert.equal(got, x.localSha256 ?? x.sha256, x.remotePath);
        }
      }
    } finally {
      spawnSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
      rmSync(path.dirname(big), { recursive: true, force: true });
    }
  });

  it('read-only destination: refused up front with a clear message, nothing downloaded', async function () {
    const mnt = mkdtempSync(path.join(os.tmpdir(), 'gs-ro-'));
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=1m,ro', 'tmpfs', mnt]).status !== 0) this.skip();
    try {
      const s = new Salvager({ node: 'n', transport: pool.get(node), base: mnt, snapshot: noSnapshot });
      await assert.rejects(s.run(), /read-only|EROFS/);
    } finally {
      spawnSync('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
  });

  it('a file still being written during salvage: its status says so and the verdict is not safe', async () => {
    const log = path.join(sim.home, 'live', 'generate.log');
    mkdirSync(path.dirname(log), { recursive: true });
    writeFileSync(log, 'start\n'.repeat(1000));
    execFileSync('chown', ['-R', `${sim.user}:${sim.user}`, path.dirname(log)]);
    // A writer on the node appends every 20 ms (as the node user), for a bounded time.
    const writer = spawn(
      'su',
      ['-s', '/bin/sh', sim.user, '-c', `i=0; while [ $i -lt 1500 ]; do echo "line $i" >> '${log}'; i=$((i+1)); sleep 0.02; done`],
      { stdio: 'ignore' },
    );
    try {
      await new Promise((r) => setTimeout(r, 300));
      const base = mkdtempSync(path.join(os.tmpdir(), 'gs-grow-'));
      const s = new Salvager({ node: 'n', transport: pool.get(node), base, snapshot: noSnapshot });
      const m = (await s.run())!;
      const it = m.items.find((i) => i.remotePath === log)!;
      assert.ok(it.status === 'verified' || it.status === 'failed');
      if (it.status === 'verified') {
        assert.equal(it.changedAfterVerify, true);
        assert.match(it.reason ?? '', /still being written|now \d+ B/);
        // What we kept is exactly a prefix of the node's file.
        const local = readFileSync(path.join(s.dir, it.localPath!));
        assert.ok(readFileSync(log).subarray(0, local.length).equals(local));
      }
      assert.equal(m.verdict, 'unsafe');
      assert.ok(m.lost.some((l) => l.remotePath === log));
      rmSync(base, { recursive: true, force: true });
    } finally {
      writer.kill('SIGKILL');
      spawnSync('pkill', ['-u', sim.user, '-f', 'echo "line']);
    }
  });

  it("remote disk full while launching: the launch stops with the node's ENOSPC message and starts nothing", async function () {
    const launchDir = path.join(sim.home, '.gpu-sessions', 'launch');
    mkdirSync(launchDir, { recursive: true });
    const uid = execFileSync('id', ['-u', sim.user]).toString().trim();
    const gid = execFileSync('id', ['-g', sim.user]).toString().trim();
    execFileSync('chown', ['-R', `${uid}:${gid}`, path.join(sim.home, '.gpu-sessions')]);
    if (spawnSync('mount', ['-t', 'tmpfs', '-o', `size=16k,uid=${uid},gid=${gid}`, 'tmpfs', launchDir]).status !== 0) this.skip();
    try {
      spawnSync('dd', ['if=/dev/zero', `of=${path.join(launchDir, 'filler')}`, 'bs=4k', 'count=64'], { stdio: 'ignore' }); // fills it
      const port = await freeTestPorts(1);
      const prof = path.join(mkdtempSync(path.join(os.tmpdir(), 'gs-full-launch-')), 'one.json');
      writeFileSync(
        prof,
        JSON.stringify({
          name: 'one',
          modelPath: path.join(sim.home, 'models', 'Qwen3.6-27B'),
          gpus: [0],
          layout: 'per-gpu',
          basePort: port,
          venv: '~/venv',
          logDir: '~/launch-logs',
          trustRemoteCode: true,
        }),
      );
      const { cli } = await import('../helpers/cli');
      const r = await cli(
        ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile, 'launch', 'simnode', '--profile', prof],
        { timeoutMs: 120_000 },
      );
      assert.notEqual(r.code, 0);
      assert.match(r.stderr + r.stdout, /No space left on device/);
      const running = sim.sshd.ssh(`pgrep -u ${sim.user} -f 'sglang[.]launch_server.*--port ${port}' | wc -l`).stdout.trim();
      assert.equal(running, '0', 'nothing was started');
    } finally {
      spawnSync('umount', [launchDir]);
    }
  });
});
