/**
 * Finding f3: `watch` grew by ~1.9 MB/s polling a server whose /metrics is endless (chunked) or 7 MB. The cause
 * was the SSH channel, not the parser: when httpGet stops reading mid-response (over maxBytes), ssh2's
 * Channel.destroy() only sends CHANNEL_CLOSE; node:http has paused the channel with part of the body buffered,
 * so it never ends, never emits 'close', and node:http never frees its parser (a native object held by a
 * global handle), which keeps the channel, the response and every chunk read alive. A net.Socket does not
 * show it (LocalTransport stays flat), so this runs over a real ssh2 client against an in-process ssh2 server
 * that answers direct-tcpip channels itself (no TCP server behind it, nothing but loopback).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Duplex } from 'node:stream';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { METRICS_MAX_BYTES, fetchMetrics } from '../../../src/core/sglang/endpoints';
import { KnownHostsStore } from '../../../src/core/ssh/knownHosts';
import { SshTransport, loadSsh2 } from '../../../src/core/ssh/transport';
import { generateEd25519 } from '../../../src/sim/demoServer';

const ENDLESS = 9001; // chunked, never ends (bounded here at 256 MiB per request)
const BIG = 9002; // Content-Length 7 MB
const SMALL = 9003; // a real-sized exposition

const LINE = 'sglang:num_running_reqs{model_name="m"} 1\n';
const BIG_BODY = Buffer.from(LINE.repeat(170_000)); // 7.1 MB, as hostile-sglang.py's bigmetrics
const SMALL_BODY = Buffer.from('sglang:num_running_reqs{model_name="m"} 3\nsglang:num_queue_reqs{model_name="m"} 1\n');

function gcFn(): () => void {
  const g = (globalThis as { gc?: () => void }).gc;
  if (g) return g;
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

/** Answer one HTTP request on a server-side channel; stops writing once the client closes it. */
function answer(ch: Duplex & { outgoing: { state: string } }, port: number): void {
  let closed = false;
  let wake: (() => void) | null = null;
  const stop = () => {
    closed = true;
    wake?.();
  };
  ch.on('close', stop).on('end', stop).on('error', stop);
  let req = '';
  let started = false;
  ch.on('data', (b: Buffer) => {
    req += b.toString('latin1');
    if (started || !req.includes('\r\n\r\n')) return;
    started = true;
    const open = () => !closed && ch.outgoing.state === 'open';
    if (port === SMALL) {
      ch.end(`HTTP/1.1 200 OK\r\nContent-Length: ${SMALL_BODY.length}\r\nConnection: close\r\n\r\n${SMALL_BODY.toString()}`);
    } else if (port === BIG) {
      ch.write(`HTTP/1.1 200 OK\r\nContent-Length: ${BIG_BODY.length}\r\nConnection: close\r\n\r\n`);
      ch.end(BIG_BODY);
    } else {
      ch.write('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n');
      const chunk = Buffer.from(`${(LINE.length * 1000).toString(16)}\r\n${LINE.repeat(1000)}\r\n`);
      void (async () => {
        for (let sent = 0; sent < 256 * 1024 * 1024 && open(); sent += chunk.length) {
          if (!ch.write(chunk)) await new Promise<void>((r) => ((wake = r), ch.once('drain', r)));
          wake = null;
        }
      })();
    }
  });
}

describe('/metrics over an SSH channel: memory stays bounded (finding f3)', function () {
  this.timeout(60_000);
  const { Server, utils } = loadSsh2();
  let dir: string;
  let tcp: net.Server;
  let t: SshTransport;
  // channels opened and not yet closed (a closed one is dropped: holding it would be a leak of our own)
  const unclosed = new Set<Duplex>();
  const gc = gcFn();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-metrics-mem-'));
    const hostKey = generateEd25519(utils);
    const clientKey = generateEd25519(utils);
    const identity = path.join(dir, 'id_ed25519');
    writeFileSync(identity, clientKey.private, { mode: 0o600 });
    const allowed = utils.parseKey(clientKey.public);
    const hostPub = utils.parseKey(hostKey.public);
    if (allowed instanceof Error || hostPub instanceof Error) throw new Error('key parse');
    const ssh = new Server({ hostKeys: [hostKey.private] }, (client) => {
      client.on('authentication', (ctx) =>
        ctx.method === 'publickey' && ctx.key.data.equals(allowed.getPublicSSH()) ? ctx.accept() : ctx.reject(),
      );
      client.on('tcpip', (accept, reject, info) => {
        if (![ENDLESS, BIG, SMALL].includes(info.destPort)) return reject();
        answer(accept() as unknown as Duplex & { outgoing: { state: string } }, info.destPort);
      });
      client.on('error', () => undefined);
    });
    tcp = net.createServer((sock) => ssh.injectSocket(sock));
    const port = await new Promise<number>((resolve) => tcp.listen(0, '127.0.0.1', () => resolve((tcp.address() as net.AddressInfo).port)));
    const kh = path.join(dir, 'known_hosts');
    writeFileSync(kh, `[127.0.0.1]:${port} ${hostPub.type} ${hostPub.getPublicSSH().toString('base64')}\n`);
    t = new SshTransport({
      node: { name: 'hostile-metrics', host: '127.0.0.1', port, user: 'u', identityFiles: [identity], source: 'cli' },
      knownHosts: new KnownHostsStore([kh]),
    });
    const connect = t.connectTcp.bind(t);
    t.connectTcp = async (host, p) => {
      const s = await connect(host, p);
      unclosed.add(s);
      s.once('close', () => unclosed.delete(s));
      return s;
    };
  });
  after(() => {
    t?.dispose();
    tcp?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a real-sized /metrics is parsed', async () => {
    const r = await fetchMetrics(t, '127.0.0.1', SMALL);
    assert.equal(r.error, null);
    assert.equal(r.summary?.runningReqs, 3);
    assert.equal(r.summary?.queueReqs, 1);
  });

  for (const [label, port, polls] of [
    ['endless chunked', ENDLESS, 150],
    ['7 MB', BIG, 150],
  ] as const) {
    it(`${polls} polls of a ${label} /metrics: each ends in time, none is parsed, every channel is freed, RSS stays flat`, async () => {
      const timeoutMs = 5000;
      // warm up (ssh connection, ciphers, first buffers), then measure
      for (let i = 0; i < 5; i++) await fetchMetrics(t, '127.0.0.1', port, { timeoutMs });
      gc();
      const rss0 = process.memoryUsage().rss;
      let peak = 0;
      for (let i = 1; i <= polls; i++) {
        const started = Date.now();
        const r = await fetchMetrics(t, '127.0.0.1', port, { timeoutMs });
        assert.ok(Date.now() - started < timeoutMs + 1000, `poll ${i} took ${Date.now() - started} ms`);
        assert.equal(r.status, 200);
        assert.equal(r.summary, null, 'a cut /metrics is not parsed as if complete');
        assert.match(r.error ?? '', /response over 1 MiB/);
        if (i % 10 === 0) {
          gc();
          const grown = process.memoryUsage().rss - rss0;
          peak = Math.max(peak, grown);
          // before the fix: ~5 MB per poll (fails by poll 20)
          assert.ok(grown < 50 * 1024 * 1024, `RSS grew by ${(grown / 1048576).toFixed(0)} MB after ${i} polls`);
        }
      }
      // every channel reaches 'close' (node:http frees its parser on it), shortly after its poll
      const deadline = Date.now() + 3000;
      while (unclosed.size && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.equal(unclosed.size, 0, 'channels never closed');
      assert.ok(peak < 50 * 1024 * 1024);
      assert.ok(METRICS_MAX_BYTES <= 1024 * 1024);
    });
  }
});
