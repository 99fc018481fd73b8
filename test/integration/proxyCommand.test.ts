/**
 * ProxyCommand over a real sshd: a node whose HostName does not resolve, reachable only through a local
 * relay command (and through `ssh -W %h:%p` via a bastion alias), is probed and salvaged; its host key is
 * still verified (a changed key behind the proxy is refused); the proxy process is gone after disconnect;
 * a failing proxy's stderr is in the error; `ProxyCommand none` disables an inherited one.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { runOperation } from '../../src/core/remote/operation';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { probeOperation } from '../../src/core/node/probe';
import { SimNode, startSimNode } from '../helpers/simnode';
import { cli } from '../helpers/cli';
import { waitFor } from '../helpers/wait';

const BEHIND = 'gpu-behind-proxy';

/** Live processes whose command line contains `marker`. */
function processesWith(marker: string): number[] {
  const out: number[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(marker)) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

describe('ProxyCommand over a real sshd', function () {
  this.timeout(120_000);
  let sim: SimNode;
  let dir: string;
  let relay: string;
  let relayLog: string;
  let cfgFile: string;
  let kh: string;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: 'gsproxy', gpuCount: 2 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-proxycmd-'));
    relayLog = path.join(dir, 'relay.log');
    relay = path.join(dir, 'relay.js');
    // The relay knows where "gpu-behind-proxy" is; nothing else does (it does not resolve).
    writeFileSync(
      relay,
      `const net = require('net');
const [host, port, user, alias] = process.argv.slice(2);
require('fs').appendFileSync(${JSON.stringify(relayLog)}, JSON.stringify({ host, port, user, alias }) + '\\n');
if (host !== ${JSON.stringify(BEHIND)}) { process.stderr.write('relay: no route to ' + host + '\\n'); process.exit(7); }
const s = net.connect(Number(port), '127.0.0.1');
process.stdin.pipe(s);
s.pipe(process.stdout);
s.on('error', (e) => { process.stderr.write('relay: ' + e.message + '\\n'); process.exit(1); });
s.on('close', () => process.exit(0));
`,
    );
    // known_hosts holds the node's key under the name ssh verifies through a proxy: [HostName]:Port.
    kh = path.join(dir, 'known_hosts');
    writeFileSync(kh, sim.sshd.hostKeyLine().replace('[127.0.0.1]', `[${BEHIND}]`) + '\n');
    cfgFile = path.join(dir, 'ssh_config');
    const common = [`  User ${sim.user}`, `  IdentityFile ${sim.sshd.clientKey}`, `  UserKnownHostsFile ${kh}`];
    writeFileSync(
      cfgFile,
      [
        'Host behind',
        `  HostName ${BEHIND}`,
        `  Port ${sim.sshd.port}`,
        ...common,
        `  ProxyCommand ${process.execPath} ${relay} %h %p %r %n`,
        'Host broken',
        `  HostName unknown-host.invalid`,
        `  Port ${sim.sshd.port}`,
        ...common,
        `  ProxyCommand ${process.execPath} ${relay} %h %p %r %n`,
        'Host viabastion',
        `  HostName 127.0.0.1`,
        `  Port ${sim.sshd.port}`,
        ...common,
        `  ProxyCommand ssh -F ${cfgFile} -o BatchMode=yes -o StrictHostKeyChecking=yes -W %h:%p bastion`,
        'Host bastion',
        `  HostName 127.0.0.1`,
        `  Port ${sim.sshd.port}`,
        `  User ${sim.user}`,
        `  IdentityFile ${sim.sshd.clientKey}`,
        `  UserKnownHostsFile ${sim.sshd.knownHostsFile}`,
        '  ProxyCommand none',
        'Host direct',
        `  HostName 127.0.0.1`,
        `  Port ${sim.sshd.port}`,
        ...common.slice(0, 2),
        `  UserKnownHostsFile ${sim.sshd.knownHostsFile}`,
        '  ProxyCommand none',
        'Host *',
        '  ProxyCommand /bin/false',
        '',
      ].join('\n'),
    );
  });
  after(async () => {
    await sim?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('probes a node reachable only through the ProxyCommand; the proxy process is gone after disconnect', async () => {
    const node = listNodes({ sshConfigFile: cfgFile }).nodes.find((n) => n.name === 'behind')!;
    assert.ok(node.proxyCommand, 'the ProxyCommand is in the node spec');
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([kh]) });
    try {
      const p = await runOperation(pool.get(node), probeOperation('behind'));
      assert.equal(p.gpus.length, 2);
      assert.equal(p.servers.filter((s) => sim.layout.ports.includes(s.port)).length, 2);
      const calls = readFileSync(relayLog, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      assert.deepEqual(calls[calls.length - 1], { host: BEHIND, port: String(sim.sshd.port), user: sim.user, alias: 'behind' });
      assert.equal(processesWith(relay).length, 1, 'one relay for the pooled connection');
    } finally {
      pool.dispose();
    }
    await waitFor('the relay to end after disconnect', () => processesWith(relay).length === 0, 10_000);
  });

  it('probe and salvage through the ProxyCommand with the CLI', async () => {
    const base = ['--ssh-config', cfgFile, '--known-hosts', kh];
    const r = await cli([...base, 'probe', 'behind', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).gpus.length, 2);
    const dest = path.join(dir, 'salvage');
    const s = await cli([...base, 'salvage', 'behind', '--dest', dest, '--yes'], { timeoutMs: 90_000 });
    assert.ok(s.code === 0 || s.code === 5, s.stderr);
    // The manifest on disk (what salvage wrote through the proxy).
    const runs = readdirSync(path.join(dest, 'behind'));
    assert.equal(runs.length, 1, runs.join(', '));
    const m = JSON.parse(readFileSync(path.join(dest, 'behind', runs[0], 'salvage-manifest.json'), 'utf8'));
    assert.ok(m.verdict === 'safe' || m.verdict === 'unsafe', String(m.verdict));
    assert.ok(existsSync(path.join(dest, 'behind', runs[0], 'SALVAGE.md')));
    assert.ok(m.items.filter((i: { status: string }) => i.status === 'verified').length >= 5);
    // A proxy of a connection the CLI had open at exit gets EOF on its stdin and ends (as with OpenSSH).
    await waitFor('no relay left after the CLI exited', () => processesWith(relay).length === 0, 10_000);
  });

  it('works with `ssh -W %h:%p bastion` as the ProxyCommand', async function () {
    if (spawnSync('which', ['ssh']).status !== 0) this.skip();
    const r = await cli(['--ssh-config', cfgFile, '--known-hosts', sim.sshd.knownHostsFile, 'probe', 'viabastion', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).gpus.length, 2);
  });

  it('a changed host key behind the proxy is refused (exit 3); the proxy is ended', async () => {
    const other = path.join(dir, 'other_hostkey');
    spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', other]);
    const [type, b64] = readFileSync(other + '.pub', 'utf8')
      .trim()
      .split(/\s+/);
    const badKh = path.join(dir, 'known_hosts_changed');
    writeFileSync(badKh, `[${BEHIND}]:${sim.sshd.port} ${type} ${b64}\n`);
    const r = await cli(['--ssh-config', cfgFile, '--known-hosts', badKh, 'probe', 'behind']);
    assert.equal(r.code, 3, r.stderr);
    assert.match(r.stderr, /host key/i);
    assert.match(r.stderr, /changed|does not match/i);
    assert.equal(processesWith(relay).length, 0);
  });

  it('a failing ProxyCommand is reported with its exit status and stderr', async () => {
    const r = await cli(['--ssh-config', cfgFile, '--known-hosts', kh, '--timeout', '10', 'probe', 'broken']);
    assert.equal(r.code, 4, r.stderr);
    assert.match(r.stderr, /ProxyCommand/);
    assert.match(r.stderr, /relay: no route to unknown-host\.invalid/);
    assert.match(r.stderr, /exit status 7/);
  });

  it('`ProxyCommand none` disables a ProxyCommand inherited from Host *', async () => {
    const node = listNodes({ sshConfigFile: cfgFile }).nodes.find((n) => n.name === 'direct')!;
    assert.equal(node.proxyCommand, undefined);
    const r = await cli(['--ssh-config', cfgFile, '--known-hosts', sim.sshd.knownHostsFile, 'probe', 'direct', '--json']);
    assert.equal(r.code, 0, r.stderr);
  });
});
