import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import { gatewayPy } from '../../../src/core/gateway/discover';

/** Issue 39, G1: one overall deadline per gateway request, run by python3 on this machine against a slow server. */
describe('gateway requests from the node have an overall deadline', () => {
  it('a gateway that answers one byte a second is given up after ~3 s, not after its whole body', async () => {
    const server = net.createServer((sock) => {
      sock.on('data', () => undefined);
      const body = 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{"workers": [' + ' '.repeat(99_980);
      let i = 0;
      const t = setInterval(() => {
        if (i >= body.length || sock.destroyed) return clearInterval(t);
        sock.write(body.slice(i, i + 1));
        i += 1;
      }, 1000);
      sock.on('close', () => clearInterval(t));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const started = Date.now();
      // spawn, not spawnSync: the slow server runs on this process's event loop
      const r = await new Promise<{ status: number | null; stdout: string; stderr: string }>((resolve) => {
        const c = spawn('python3', ['-c', `${gatewayPy()}\nprint(json.dumps(get('127.0.0.1', ${port}, '/workers', None)))`]);
        let stdout = '';
        let stderr = '';
        c.stdout.on('data', (b) => (stdout += b));
        c.stderr.on('data', (b) => (stderr += b));
        c.on('close', (status) => resolve({ status, stdout, stderr }));
      });
      const took = Date.now() - started;
      assert.equal(r.status, 0, String(r.stderr));
      const out = JSON.parse(String(r.stdout).trim().split('\n').pop()!);
      assert.equal(out.status, 0);
      assert.match(out.body, /did not answer within 3 s/);
      assert.ok(took < 8000, `took ${took} ms`);
    } finally {
      server.close();
    }
  });
});
