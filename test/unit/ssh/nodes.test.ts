/**
 * NODE arguments as ssh(1) takes them, resolved into what the transport connects with (issue 42).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { listNodes, resolveNode } from '../../../src/core/ssh/nodes';
import { resolveProxyJump } from '../../../src/core/ssh/addresses';
import { canonicalAddress, canonicalizeWithoutDns, connectionHash, sshHostName } from '../../../src/core/ssh/configCanon';
import { connectsTo } from '../../../src/core/ssh/resolveView';
import { defaultKnownHostsFiles } from '../../../src/core/ssh/knownHostsFiles';

describe('resolveNode: destinations as ssh(1) takes them (issue 42)', function () {
  let dir: string;
  let file: string;
  const home = os.homedir();
  before(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-nodes-'));
    file = path.join(dir, 'config');
    fs.writeFileSync(
      file,
      [
        'Host project-bastion',
        '  HostName 192.0.2.10',
        'Host gpu',
        '  HostName 10.0.0.5',
        '  ProxyJump david@Project-Bastion,ops@Jump9:2222',
        'Host i-* mi-*',
        '  ProxyCommand sh -c "aws ssm start-session --target %h"',
        '  IdentitiesOnly yes',
        '  HostKeyAlias SSM-Node',
        '  UserKnownHostsFile ~/.ssh/kh_%k',
        'Match user bob',
        '  Port 2202',
        'Match user alice',
        '  Port 2201',
        'Host q',
        '  User ops#2',
        '  IdentityFile none',
        '  IdentityFile /tmp/with\\ space',
        '  UserKnownHostsFile ~/.ssh/kh_%k',
        'Host *',
        '  IdentityFile ~/.ssh/%r_key',
        '  User alice',
      ].join('\n') + '\n',
    );
  });
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('user@Host with a capital letter: the host, not "user@host" (Host lines match it case-sensitively, as in ssh)', function () {
    const listing = listNodes({ sshConfigFile: file });
    const n = resolveNode('Ubuntu@Project-Bastion', listing)!;
    assert.equal(n.host, 'project-bastion'); // ssh -G: `Host project-bastion` does not match Project-Bastion
    assert.equal(resolveNode('Ubuntu@project-bastion', listing)!.host, '192.0.2.10');
    assert.equal(n.user, 'Ubuntu');
    assert.equal(n.port, 22);
    const hops = resolveProxyJump(listing.config, resolveNode('gpu', listing)!.proxyJump!).hops!;
    assert.deepEqual(
      hops.map((h) => [h.user, h.host, h.port]),
      [
        ['david', 'project-bastion', 22],
        ['ops', 'jump9', 2222],
      ],
    );
    assert.equal(resolveNode('ops@Jump9:2222', listing)!.port, 2222);
  });

  it('user@host and ssh://user@host keep ProxyCommand, IdentitiesOnly, HostKeyAlias and UserKnownHostsFile', function () {
    const listing = listNodes({ sshConfigFile: file });
    for (const arg of ['bob@i-0abc', 'ssh://bob@i-0abc', 'ssh://bob@i-0abc:2300']) {
      const n = resolveNode(arg, listing)!;
      assert.equal(n.proxyCommand, 'sh -c "aws ssm start-session --target %h"', arg);
      assert.equal(n.identitiesOnly, true, arg);
      assert.equal(n.hostKeyAlias, 'ssm-node', arg);
      assert.deepEqual(n.userKnownHostsFiles, [path.join(home, '.ssh', 'kh_ssm-node')], arg);
      assert.equal(n.user, 'bob', arg);
    }
    assert.equal(resolveNode('ssh://bob@i-0abc:2300', listing)!.port, 2300);
  });

  it('Match user and %r follow the command-line user', function () {
    const listing = listNodes({ sshConfigFile: file });
    const bob = resolveNode('bob@gpu', listing)!;
    assert.equal(bob.port, 2202);
    assert.deepEqual(bob.identityFiles, [path.join(home, '.ssh', 'bob_key')]);
    const plain = resolveNode('gpu', listing)!;
    assert.equal(plain.user, 'alice');
    assert.equal(plain.port, 22); // `User alice` comes after `Match user alice`: ssh evaluates Match first
  });

  it('values tokenised as OpenSSH does; IdentityFile none is no file; %k is the alias without HostKeyAlias', function () {
    const n = resolveNode('q', listNodes({ sshConfigFile: file }))!;
    assert.equal(n.user, 'ops#2');
    assert.deepEqual(n.identityFiles, ['/tmp/with space', path.join(home, '.ssh', 'ops#2_key')]);
    assert.deepEqual(n.userKnownHostsFiles, [path.join(home, '.ssh', 'kh_q')]);
  });

  it('GlobalKnownHostsFile is read (expanded) instead of the system files; none reads none', function () {
    const f = path.join(dir, 'gkh');
    fs.writeFileSync(f, ['Host g1', '  GlobalKnownHostsFile ~/g_%h', 'Host g2', '  GlobalKnownHostsFile none'].join('\n') + '\n');
    const listing = listNodes({ sshConfigFile: f });
    assert.deepEqual(defaultKnownHostsFiles(resolveNode('g1', listing)!).slice(1), [path.join(home, 'g_g1')]);
    assert.deepEqual(defaultKnownHostsFiles(resolveNode('g2', listing)!).slice(1), []);
    assert.deepEqual(defaultKnownHostsFiles(resolveNode('g3', listing)!).slice(1), [
      '/etc/ssh/ssh_known_hosts',
      '/etc/ssh/ssh_known_hosts2',
    ]);
  });

  it('"Connects to" shows user, host name, port and the way there', function () {
    const listing = listNodes({ sshConfigFile: file });
    assert.equal(connectsTo(resolveNode('gpu', listing)!), 'alice@10.0.0.5:22 via david@Project-Bastion,ops@Jump9:2222');
    assert.match(connectsTo(resolveNode('bob@i-1', listing)!), /^bob@i-1:2202 via ProxyCommand sh -c/);
  });
});

describe('configCanon', function () {
  it('canonical IP address forms', function () {
    assert.equal(canonicalAddress('2001:DB8:0:0::1'), '2001:db8::1');
    assert.equal(canonicalAddress('10.1.2.3'), '10.1.2.3');
    assert.equal(canonicalAddress('gpu1'), undefined);
    assert.equal(canonicalAddress('::ffff:a00:1'), '::ffff:10.0.0.1');
    assert.equal(sshHostName('2001:DB8::1'), '2001:DB8::1'); // differs only in case: kept as written, like ssh
    assert.equal(sshHostName('Gpu.Example'), 'gpu.example');
    assert.equal(sshHostName('10.0.0.01'), '10.0.0.1');
  });
  it('CanonicalizeHostname without DNS, and a warning where DNS would be needed', function () {
    const base = { proxied: false, maxDots: undefined, domains: undefined };
    assert.deepEqual(canonicalizeWithoutDns({ ...base, host: '2001:DB8:0:0::1', mode: 'yes' }), { host: '2001:db8::1' });
    assert.deepEqual(canonicalizeWithoutDns({ ...base, host: '2001:DB8::1', mode: 'yes' }), { host: '2001:DB8::1' });
    assert.deepEqual(canonicalizeWithoutDns({ ...base, host: 'a.b.c', mode: 'yes', domains: ['x.org'] }), { host: 'a.b.c' });
    assert.deepEqual(canonicalizeWithoutDns({ ...base, host: 'gpu', mode: 'no', domains: ['x.org'] }), { host: 'gpu' });
    assert.deepEqual(canonicalizeWithoutDns({ ...base, host: 'gpu', mode: 'yes', proxied: true, domains: ['x.org'] }), { host: 'gpu' });
    assert.match(
      canonicalizeWithoutDns({ ...base, host: 'gpu', mode: 'yes', domains: ['x.org'] }).warning!,
      /"gpu" would try it in x\.org/,
    );
  });
  it('%C is sha1(%l%h%p%r)', function () {
    assert.equal(connectionHash('vm', '2001:db8::1', '22', 'ops#2'), '59f9b363f3c5f7e9981ddd6f0761f60b8964e62c');
  });
});
