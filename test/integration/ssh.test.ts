/**
 * Foundation integration tests: the CLI and the core over a REAL OpenSSH sshd on 127.0.0.1 with the
 * simulated 7-GPU node behind it.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { runOperation } from '../../src/core/remote/operation';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { probeOperation } from '../../src/core/node/probe';
import type { SshTransport } from '../../src/core/ssh/transport';
import { TestSshd, freePort } from '../helpers/sshd';
import { SimNode, startSimNode } from '../helpers/simnode';

import { cli } from '../helpers/cli';

function acceptedLogins(sshd: TestSshd): number {
  return (readFileSync(sshd.logFile, 'utf8').match(/Accepted publickey for/g) ?? []).length;
}

describe('foundation over a real OpenSSH sshd', function () {
  this.timeout(120_000);
  let sim: SimNode;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ genTokPerSec: 1500, speculativeAlgorithm: 'NEXTN' });
  });
  after(async () => {
    await sim?.stop();
  });

  // The node's process table is this machine's: other suites' servers may be visible. Count ours.
  const own = <T extends { port: number }>(servers: T[]): T[] => servers.filter((s) => sim.layout.ports.includes(s.port));
  const base = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];

  it('probe --json reports the right GPUs, servers and artifacts', async () => {
    const r = await cli([...base(), 'probe', 'simnode', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const p = JSON.parse(r.stdout);
    p.servers = own(p.servers);
    assert.equal(p.node, 'simnode');
    assert.equal(p.gpus.length, 7);
    for (const [i, g] of p.gpus.entries()) {
      assert.equal(g.index, i);
      assert.equal(g.name, 'NVIDIA B200');
      assert.equal(g.memoryTotalMiB, 183359);
      assert.ok(g.memoryUsedMiB > 100000, `GPU ${i} holds a server's memory`);
      assert.match(g.uuid, /^GPU-/);
    }
    assert.equal(p.driverVersion, '570.133.20');
    assert.equal(p.cudaVersion, '12.8');
    assert.equal(p.servers.length, 7);
    for (const [i, s] of p.servers.entries()) {
      assert.equal(s.port, sim.layout.ports[i]);
      assert.equal(s.tp, 1);
      assert.equal(s.dp, 1);
      assert.equal(s.speculativeAlgorithm, 'NEXTN');
      assert.equal(s.reasoningParser, 'qwen3');
      assert.match(s.modelPath, /Qwen3\.6-27B$/);
      assert.deepEqual(s.args.slice(0, 3), ['python3', '-m', 'sglang.launch_server']);
      assert.equal(s.logFile, sim.layout.logFiles[i]);
      assert.deepEqual(s.gpus, [i]);
    }
    const kinds = new Map<string, string>(
      p.artifacts.map((a: { path: string; kind: string }) => [path.relative(sim.home, a.path), a.kind]),
    );
    assert.equal(kinds.get('launch_all.sh'), 'launch-script');
    assert.equal(kinds.get('launch_tuned.sh'), 'launch-script');
    assert.equal(kinds.get('completions/progress.json'), 'progress');
    assert.equal(kinds.get('completions/.done_indices'), 'progress');
    assert.ok([...kinds.keys()].some((k) => /sglang_gpu0\.log$/.test(k)));
    for (const a of p.artifacts) {
      assert.equal(typeof a.size, 'number');
      assert.ok(!Number.isNaN(Date.parse(a.mtime)));
    }
  });

  it('uses one pooled connection and one exec per probe', async () => {
    const before = acceptedLogins(sim.sshd);
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    try {
      const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes.find((n) => n.name === 'simnode')!;
      const t = pool.get(node) as SshTransport;
      let execs = 0;
      const orig = t.exec.bind(t);
      t.exec = (c, o) => (execs++, orig(c, o));
      const a = await runOperation(t, probeOperation('simnode'));
      const b = await runOperation(t, probeOperation('simnode'));
      assert.equal(own(a.servers).length, 7);
      assert.equal(b.gpus.length, 7);
      assert.equal(execs, 2, 'one exec per probe');
      assert.equal(t.connectCount, 1, 'one connection for both');
      assert.equal(pool.get(node), t, 'the pool hands out the same transport');
      assert.equal(acceptedLogins(sim.sshd) - before, 1);
    } finally {
      pool.dispose();
    }
  });

  it('reconnects after sshd drops the connection', async () => {
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    try {
      const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes.find((n) => n.name === 'simnode')!;
      const t = pool.get(node) as SshTransport;
      const states: string[] = [];
      t.onStateChange((s) => states.push(s));
      await runOperation(t, probeOperation('simnode'));
      sim.sshd.dropConnections();
      const deadline = Date.now() + 10_000;
      while (t.state === 'connected' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(t.state, 'disconnected');
      const again = await runOperation(t, probeOperation('simnode'));
      assert.equal(again.gpus.length, 7);
      assert.equal(t.connectCount, 2);
      assert.deepEqual(states, ['connecting', 'connected', 'disconnected', 'connecting', 'connected']);
    } finally {
      pool.dispose();
    }
  });

  it('lists nodes, and a malformed ssh config names file and line while other nodes stay listed', async () => {
    const cfgFile = path.join(sim.sshd.dir, 'broken_config');
    writeFileSync(
      cfgFile,
      [
        'Host good-a',
        '  HostName 127.0.0.1',
        '  Port 2201',
        'Host bad',
        '  Port 22x',
        'Host good-b',
        '  HostName 127.0.0.2',
        '  User alice',
        '  ProxyJump good-a',
        '',
      ].join('\n'),
    );
    const r = await cli(['--ssh-config', cfgFile, 'nodes', '--json']);
    assert.equal(r.code, 0);
    const nodes = JSON.parse(r.stdout);
    const names = nodes.map((n: { name: string }) => n.name);
    assert.ok(names.includes('good-a') && names.includes('good-b'));
    assert.deepEqual(
      nodes.find((n: { name: string }) => n.name === 'good-b'),
      { name: 'good-b', host: '127.0.0.2', user: 'alice', port: 22, proxyJump: 'good-a' },
    );
    assert.match(r.stderr, new RegExp(`${cfgFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:5: .*Port`));
  });

  it('an unreachable node exits 4 with a clear message', async () => {
    const port = await freePort();
    const r = await cli(['--known-hosts', sim.sshd.knownHostsFile, '--timeout', '5', 'probe', `${sim.user}@127.0.0.1:${port}`]);
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /unreachable/i);
    assert.match(r.stderr, new RegExp(`127\\.0\\.0\\.1:${port}`));
  });

  it('a wrong key exits 4 (authentication failed)', async () => {
    const other = path.join(sim.sshd.dir, 'other_key');
    spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const cfgFile = path.join(sim.sshd.dir, 'wrongkey_config');
    writeFileSync(cfgFile, readFileSync(sim.sshd.sshConfigFile, 'utf8').replace(sim.sshd.clientKey, other));
    const r = await cli(['--ssh-config', cfgFile, '--known-hosts', sim.sshd.knownHostsFile, 'probe', 'simnode'], { timeoutMs: 30_000 });
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /Authentication to simnode .* failed/);
  });

  describe('host keys', () => {
    it('an unknown key is refused without --accept-new (exit 3) and known_hosts is unchanged', async () => {
      const kh = path.join(sim.sshd.dir, 'kh_empty');
      writeFileSync(kh, '');
      const r = await cli(['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', kh, 'probe', 'simnode']);
      assert.equal(r.code, 3, r.stderr);
      assert.match(r.stderr, /not in known_hosts \(ssh-ed25519 SHA256:/);
      assert.equal(readFileSync(kh, 'utf8'), '');
    });

    it('an unknown key with --accept-new is recorded as a correct OpenSSH line', async () => {
      const kh = path.join(sim.sshd.dir, 'kh_new');
      writeFileSync(kh, '');
      const r = await cli(['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', kh, '--accept-new', 'probe', 'simnode', '--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(JSON.parse(r.stdout).gpus.length, 7);
      // OpenSSH itself finds and trusts the line we wrote.
      const found = spawnSync('ssh-keygen', ['-F', `[127.0.0.1]:${sim.sshd.port}`, '-f', kh], { encoding: 'utf8' });
      assert.equal(found.status, 0, found.stderr);
      const ssh = spawnSync(
        'ssh',
        [
          '-F',
          sim.sshd.sshConfigFile,
          '-o',
          `UserKnownHostsFile=${kh}`,
          '-o',
          'StrictHostKeyChecking=yes',
          '-o',
          'BatchMode=yes',
          'simnode',
          'echo ok',
        ],
        { encoding: 'utf8' },
      );
      assert.equal(ssh.stdout.trim(), 'ok', ssh.stderr);
      // A second run needs no acceptance.
      const again = await cli(['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', kh, 'probe', 'simnode']);
      assert.equal(again.code, 0, again.stderr);
    });

    it('a changed key exits 3 before authentication: nothing runs on the node', async () => {
      const kh = path.join(sim.sshd.dir, 'kh_old');
      const oldLine = sim.sshd.hostKeyLine() + '\n';
      writeFileSync(kh, oldLine);
      await sim.sshd.rotateHostKey();
      sim.sshd.writeKnownHosts();
      const logins = acceptedLogins(sim.sshd);
      const r = await cli(['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', kh, '--accept-new', 'probe', 'simnode']);
      assert.equal(r.code, 3, r.stderr);
      assert.match(r.stderr, /HOST IDENTIFICATION HAS CHANGED|host key .*changed/i);
      const fps = r.stderr.match(/SHA256:[A-Za-z0-9+/]{43}/g) ?? [];
      assert.ok(new Set(fps).size >= 2, `both fingerprints shown: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`${kh.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:1`));
      assert.equal(acceptedLogins(sim.sshd), logins, 'no authentication happened');
      assert.equal(readFileSync(kh, 'utf8'), oldLine, 'known_hosts not modified');
    });
  });

  it('reaches the node through a ProxyJump hop (a second sshd)', async () => {
    const jump = await TestSshd.start({ user: sim.user }, 'jumphost');
    try {
      const cfgFile = path.join(sim.sshd.dir, 'jump_config');
      const kh = path.join(sim.sshd.dir, 'kh_jump');
      writeFileSync(kh, sim.sshd.hostKeyLine() + '\n' + jump.hostKeyLine() + '\n');
      writeFileSync(
        cfgFile,
        [
          'Host jumphost',
          '  HostName 127.0.0.1',
          `  Port ${jump.port}`,
          `  User ${sim.user}`,
          `  IdentityFile ${jump.clientKey}`,
          'Host behind',
          '  HostName 127.0.0.1',
          `  Port ${sim.sshd.port}`,
          `  User ${sim.user}`,
          `  IdentityFile ${sim.sshd.clientKey}`,
          '  ProxyJump jumphost',
          '',
        ].join('\n'),
      );
      const jl = acceptedLogins(jump);
      const r = await cli(['--ssh-config', cfgFile, '--known-hosts', kh, 'probe', 'behind', '--json']);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(own(JSON.parse(r.stdout).servers).length, 7);
      assert.equal(acceptedLogins(jump) - jl, 1, 'authenticated at the jump host');
    } finally {
      await jump.dispose();
    }
  });

  it('a ProxyJump hop that is down is reported as unreachable', async () => {
    const port = await freePort();
    const cfgFile = path.join(sim.sshd.dir, 'jumpdown_config');
    writeFileSync(
      cfgFile,
      [
        'Host deadhop',
        '  HostName 127.0.0.1',
        `  Port ${port}`,
        'Host behind2',
        '  HostName 127.0.0.1',
        `  Port ${sim.sshd.port}`,
        `  User ${sim.user}`,
        `  IdentityFile ${sim.sshd.clientKey}`,
        '  ProxyJump deadhop',
        '',
      ].join('\n'),
    );
    const r = await cli(['--ssh-config', cfgFile, '--known-hosts', sim.sshd.knownHostsFile, '--timeout', '5', 'probe', 'behind2']);
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /unreachable/i);
  });
});
