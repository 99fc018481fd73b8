/**
 * A large file on a short link (loopback through an unshaped relay, so connections can be counted) travels on one
 * stream of the pooled connection, read once on the node by its single-pass reader: byte-identical, verified against
 * the hash the node computed while it sent, no second hashing read, no extra connection; a file that shrank since
 * the listing fails and leaves nothing behind. The link's round trip is the connection's own.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import type { Transport } from '../../src/core/ssh/transport';
import { downloadOne } from '../../src/core/salvage/transfer/transfer';
import { PARALLEL_MIN_BYTES } from '../../src/core/salvage/transfer/parallel';
import { SHORT_LINK_MS, linkRoundTrip, parallelPays } from '../../src/core/salvage/transfer/link';
import { ShapingRelay } from '../helpers/relay';
import { SimNode, startSimNode } from '../helpers/simnode';
import { downloadVerified } from '../helpers/verifiedCopy';
import { withEnv } from '../helpers/withEnv';

const MiB = 1024 * 1024;

describe('one stream for a large file on a short link (real sshd)', function () {
  this.timeout(120_000);
  let sim: SimNode;
  const relays: ShapingRelay[] = [];
  let tmp: string;
  let big: string;
  let bigBytes: Buffer;
  const pools: ConnectionPool[] = [];

  /** A transport through a relay with `delayMs` each way; every command it runs is recorded. */
  async function via(delayMs: number): Promise<{ t: Transport; relay: ShapingRelay; commands: string[] }> {
    const relay = await ShapingRelay.start({ targetPort: sim.sshd.port, delayMs, lifetimeMs: 5 * 60_000 });
    relays.push(relay);
    const kh = path.join(tmp, `known_hosts_${relay.port}`);
    writeFileSync(kh, `[127.0.0.1]:${relay.port} ${sim.sshd.hostKeyLine().split(' ').slice(1).join(' ')}\n`, { mode: 0o600 });
    const cfg = path.join(tmp, `ssh_config_${relay.port}`);
    writeFileSync(
      cfg,
      `Host viarelay\n  HostName 127.0.0.1\n  Port ${relay.port}\n  User ${sim.user}\n  IdentityFile ${sim.sshd.clientKey}\n  UserKnownHostsFile ${kh}\n`,
    );
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([kh]) });
    pools.push(pool);
    const t0 = pool.get(listNodes({ sshConfigFile: cfg }).nodes[0]);
    const commands: string[] = [];
    const t = new Proxy(t0, {
      get(target, prop, recv) {
        const v = Reflect.get(target, prop, recv);
        if (typeof v !== 'function') return v;
        if (prop !== 'exec' && prop !== 'stream') return v.bind(target);
        return (cmd: string, o: unknown) => (commands.push(cmd), v.call(target, cmd, o));
      },
    });
    return { t, relay, commands };
  }

  before(async () => {
    sim = await startSimNode({ user: 'gsonestream', startServers: false });
    tmp = mkdtempSync(path.join(os.tmpdir(), 'gs-onestream-'));
    big = path.join(sim.home, 'hidden_states.bin');
    execFileSync('dd', ['if=/dev/urandom', `of=${big}`, 'bs=1M', `count=${PARALLEL_MIN_BYTES / MiB + 6}`, 'status=none']);
    execFileSync('chown', [`${sim.user}:${sim.user}`, big]);
    bigBytes = readFileSync(big);
  });
  after(async () => {
    for (const p of pools) p.dispose();
    for (const r of relays) await r.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
    await sim?.stop();
  });

  it('travels on the pooled connection, read once on the node, verified', async () => {
    const { t, relay, commands } = await via(0);
    // The one-stream path, whatever a loaded machine makes of loopback's round trip (usually well under 1 ms).
    const dest = mkdtempSync(path.join(tmp, 'dest-'));
    await withEnv({ GS_SALVAGE_PARALLEL: 'off' }, () => downloadVerified(t, dest, big, bigBytes));
    console.log(`      loopback round trip: ${(await linkRoundTrip(t)).toFixed(2)} ms`);
    assert.equal(relay.connections.length, 1, 'no connection besides the pooled one');
    assert.deepEqual(
      commands.filter((c) => /sha256sum|\bhead\b/.test(c)),
      [],
      'no second, hashing read of the file on the node',
    );
    assert.equal(commands.filter((c) => c.includes('single-pass reader')).length, 1);
  });

  it('where ranges cannot have connections of their own (ProxyJump, ProxyCommand): one stream, no second read', async () => {
    const { t, relay, commands } = await via(0);
    // as a transport through a jump host answers: no recipe for the worker threads' connections
    const jumped = new Proxy(t, {
      get: (target, prop, recv) => (prop === 'connectRecipe' ? () => undefined : Reflect.get(target, prop, recv)),
    });
    const dest = mkdtempSync(path.join(tmp, 'dest-'));
    await withEnv({ GS_SALVAGE_PARALLEL: 'on' }, () => downloadVerified(jumped, dest, big, bigBytes));
    assert.equal(relay.connections.length, 1);
    assert.deepEqual(
      commands.filter((c) => /sha256sum|\bhead\b/.test(c)),
      [],
      'the hashing read that goes with ranges is not started',
    );
    assert.equal(commands.filter((c) => c.includes('single-pass reader')).length, 1);
  });

  it('a file that shrank since the listing fails, and nothing is left behind', async () => {
    const { t } = await via(0);
    const f = path.join(sim.home, 'shrank.bin');
    writeFileSync(f, bigBytes.subarray(0, 5 * MiB));
    execFileSync('chown', [`${sim.user}:${sim.user}`, f]);
    const dest = mkdtempSync(path.join(tmp, 'dest-'));
    const r = await downloadOne(t, dest, { remotePath: f, localPath: 'files/s.bin', size: 9 * MiB }, () => undefined);
    assert.equal(r.ok, false);
    assert.match(r.reason ?? '', /changed on the node during the transfer \(listed 9437184 B, received 5242880 B\)/);
    assert.equal(existsSync(path.join(dest, 'files/s.bin')), false);
    assert.equal(existsSync(path.join(dest, 'files/s.bin.gs-partial')), false);
  });

  it("measures the connection's own round trip: a 5 ms relay each way is not a short link", async () => {
    const { t, commands } = await via(5);
    const rt = await linkRoundTrip(t);
    assert.ok(rt >= 10 && rt >= SHORT_LINK_MS, `round trip ${rt} ms through 5 ms each way`);
    assert.equal(await parallelPays(t, undefined), true);
    assert.deepEqual(commands, [], 'no command on the node to measure it');
    assert.equal(await parallelPays(t, 'off'), false, 'GS_SALVAGE_PARALLEL=off decides');
  });
});
