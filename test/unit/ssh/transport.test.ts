/**
 * SshTransport against an in-process ssh2 server that answers an exec in one burst: the channel's success,
 * data, exit-status, EOF and CLOSE leave in one write (the socket is corked), so the client parses them all in
 * one go. A quick command on a fast link looks exactly like this; the exit status must not be lost (it was:
 * salvage read finished `tail | head` commands as "exit null" and execs as dropped connections).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore } from '../../../src/core/ssh/knownHosts';
import { SshTransport, loadSsh2 } from '../../../src/core/ssh/transport';
import { generateEd25519 } from '../../../src/sim/demoServer';

type Answer = { out: string; err?: string; exit: number | string };

describe('SshTransport: an exec answered in one burst', function () {
  this.timeout(20_000);
  const { Server, utils } = loadSsh2();
  let dir: string;
  let tcp: net.Server;
  let port: number;
  let t: SshTransport;
  const answers = new Map<string, Answer>();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-transport-'));
    const hostKey = generateEd25519(utils);
    const clientKey = generateEd25519(utils);
    const identity = path.join(dir, 'id_ed25519');
    writeFileSync(identity, clientKey.private, { mode: 0o600 });
    const allowed = utils.parseKey(clientKey.public);
    const hostPub = utils.parseKey(hostKey.public);
    if (allowed instanceof Error || hostPub instanceof Error) throw new Error('key parse');
    const ssh = new Server({ hostKeys: [hostKey.private] });
    let injected: net.Socket | undefined;
    tcp = net.createServer((sock) => {
      // injectSocket emits 'connection' synchronously, with the client made for this socket
      injected = sock;
      ssh.injectSocket(sock);
    });
    ssh.on('connection', (client) => {
      const sock = injected!;
      client.on('authentication', (ctx) =>
        ctx.method === 'publickey' && ctx.key.data.equals(allowed.getPublicSSH()) ? ctx.accept() : ctx.reject(),
      );
      client.on('ready', () =>
        client.on('session', (acceptSession) => {
          const session = acceptSession();
          session.on('exec', (accept, _reject, info) => {
            const a = answers.get(info.command) ?? { out: '', err: 'unknown command', exit: 127 };
            sock.cork();
            const ch = accept();
            ch.write(a.out);
            if (a.err) ch.stderr.write(a.err);
            if (typeof a.exit === 'number') ch.exit(a.exit);
            else ch.exit(a.exit, false, '');
            ch.end();
            process.nextTick(() => sock.uncork());
          });
        }),
      );
      client.on('error', () => undefined);
    });
    port = await new Promise<number>((resolve) => tcp.listen(0, '127.0.0.1', () => resolve((tcp.address() as net.AddressInfo).port)));
    const kh = path.join(dir, 'known_hosts');
    writeFileSync(kh, `[127.0.0.1]:${port} ${hostPub.type} ${hostPub.getPublicSSH().toString('base64')}\n`);
    t = new SshTransport({
      node: { name: 'burst', host: '127.0.0.1', port, user: 'u', identityFiles: [identity], source: 'cli' },
      knownHosts: new KnownHostsStore([kh]),
    });
  });
  after(() => {
    t?.dispose();
    tcp?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('exec: keeps the exit status (0 and non-zero) and the output', async () => {
    answers.set('ok', { out: 'hello\n', exit: 0 });
    answers.set('fails', { out: '', err: 'no such file\n', exit: 3 });
    for (let i = 0; i < 20; i++) {
      const r = await t.exec('ok');
      assert.equal(r.code, 0, `run ${i}`);
      assert.equal(r.stdout.toString(), 'hello\n');
      const f = await t.exec('fails');
      assert.equal(f.code, 3);
      assert.equal(f.stderr.toString(), 'no such file\n');
    }
  });

  it('exec: a signal is reported as the signal, not as a dropped connection', async () => {
    answers.set('killed', { out: 'partial', exit: 'TERM' });
    const r = await t.exec('killed');
    assert.equal(r.code, null);
    assert.equal(r.signal, 'SIGTERM');
  });

  it('stream: done carries the exit status of a quick command', async () => {
    answers.set('head', { out: 'x'.repeat(1000), exit: 0 });
    for (let i = 0; i < 20; i++) {
      const s = await t.stream('head');
      let got = 0;
      s.stdout.on('data', (b: Buffer) => (got += b.length));
      const done = await s.done;
      assert.deepEqual(done, { code: 0, signal: undefined }, `run ${i}`);
      assert.equal(got, 1000);
    }
  });
});
