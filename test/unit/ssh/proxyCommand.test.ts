/**
 * ProxyCommand (core/ssh/proxyCommand): token expansion that refuses shell syntax in substituted names, and
 * the local process that carries the SSH byte stream. A node reached through it: test/integration/proxyCommand.test.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { expandProxyCommand, spawnProxyCommand } from '../../../src/core/ssh/proxyCommand';
import { GpuSessionsError } from '../../../src/core/util/errors';
import { processRunning } from '../../helpers/procs';

describe('ProxyCommand: token expansion', () => {
  it('expands %h %p %r %n %% and refuses unknown tokens and shell syntax in substituted names', () => {
    const t = { host: 'gpu-1.example', port: 2222, user: 'ubuntu', alias: 'gpu1' };
    assert.equal(expandProxyCommand('relay %h:%p as %r (%n) 100%%', t), 'relay gpu-1.example:2222 as ubuntu (gpu1) 100%');
    assert.throws(() => expandProxyCommand('relay %x', t), /unknown token %x/);
    assert.throws(() => expandProxyCommand('relay %h', { ...t, host: 'a;rm -rf ~' }), /not a plain host/);
  });

  it('a lone % at the end, %%h and every unsafe value: literal or a config error, never passed to the shell', () => {
    const t = { host: 'h', port: 22, user: 'u', alias: 'a' };
    assert.equal(expandProxyCommand('%%h %%%h', t), '%h %h');
    const isConfig = (e: unknown) => e instanceof GpuSessionsError && e.code === 'config';
    assert.throws(() => expandProxyCommand('nc %h 100%', t), isConfig);
    for (const bad of ['$(id)', '`id`', 'a b', 'a\nb', "a'b", 'a|b', 'a&b', 'a>b', '~root'])
      assert.throws(() => expandProxyCommand('nc %h', { ...t, host: bad }), isConfig, bad);
    assert.throws(() => expandProxyCommand('nc %r', { ...t, user: 'u;id' }), isConfig);
    assert.equal(expandProxyCommand('nc %h %p', { ...t, host: '[fe80::1]' }), 'nc [fe80::1] 22', 'IPv6 literals are plain');
    assert.equal(expandProxyCommand('no tokens', t), 'no tokens');
  });
});

describe('ProxyCommand: the local process', () => {
  it('carries bytes both ways, keeps its stderr, and kill ends it', async () => {
    const p = spawnProxyCommand("sh -c 'echo starting >&2; cat; sleep 30'", { label: 'test' });
    const got = new Promise<string>((resolve) => p.sock.once('data', (d: Buffer) => resolve(d.toString())));
    p.sock.write('SSH-2.0-x\r\n');
    assert.equal(await got, 'SSH-2.0-x\r\n');
    assert.equal(p.exitStatus(), null);
    p.kill(200);
    p.kill(200); // idempotent
    const t0 = Date.now();
    await p.exited;
    assert.ok(Date.now() - t0 < 5000, 'ended by the signal, not by sleep finishing');
    assert.match(String(p.exitStatus()), /^killed by SIG(TERM|KILL)$/);
    assert.equal(p.stderrTail(), 'starting');
  });

  it('a command that fails says how it ended', async () => {
    const p = spawnProxyCommand("sh -c 'echo no route >&2; exit 7'", { label: 'test' });
    await p.exited;
    assert.equal(p.exitStatus(), 'exit status 7');
    assert.equal(p.stderrTail(), 'no route');
  });
});

describe('ProxyCommand: never outlives the process that started it (issue 23)', function () {
  this.timeout(20_000);
  const mod = path.resolve(__dirname, '..', '..', '..', 'src', 'core', 'ssh', 'proxyCommand.js');

  for (const how of ['exit', 'error', 'kill'] as const) {
    it(`a proxy that ignores SIGTERM is gone within 3 s after the CLI ends (${how})`, async function () {
      if (process.platform !== 'linux') this.skip();
      // a proxy like SSM's session-manager-plugin: it does not exit on its own, and shrugs off SIGTERM
      const script = `
        const { spawnProxyCommand } = require(${JSON.stringify(mod)});
        const p = spawnProxyCommand("sh -c 'trap \\"\\" TERM; while :; do sleep 0.2; done'", { label: 't' });
        process.stdout.write(String(p.pid) + '\\n');
        setTimeout(() => {
          if (${JSON.stringify(how)} === 'kill') { p.kill(); process.exit(0); }
          if (${JSON.stringify(how)} === 'error') throw new Error('boom');
          process.exit(0);
        }, 300);`;
      const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10_000 });
      const pid = Number(r.stdout.trim());
      assert.ok(pid > 0, r.stderr);
      const t0 = Date.now();
      while (processRunning(pid) && Date.now() - t0 < 3000) await new Promise((res) => setTimeout(res, 100));
      assert.equal(processRunning(pid), false, `proxy ${pid} still runs 3 s after its CLI exited`);
    });
  }
});
