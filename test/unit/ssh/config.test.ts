import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  LoadedSshConfig,
  NodeSpec,
  loadSshConfig,
  nodeFromSetting,
  parseNodeAddress,
  parseProxyJump,
  resolveProxyJump,
  sshDir,
} from '../../../src/core/ssh/config';

const SSH = '/usr/bin/ssh';
const haveSsh = fs.existsSync(SSH);
const LOCAL_USER = os.userInfo().username;

/** `ssh -G alias -F file` as a map (multi-valued keys joined with '\n'); status != 0 on config errors. */
function sshG(file: string, alias: string): { status: number | null; cfg: Record<string, string>; stderr: string } {
  const r = spawnSync(SSH, ['-G', '-F', file, alias], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 });
  const cfg: Record<string, string> = {};
  for (const l of (r.stdout ?? '').split('\n')) {
    const i = l.indexOf(' ');
    if (i <= 0) continue;
    const k = l.slice(0, i);
    cfg[k] = cfg[k] === undefined ? l.slice(i + 1) : `${cfg[k]}\n${l.slice(i + 1)}`;
  }
  return { status: r.status, cfg, stderr: r.stderr ?? '' };
}

function write(file: string, lines: string[]): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

function byName(cfg: LoadedSshConfig, name: string): NodeSpec {
  const n = cfg.nodes.find((x) => x.name === name);
  assert.ok(n, `node ${name} listed (have: ${cfg.nodes.map((x) => x.name).join(', ')})`);
  return n;
}

describe('sshConfig', function () {
  let home: string;
  before(function () {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-sshconfig-'));
  });
  after(function () {
    fs.rmSync(home, { recursive: true, force: true });
  });

  describe('loadSshConfig', () => {
    let cfgFile: string;
    let absCfgFile: string;
    const body = (includeDir: string) => [
      '# GPU fleet', // 1
      `Include ${includeDir}/*.conf`, // 2
      'Include does-not-exist.conf', // 3
      '', // 4
      'Host gpu-a gpu-b', // 5
      '  HostName %h.cluster.example', // 6
      '  IdentityFile ~/.ssh/id_gpu', // 7
      '  IdentityFile %d/.ssh/id_%h_%r', // 8
      '  Port 2200', // 9
      '', // 10
      'Host gpu-b', // 11
      '  User bob', // 12
      '  Port 2201', // 13
      '', // 14
      'Host bastion', // 15
      '  HostName 203.0.113.10', // 16
      '  User jump', // 17
      '', // 18
      'Host behind', // 19
      '  HostName 10.0.0.7', // 20
      '  ProxyJump bastion,ops@edge.example:2222', // 21
      '  HostKeyAlias behind-key', // 22
      '  UserKnownHostsFile ~/.ssh/known_hosts_fleet', // 23
      '', // 24
      'Host *.internal', // 25
      '  User internal-user', // 26
      '', // 27
      'Host Upper', // 28
      '  HostName Upper.EXAMPLE', // 29
      '', // 30
      'Host * !forbidden', // 31
      '  User default-user', // 32
      '  IdentityFile ~/.ssh/id_ed25519', // 33
      '  ProxyJump none', // 34
    ];

    before(function () {
      write(path.join(home, '.ssh', 'conf.d', '10-team.conf'), ['Host team-node', '  HostName team.example', '  User teamuser']);
      write(path.join(home, '.ssh', 'conf.d', '20-other.conf'), ['Host other-node other-*', '  Port 2022']);
      write(path.join(home, '.ssh', 'conf.d', '.hidden.conf'), ['Host hidden-node']);
      write(path.join(home, '.ssh', 'conf.d', 'readme.txt'), ['Host readme-node']);
      cfgFile = path.join(home, '.ssh', 'config');
      write(cfgFile, body('conf.d'));
      // The same config with an absolute Include, for ssh -G (which resolves relative Includes in the real ~/.ssh).
      absCfgFile = path.join(home, 'abs_config');
      write(absCfgFile, body(path.join(home, '.ssh', 'conf.d')));
    });

    it('lists every non-pattern Host alias across the file and its (relative, globbed) Includes, with source lines', () => {
      const cfg = loadSshConfig(cfgFile, { homeDir: home });
      assert.deepEqual(cfg.diagnostics, []);
      assert.deepEqual(
        cfg.nodes.map((n) => [n.name, path.relative(home, n.sourceFile!), n.sourceLine]),
        [
          ['team-node', '.ssh/conf.d/10-team.conf', 1],
          ['other-node', '.ssh/conf.d/20-other.conf', 1],
          ['gpu-a', '.ssh/config', 5],
          ['gpu-b', '.ssh/config', 5],
          ['bastion', '.ssh/config', 15],
          ['behind', '.ssh/config', 19],
          ['Upper', '.ssh/config', 28],
        ],
      );
      assert.ok(cfg.nodes.every((n) => n.source === 'ssh-config'));
    });

    it('computes effective settings: first value wins, wildcard blocks apply, tokens expand', () => {
      const cfg = loadSshConfig(cfgFile, { homeDir: home, user: 'localme' });
      const a = byName(cfg, 'gpu-a');
      assert.equal(a.host, 'gpu-a.cluster.example');
      assert.equal(a.user, 'default-user'); // from Host *
      assert.equal(a.port, 2200);
      assert.deepEqual(a.identityFiles, [
        path.join(home, '.ssh', 'id_gpu'),
        path.join(home, '.ssh', 'id_gpu-a.cluster.example_default-user'),
        path.join(home, '.ssh', 'id_ed25519'),
      ]);
      assert.equal(a.proxyJump, undefined);
      const b = byName(cfg, 'gpu-b');
      assert.equal(b.user, 'bob');
      assert.equal(b.port, 2200); // the first Port seen wins
      const behind = byName(cfg, 'behind');
      assert.equal(behind.host, '10.0.0.7');
      assert.equal(behind.proxyJump, 'bastion,ops@edge.example:2222');
      assert.equal(behind.hostKeyAlias, 'behind-key');
      assert.deepEqual(behind.userKnownHostsFiles, [path.join(home, '.ssh', 'known_hosts_fleet')]);
      assert.equal(byName(cfg, 'team-node').user, 'teamuser');
      assert.equal(byName(cfg, 'other-node').port, 2022);
      assert.equal(byName(cfg, 'Upper').host, 'upper.example'); // ssh lowercases the host name
      // Aliases matched only by wildcard blocks resolve too (e.g. ProxyJump hops).
      const db = cfg.resolve('db.internal')!;
      assert.equal(db.host, 'db.internal');
      assert.equal(db.user, 'internal-user');
      assert.equal(db.port, 22);
      assert.equal(cfg.resolve('other-7')!.port, 2022);
      // The negated pattern keeps `Host * !forbidden` away from "forbidden": the default user applies.
      assert.equal(cfg.resolve('forbidden')!.user, 'localme');
      assert.deepEqual(cfg.resolve('forbidden')!.identityFiles, []);
      assert.equal(cfg.resolve(''), undefined);
      assert.equal(cfg.resolve('has space'), undefined);
      // resolve returns copies
      cfg.resolve('gpu-a')!.identityFiles.push('x');
      assert.equal(cfg.resolve('gpu-a')!.identityFiles.length, 3);
    });

    it('agrees with ssh -G on host name, user, port, ProxyJump, HostKeyAlias and IdentityFile', function () {
      if (!haveSsh) this.skip();
      const cfg = loadSshConfig(absCfgFile, { homeDir: home });
      for (const alias of [
        'gpu-a',
        'gpu-b',
        'bastion',
        'behind',
        'team-node',
        'other-node',
        'other-9',
        'db.internal',
        'Upper',
        'upper',
        'forbidden',
        'random.host',
      ]) {
        const g = sshG(absCfgFile, alias);
        assert.equal(g.status, 0, g.stderr);
        const n = cfg.resolve(alias)!;
        assert.equal(n.host, g.cfg.hostname, `${alias} hostname`);
        assert.equal(n.user, g.cfg.user, `${alias} user`);
        assert.equal(String(n.port), g.cfg.port, `${alias} port`);
        assert.equal(n.proxyJump, g.cfg.proxyjump, `${alias} proxyjump`);
        assert.equal(n.hostKeyAlias, g.cfg.hostkeyalias, `${alias} hostkeyalias`);
        // ssh -G prints IdentityFile unexpanded; expand ~ / %d (to our home), %h and %r the way we do.
        const theirs = (g.cfg.identityfile ?? '')
          .split('\n')
          .filter(Boolean)
          .map((f) => f.replace(/^~/, home).replace(/%d/g, home).replace(/%h/g, n.host).replace(/%r/g, n.user!));
        if (n.identityFiles.length === 0) {
          // None configured: ssh -G lists its built-in defaults, which we leave to the transport.
          assert.ok(theirs.length > 0 && theirs.every((f) => /\/\.ssh\/id_[a-z0-9_]+$/.test(f)), `${alias} identityfile ${theirs}`);
        } else assert.deepEqual(n.identityFiles, theirs, `${alias} identityfile`);
      }
    });

    it('Include inside a Host block applies to that block only (ssh -G agrees)', function () {
      const inc = path.join(home, 'scoped', 'port.conf');
      write(inc, ['Port 3333', 'Host inner-node', '  User inner']);
      const file = path.join(home, 'scoped', 'config');
      write(file, ['Host scoped-a', `  Include ${inc}`, 'Host scoped-b', '  HostName b.example', 'Host inner-*', '  Port 4444']);
      const cfg = loadSshConfig(file, { homeDir: home });
      assert.deepEqual(cfg.diagnostics, []);
      assert.deepEqual(
        cfg.nodes.map((n) => n.name),
        ['scoped-a', 'inner-node', 'scoped-b'],
      );
      assert.equal(cfg.resolve('scoped-a')!.port, 3333);
      assert.equal(cfg.resolve('scoped-b')!.port, 22);
      // inner-node is declared inside an Include that only applies to scoped-a: its settings never apply.
      assert.equal(cfg.resolve('inner-node')!.port, 4444);
      assert.equal(cfg.resolve('inner-node')!.user, LOCAL_USER);
      if (!haveSsh) return;
      for (const alias of ['scoped-a', 'scoped-b', 'inner-node']) {
        const g = sshG(file, alias);
        assert.equal(g.status, 0, g.stderr);
        const n = cfg.resolve(alias)!;
        assert.deepEqual([n.host, n.user, String(n.port)], [g.cfg.hostname, g.cfg.user, g.cfg.port], alias);
      }
    });

    it('Match host/originalhost/user/final are evaluated; Match exec is never run and its block is ignored', function () {
      const marker = path.join(home, 'exec-ran');
      const file = path.join(home, 'match', 'config');
      write(file, [
        'Host m1 m2 m3', // 1
        '  HostName %h.cluster.example', // 2
        'Match host *.cluster.example !originalhost m2', // 3
        '  User clusteruser', // 4
        'Match originalhost m2', // 5
        '  Port 2202', // 6
        `Match exec "touch ${marker}"`, // 7
        '  Port 9999', // 8
        'Match user clusteruser', // 9
        '  IdentityFile ~/.ssh/cluster_key', // 10
        'Host final-target.example', // 11
        '  HostKeyAlias final-alias', // 12
        'Host fin', // 13
        '  HostName final-target.example', // 14
        'Match final host final-target.example', // 15
        '  Port 2999', // 16
      ]);
      const cfg = loadSshConfig(file, { homeDir: home, user: 'me' });
      assert.equal(fs.existsSync(marker), false, 'Match exec must never run');
      assert.equal(cfg.diagnostics.length, 1);
      assert.equal(cfg.diagnostics[0].line, 7);
      assert.match(cfg.diagnostics[0].message, /Match exec is not evaluated/);
      const m1 = cfg.resolve('m1')!;
      assert.deepEqual([m1.host, m1.user, m1.port], ['m1.cluster.example', 'clusteruser', 22]);
      assert.deepEqual(m1.identityFiles, [path.join(home, '.ssh', 'cluster_key')]);
      const m2 = cfg.resolve('m2')!;
      assert.deepEqual([m2.user, m2.port, m2.identityFiles], ['me', 2202, []]);
      const fin = cfg.resolve('fin')!;
      assert.deepEqual([fin.host, fin.port, fin.hostKeyAlias], ['final-target.example', 2999, 'final-alias']);
      if (!haveSsh) return;
      // Same file without the exec block, compared with ssh -G.
      const noExec = path.join(home, 'match', 'config-noexec');
      write(
        noExec,
        fs
          .readFileSync(file, 'utf8')
          .split('\n')
          .filter((l) => !l.includes('exec') && !l.includes('9999')),
      );
      const cfg2 = loadSshConfig(noExec, { homeDir: home });
      for (const alias of ['m1', 'm2', 'm3', 'fin', 'final-target.example']) {
        const g = sshG(noExec, alias);
        assert.equal(g.status, 0, g.stderr);
        const n = cfg2.resolve(alias)!;
        assert.deepEqual(
          [n.host, n.user, String(n.port), n.hostKeyAlias],
          [g.cfg.hostname, g.cfg.user, g.cfg.port, g.cfg.hostkeyalias],
          alias,
        );
      }
    });

    it('ProxyJump hops resolve through the config', () => {
      const cfg = loadSshConfig(cfgFile, { homeDir: home });
      const r = resolveProxyJump(cfg, cfg.resolve('behind')!.proxyJump!);
      assert.equal(r.error, undefined);
      assert.deepEqual(
        r.hops!.map((h) => [h.name, h.user, h.host, h.port]),
        [
          ['bastion', 'jump', '203.0.113.10', 22],
          ['edge.example', 'ops', 'edge.example', 2222],
        ],
      );
      assert.deepEqual(parseProxyJump('none'), { hops: [] });
      assert.ok(parseProxyJump('a,,b').error);
      assert.deepEqual(parseProxyJump('ssh://u@[::1]:2200').hops, [{ user: 'u', host: '::1', port: 2200 }]);
    });
  });

  describe('malformed config', () => {
    const base = [
      'Host good1', // 1
      '  HostName good1.example', // 2
      '  Port 2201', // 3
      'Host good2', // 4
      '  User alice', // 5
      '  @@BAD@@', // 6: replaced
      'Host good3', // 7
      '  HostName good3.example', // 8
    ];
    const badLines: [string, RegExp][] = [
      ['  Port 22x', /bad Port "22x" \(expected a number 1-65535\); fix or remove the line/],
      ['  Port 0', /bad Port "0"/],
      ['  Port 65536', /bad Port "65536"/],
      ['  FrobnicateWidgets yes', /unknown keyword "FrobnicateWidgets"/],
      ['  User "unterminated', /unbalanced quotes/],
      ["  IdentityFile 'unterminated", /unbalanced quotes/],
      ['  HostName', /HostName has no value/],
      ['  HostName a b', /HostName takes one value/],
      ['  IdentityFile ~/a ~/b', /IdentityFile takes one value/],
      ['  ProxyJump @@@', /bad ProxyJump hop/],
      ['  = value', /not a "Keyword value" line/],
      ['  Match exec', /bad Match line: "exec" needs a value/],
      ['  Match foo bar', /unknown criterion "foo"/],
      ['  Match all host x', /"all" cannot be combined/],
      ['Host', /Host has no value/],
    ];

    for (const [bad, re] of badLines) {
      it(`"${bad.trim()}" gives exactly one diagnostic at line 6; all hosts still listed`, function () {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-sshbad-'));
        try {
          const file = path.join(dir, 'config');
          write(
            file,
            base.map((l) => (l === '  @@BAD@@' ? bad : l)),
          );
          const cfg = loadSshConfig(file, { homeDir: dir, user: 'me' });
          assert.equal(cfg.diagnostics.length, 1, JSON.stringify(cfg.diagnostics));
          const d = cfg.diagnostics[0];
          assert.equal(d.file, file);
          assert.equal(d.line, 6);
          assert.match(d.message, re);
          assert.match(d.message, /(fix|remove|add|check|quote)/); // says what to do
          assert.deepEqual(
            cfg.nodes.map((n) => n.name),
            ['good1', 'good2', 'good3'],
          );
          assert.equal(cfg.resolve('good1')!.port, 2201);
          assert.equal(cfg.resolve('good3')!.host, 'good3.example');
          if (!/^\s*(Host|Match)\b/.test(bad)) assert.equal(cfg.resolve('good2')!.user, 'alice');
          // OpenSSH rejects the same line.
          if (haveSsh) assert.notEqual(sshG(file, 'good1').status, 0, `ssh -G accepted ${bad}`);
        } finally {
          fs.rmSync(dir, { recursive: true, force: true });
        }
      });
    }

    it('several bad lines: one diagnostic each; a broken Host line does not leak its settings', () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-sshbad-'));
      try {
        const file = path.join(dir, 'config');
        write(file, [
          'Host good1', // 1
          '  Port 22x', // 2
          'Host good2', // 3
          '  FrobnicateWidgets yes', // 4
          '  User "unterminated', // 5
          'Host good3', // 6
          '  HostName', // 7
          'Host "broken', // 8
          '  User leaked', // 9
          'Host good4', // 10
          '  Port 70000', // 11
          '  Port 2222', // 12
          'IgnoreUnknown UseFancyThing,Frob*', // 13
          '  UseFancyThing yes', // 14: ignored silently, like OpenSSH
          '  FrobWidgets no', // 15: ignored silently
          '\u0000\u0001binary', // 16
        ]);
        const cfg = loadSshConfig(file, { homeDir: dir, user: 'me' });
        assert.deepEqual(
          cfg.diagnostics.map((d) => d.line),
          [2, 4, 5, 7, 8, 11, 16],
        );
        assert.deepEqual(
          cfg.nodes.map((n) => n.name),
          ['good1', 'good2', 'good3', 'good4'],
        );
        assert.equal(cfg.resolve('good1')!.port, 22);
        assert.equal(cfg.resolve('good3')!.user, 'me');
        assert.equal(cfg.resolve('good4')!.port, 2222);
        assert.equal(cfg.resolve('anything')!.user, 'me');
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });

    it('missing or unreadable files, Include loops and junk never throw', () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-sshbad-'));
      try {
        const missing = loadSshConfig(path.join(dir, 'nope'), { homeDir: dir });
        assert.deepEqual(missing.nodes, []);
        assert.equal(missing.diagnostics.length, 1);
        assert.equal(missing.diagnostics[0].line, 0);
        assert.match(missing.diagnostics[0].message, /does not exist/);
        assert.equal(missing.resolve('x')!.host, 'x');

        const asDir = loadSshConfig(dir, { homeDir: dir });
        assert.equal(asDir.diagnostics.length, 1);
        assert.match(asDir.diagnostics[0].message, /EISDIR/);

        const loop = path.join(dir, 'loop.conf');
        write(loop, ['Host looped', `Include ${loop}`, '  User loopuser']);
        const l = loadSshConfig(loop, { homeDir: dir });
        assert.equal(l.diagnostics.length, 1);
        assert.equal(l.diagnostics[0].line, 2);
        assert.match(l.diagnostics[0].message, /loop/);
        assert.equal(l.resolve('looped')!.user, 'loopuser');

        const junk = path.join(dir, 'junk');
        fs.writeFileSync(junk, Buffer.from(Array.from({ length: 20000 }, (_, i) => (i * 7919) % 256)));
        const j = loadSshConfig(junk, { homeDir: dir });
        assert.ok(j.diagnostics.length >= 1 && j.diagnostics.length <= 51);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  });

  describe('parseNodeAddress', () => {
    it('parses [user@]host[:port], bracketed and bare IPv6', () => {
      assert.deepEqual(parseNodeAddress('gpu1'), { user: undefined, host: 'gpu1', port: 22 });
      assert.deepEqual(parseNodeAddress('alice@gpu1.example:2222'), { user: 'alice', host: 'gpu1.example', port: 2222 });
      assert.deepEqual(parseNodeAddress('10.0.0.5', { user: 'ubuntu' }), { user: 'ubuntu', host: '10.0.0.5', port: 22 });
      assert.deepEqual(parseNodeAddress('root@10.0.0.5', { user: 'ubuntu' }), { user: 'root', host: '10.0.0.5', port: 22 });
      assert.deepEqual(parseNodeAddress('[::1]:2222'), { user: undefined, host: '::1', port: 2222 });
      assert.deepEqual(parseNodeAddress('::1'), { user: undefined, host: '::1', port: 22 });
      assert.deepEqual(parseNodeAddress('bob@[fe80::1%eth0]:22'), { user: 'bob', host: 'fe80::1%eth0', port: 22 });
      assert.deepEqual(parseNodeAddress('[2001:db8::7]'), { user: undefined, host: '2001:db8::7', port: 22 });
      assert.deepEqual(parseNodeAddress('  gpu1  '), { user: undefined, host: 'gpu1', port: 22 });
    });
    it('rejects garbage', () => {
      for (const bad of [
        '',
        '   ',
        'a b',
        'host:',
        'host:abc',
        'host:0',
        'host:65536',
        '@host',
        'user@',
        '[::1',
        '[::1]:',
        '-oProxyCommand=x',
        'host/path',
        'gpu*',
        'a@b:22:33x',
        'h\u0000',
        '[]:22',
      ]) {
        assert.equal(parseNodeAddress(bad), undefined, JSON.stringify(bad));
      }
      assert.equal(parseNodeAddress(undefined as unknown as string), undefined);
    });
  });

  describe('nodeFromSetting', () => {
    it('accepts a full entry', () => {
      const r = nodeFromSetting({
        name: 'gpu-1',
        host: '10.0.0.5',
        user: 'ubuntu',
        port: 2222,
        identityFile: '~/.ssh/gpu',
        proxyJump: 'jump@bastion:22',
        roots: ['/data/runs'],
      });
      assert.equal(r.error, undefined);
      assert.deepEqual(r.node, {
        name: 'gpu-1',
        host: '10.0.0.5',
        user: 'ubuntu',
        port: 2222,
        identityFiles: [path.join(os.homedir(), '.ssh', 'gpu')],
        proxyJump: 'jump@bastion:22',
        roots: ['/data/runs'],
        source: 'settings',
      });
      assert.deepEqual(nodeFromSetting({ name: 'n', host: '[::1]' }).node, {
        name: 'n',
        host: '::1',
        port: 22,
        identityFiles: [],
        source: 'settings',
      });
      assert.deepEqual(nodeFromSetting({ name: 'n', host: 'h', identityFile: ['/a', '/b'], port: '2200' }).node?.identityFiles, [
        '/a',
        '/b',
      ]);
      assert.equal(nodeFromSetting({ name: 'n', host: 'h', port: '2200' }).node?.port, 2200);
    });
    it('names the bad field', () => {
      const cases: [unknown, RegExp][] = [
        [null, /must be an object/],
        ['gpu1', /must be an object/],
        [{ host: 'h' }, /^name:/],
        [{ name: '  ', host: 'h' }, /^name:/],
        [{ name: 'n' }, /^host:/],
        [{ name: 'n', host: 'user@h' }, /^host:.*"user"/],
        [{ name: 'n', host: 'h:22' }, /^host:/],
        [{ name: 'n', host: 'a b' }, /^host:/],
        [{ name: 'n', host: 'h', port: 'abc' }, /^port:/],
        [{ name: 'n', host: 'h', port: 70000 }, /^port:/],
        [{ name: 'n', host: 'h', port: 22.5 }, /^port:/],
        [{ name: 'n', host: 'h', user: 'a b' }, /^user:/],
        [{ name: 'n', host: 'h', user: 5 }, /^user:/],
        [{ name: 'n', host: 'h', identityFile: 5 }, /^identityFile:/],
        [{ name: 'n', host: 'h', identityFile: ['ok', ''] }, /^identityFile:/],
        [{ name: 'n', host: 'h', proxyJump: 'a b' }, /^proxyJump:/],
        [{ name: 'n', host: 'h', proxyJump: 7 }, /^proxyJump:/],
        [{ name: 'n', host: 'h', roots: '/data' }, /^roots:/],
        [{ name: 'n', host: 'h', roots: ['/ok', 3] }, /^roots:/],
      ];
      for (const [x, re] of cases) {
        const r = nodeFromSetting(x);
        assert.equal(r.node, undefined, JSON.stringify(x));
        assert.match(r.error ?? '', re, JSON.stringify(x));
      }
    });
  });

  it('sshDir', () => {
    assert.equal(sshDir('/home/u'), path.join('/home/u', '.ssh'));
    assert.equal(sshDir(), path.join(os.homedir(), '.ssh'));
  });
});
