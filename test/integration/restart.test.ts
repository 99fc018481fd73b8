/** Restart a server over a real sshd: same command line, new process, ready again. */
import assert from 'node:assert/strict';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { runOperation } from '../../src/core/remote/operation';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { probeOperation } from '../../src/core/node/probe';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode } from '../helpers/simnode';

describe('restart a server', function () {
  this.timeout(180_000);
  let sim: SimNode;
  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: 'gsrestart', gpuCount: 2 });
  });
  after(async () => sim?.stop());

  it('stops it and starts it again with the same argv, then it is ready', async () => {
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0];
    const port = sim.layout.ports[1];
    try {
      const before = (await runOperation(pool.get(node), probeOperation('n'))).servers.find((s) => s.port === port)!;
      assert.ok(before);
      const r = await cli(
        [
          '--ssh-config',
          sim.sshd.sshConfigFile,
          '--known-hosts',
          sim.sshd.knownHostsFile,
          'restart',
          'simnode',
          '--port',
          String(port),
          '--json',
        ],
        { timeoutMs: 150_000 },
      );
      assert.equal(r.code, 0, r.stderr + r.stdout);
      const rep = JSON.parse(r.stdout);
      assert.equal(rep.outcome, 'ready');
      assert.equal(rep.stop.stopped, true);
      const after = (await runOperation(pool.get(node), probeOperation('n'))).servers.find((s) => s.port === port)!;
      assert.ok(after, 'the server is back');
      assert.notEqual(after.pid, before.pid);
      assert.deepEqual(after.args, before.args);
      assert.deepEqual(after.gpus, before.gpus);
      // The other server was not touched.
      assert.ok((await runOperation(pool.get(node), probeOperation('n'))).servers.some((s) => s.port === sim.layout.ports[0]));
    } finally {
      pool.dispose();
    }
  });
});
