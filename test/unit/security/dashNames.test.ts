/** a4/b3: a node name (or host, user, alias) that starts with '-' is refused everywhere, as OpenSSH refuses it. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { expandProxyCommand } from '../../../src/core/ssh/proxyCommand';
import { loadSshConfig, nodeFromSetting } from '../../../src/core/ssh/config';
import { listNodes, resolveNode } from '../../../src/core/ssh/nodes';
import { GpuSessionsError } from '../../../src/core/util/errors';

describe('security: node names starting with "-" (a4)', () => {
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs24-dash-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('ProxyCommand refuses a %h, %r or %n that starts with "-"', () => {
    const t = { host: 'h', port: 22, user: 'u', alias: 'a' };
    const isConfig = (e: unknown) => e instanceof GpuSessionsError && e.code === 'config';
    assert.throws(() => expandProxyCommand('nc %h %p', { ...t, host: '-oProxyCommand' }), isConfig);
    assert.throws(() => expandProxyCommand('nc %h %p', { ...t, host: '-oproxycommand' }), isConfig);
    assert.throws(() => expandProxyCommand('x %r', { ...t, user: '-x' }), isConfig);
    assert.throws(() => expandProxyCommand('x %n', { ...t, alias: '--help' }), isConfig);
    assert.equal(expandProxyCommand('nc %h %p', { ...t, host: 'gpu-1' }), 'nc gpu-1 22');
  });

  it('resolveNode (CLI and MCP lookups) refuses it, even when a Host * block would match it', () => {
    const cfg = path.join(dir, 'config');
    fs.writeFileSync(cfg, 'Host *\n  ProxyCommand nc %h %p\n\nHost gpu1\n  HostName 127.0.0.1\n');
    const listing = listNodes({ sshConfigFile: cfg });
    assert.throws(() => resolveNode('-oProxyCommand', listing), /may not start with '-'/);
    assert.throws(() => resolveNode('-oProxyCommand=touch /tmp/x', listing), /may not start with '-'/);
    assert.equal(resolveNode('gpu1', listing)?.host, '127.0.0.1');
    assert.equal(loadSshConfig(cfg).resolve('-x'), undefined);
  });

  it('ssh config: a Host alias or HostName starting with "-" is not a node', () => {
    const cfg = path.join(dir, 'config2');
    fs.writeFileSync(
      cfg,
      'Host -evil\n  HostName 127.0.0.1\n\nHost dashhost\n  HostName -oProxyCommand=x\n\nHost ok\n  HostName 127.0.0.1\n',
    );
    const names = loadSshConfig(cfg).nodes.map((n) => n.name);
    assert.deepEqual(names, ['ok']);
  });

  it('settings: gpuSessions.nodes entries with such a name, host or user are refused with a clear error', () => {
    assert.match(nodeFromSetting({ name: '-oProxyCommand', host: '127.0.0.1' }).error ?? '', /name: may not start with '-'/);
    assert.ok(nodeFromSetting({ name: 'n', host: '-oProxyCommand' }).error);
    assert.ok(nodeFromSetting({ name: 'n', host: 'h', user: '-l' }).error);
    assert.ok(nodeFromSetting({ name: 'n', host: 'h', user: 'ubuntu' }).node);
  });
});
