/**
 * Restarting a server (core/launch/restart) against a fake node that answers the server scan: which server
 * is restarted (own account, right port), a server replaced between capture and stop is left alone, and a
 * scan cut short is a typed error. The full stop → launch → ready cycle runs in test/integration/restart.test.ts.
 */
import assert from 'node:assert/strict';
import { restartServer } from '../../../src/core/launch/restart';
import { GpuSessionsError } from '../../../src/core/util/errors';
import type { ExecOptions } from '../../../src/core/ssh/transport';
import { ExecFakeTransport, execResult } from '../../helpers/fakeTransport';
import { envRecord, procRecord } from '../../helpers/procRecord';
import { srv } from '../../helpers/sglangServer';

/** The nonce a sectioned script was given (its prologue's first line, `N='GS…'`). */
const nonceOf = (o: ExecOptions) => /^N='?(GS[0-9a-f]+)'?$/m.exec(String(o.stdin))![1];

/** The scan output of a node with one server per [pid, port, uid]; this account is uid 1000. */
function scanText(n: string, servers: Array<[number, number, number]>): string {
  const sec = (name: string, body: string) => `\n@@${n}:${name}@@\n${body}`;
  const proc = servers
    .map(
      ([pid, port, uid]) =>
        procRecord({
          pid,
          ppid: 1,
          cwd: '/home/u',
          argv: ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--port', String(port)],
        }) + envRecord(pid, false, `${pid} ${uid}`, 'CUDA_VISIBLE_DEVICES=0\n'),
    )
    .join('');
  return [
    sec('me', '1000\n'),
    sec('login', ''),
    sec('ps', servers.map(([p, , u]) => `${p} 1 ${p} ${u}\n`).join('')),
    sec('proc', proc),
    sec('end', ''),
  ].join('');
}

describe('restart a server (core/launch/restart)', () => {
  it('no server of this account on the port: a usage error naming the port, after one scan and nothing else', async () => {
    const t = new ExecFakeTransport((_c, o) =>
      execResult(
        scanText(nonceOf(o), [
          [500, 30000, 1000],
          [600, 30001, 2000],
        ]),
      ),
    );
    for (const port of [30002, 30001]) {
      const e = await restartServer(t, { port }).catch((x) => x);
      assert.ok(e instanceof GpuSessionsError, String(e));
      assert.equal(e.code, 'usage');
      assert.equal(e.message, `No SGLang server of this account listens on port ${port} on fake-node.`);
    }
    assert.equal(t.calls.length, 2, 'one scan per attempt, no stop, no launch');
  });

  it('a server replaced between capture and stop is not stopped, and nothing is launched', async () => {
    let scans = 0;
    const t = new ExecFakeTransport((_c, o) => {
      scans++;
      // capture sees pid 500; by the stop, another process (pid 777) listens on the port
      return execResult(scanText(nonceOf(o), [[scans === 1 ? 500 : 777, 30000, 1000]]));
    });
    const progress: string[] = [];
    const r = await restartServer(t, { port: 30000, onProgress: (m) => progress.push(m) });
    assert.equal(r.launch, null);
    assert.equal(r.stop.stopped, false);
    assert.match(r.message, /^Not restarted: The server on port 30000 of fake-node has pid 777, not 500; nothing stopped\.$/);
    assert.equal(t.calls.length, 2, 'two scans, no kill, no launch');
    assert.equal(progress[0], 'capturing the server on port 30000…');
  });

  it('a crashed server (nothing on its port) with its captured command line: nothing stopped, that argv launched again', async () => {
    const seen: string[] = [];
    const t = new ExecFakeTransport((c, o) => {
      seen.push(String(o.stdin ?? c));
      if (seen.length === 1) return execResult(scanText(nonceOf(o), [[600, 30001, 1000]]));
      throw new GpuSessionsError('remote-failed', 'launch reached');
    });
    const captured = srv(['--model-path', '/models/crashy', '--port', '30000'], { pid: 500 });
    const progress: string[] = [];
    const e = await restartServer(t, { port: 30000, captured, onProgress: (m) => progress.push(m) }).catch((x) => x);
    assert.equal(e?.message, 'launch reached', 'after the scan, the launch of the captured command line (no stop)');
    assert.deepEqual(progress.slice(0, 2), ['capturing the server on port 30000…', 'starting it again…']);
    assert.ok(!/kill/.test(seen[1].split('\n')[0]), 'the second exec is no kill');
    assert.match(seen.slice(1).join('\n'), /\/models\/crashy/, 'the launch carries the captured argv');
    // a captured server of another port is not a licence: still a usage error
    const t2 = new ExecFakeTransport((_c, o) => execResult(scanText(nonceOf(o), [])));
    const e2 = await restartServer(t2, { port: 30002, captured }).catch((x) => x);
    assert.equal(e2.code, 'usage');
  });

  it('a scan cut short (no end section) is a typed remote-incomplete error', async () => {
    const t = new ExecFakeTransport((_c, o) => execResult(scanText(nonceOf(o), [[500, 30000, 1000]]).split(`@@${nonceOf(o)}:end@@`)[0]));
    const e = await restartServer(t, { port: 30000 }).catch((x) => x);
    assert.ok(e instanceof GpuSessionsError, String(e));
    assert.equal(e.code, 'remote-incomplete');
    assert.match(e.message, /^The server scan did not complete\.$/);
  });
});
