/**
 * Issue 39 (D1, G1): no node-side process outlives its operation. A script whose child runs on after the client
 * gives up (its timeout, or a cancel) is ended with its process group; a detached process (setsid) is not.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { runOperation } from '../../src/core/remote/operation';
import { SimNode, startSimNode, testUser } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';

describe('no node-side process outlives its operation (issue 39, real sshd)', function () {
  this.timeout(120_000);
  let sim: SimNode;
  let pool: ConnectionPool;
  const count = (tag: string) => Number(spawnSync('pgrep', ['-c', '-u', sim.user, '-f', tag]).stdout.toString().trim() || '0');

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: testUser('gs39orph'), gpuCount: 1, startServers: false });
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
  });
  after(async () => {
    pool?.dispose();
    if (sim) spawnSync('pkill', ['-u', sim.user]);
    await sim?.stop();
  });

  const op = (tag: string, timeoutMs: number) => ({
    name: 'orphan-test',
    command: 'sh -s',
    // a python3 child that would run for 5 minutes, as the quadratic data check did (D1)
    stdin: `python3 -c 'import time, sys; time.sleep(300)' ${tag} &\nsleep 1\nsetsid sh -c 'sleep 300' ${tag}-detached < /dev/null > /dev/null 2>&1 &\nwait\n`,
    timeoutMs,
    maxOutputBytes: 1024,
    parse: () => undefined,
  });

  it('a client timeout ends the script and its python3 child; a setsid process stays', async () => {
    const t = pool.get(listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0]);
    const tag = 'gs39-timeout-mark';
    await assert.rejects(runOperation(t, op(tag, 3000)), /did not finish within/);
    await waitFor('the timed-out python3 to be gone', () => count(`${tag}$`) === 0, 15_000);
    assert.equal(count(`${tag}-detached`), 1, 'a detached process is not the operation’s');
    spawnSync('pkill', ['-u', sim.user, '-f', `${tag}-detached`]);
  });

  it('a cancel ends it too', async () => {
    const t = pool.get(listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0]);
    const tag = 'gs39-cancel-mark';
    const ac = new AbortController();
    const p = runOperation(t, op(tag, 60_000), ac.signal);
    await waitFor('the python3 child to run', () => count(`${tag}$`) === 1, 15_000);
    ac.abort();
    await assert.rejects(p, /Cancelled/);
    await waitFor('the cancelled python3 to be gone', () => count(`${tag}$`) === 0, 15_000);
  });
});
