import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  KnownHostEntry,
  KnownHostsStore,
  checkHostKey,
  describeChangedKey,
  fingerprintSha256,
  hostMatches,
  keyTypeOfBlob,
  knownHostLine,
  knownHostsLookupName,
  matchPattern,
  matchPatternList,
  parseKnownHosts,
} from '../../../src/core/ssh/knownHosts';
import { ssh2Ed25519 } from '../../helpers/hostKeys';

const SSH_KEYGEN = '/usr/bin/ssh-keygen';
const haveKeygen = fs.existsSync(SSH_KEYGEN);

function keygen(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync(SSH_KEYGEN, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
  return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

function keygenKey(dir: string, type: 'ed25519' | 'ecdsa' | 'rsa', name: string): { blob: Buffer; file: string } {
  const file = path.join(dir, name);
  const args = ['-q', '-t', type, '-N', '', '-C', name, '-f', file];
  if (type === 'rsa') args.push('-b', '2048');
  const r = keygen(args);
  assert.equal(r.status, 0, r.stderr);
  const pub = fs.readFileSync(`${file}.pub`, 'utf8').trim().split(/\s+/);
  return { blob: Buffer.from(pub[1], 'base64'), file: `${file}.pub` };
}

function line(hosts: string, blob: Buffer, marker = ''): string {
  return `${marker ? marker + ' ' : ''}${hosts} ${keyTypeOfBlob(blob)} ${blob.toString('base64')}`;
}

describe('knownHosts', function () {
  let dir: string;
  before(function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-knownhosts-'));
  });
  after(function () {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('patterns', () => {
    it('matches * and ? like OpenSSH match_pattern (? is exactly one character)', () => {
      assert.equal(matchPattern('abc', 'a?c'), true);
      assert.equal(matchPattern('ac', 'a?c'), false);
      assert.equal(matchPattern('gpu-17.cluster', 'gpu-*.cluster'), true);
      assert.equal(matchPattern('gpu-.cluster', 'gpu-*.cluster'), true);
      assert.equal(matchPattern('x', '*'), true);
      assert.equal(matchPattern('', '*'), true);
      assert.equal(matchPattern('abc', 'ab'), false);
      assert.equal(matchPattern('a'.repeat(60) + 'b', '*a*a*a*a*a*a*a*a*a*a*c'), false); // no exponential blow-up
    });
    it('pattern lists: positive, negated veto, no match', () => {
      assert.equal(matchPatternList('gpu1', 'gpu*,!gpu2'), 1);
      assert.equal(matchPatternList('gpu2', 'gpu*,!gpu2'), -1);
      assert.equal(matchPatternList('gpu2', '!gpu2,gpu*'), -1);
      assert.equal(matchPatternList('cpu1', 'gpu*,!gpu2'), 0);
      assert.equal(matchPatternList('host', 'HOST', true), 1);
      assert.equal(matchPatternList('host', 'HOST', false), 0);
    });
  });

  describe('fingerprints and key types', () => {
    it('fingerprintSha256 equals ssh-keygen -lf for ssh2 and ssh-keygen keys', function () {
      if (!haveKeygen) this.skip();
      const k = ssh2Ed25519();
      const pubFile = path.join(dir, 'ssh2.pub');
      fs.writeFileSync(pubFile, k.line + '\n');
      const keys = [
        { blob: k.blob, file: pubFile },
        keygenKey(dir, 'ecdsa', 'fp-ecdsa'),
        keygenKey(dir, 'rsa', 'fp-rsa'),
        keygenKey(dir, 'ed25519', 'fp-ed'),
      ];
      for (const key of keys) {
        const r = keygen(['-l', '-E', 'sha256', '-f', key.file]);
        assert.equal(r.status, 0, r.stderr);
        const expected = r.stdout.trim().split(/\s+/)[1];
        assert.match(expected, /^SHA256:[A-Za-z0-9+/]{43}$/);
        assert.equal(fingerprintSha256(key.blob), expected, key.file);
      }
    });

    it('keyTypeOfBlob reads the first SSH string; throws on garbage', function () {
      if (!haveKeygen) this.skip();
      assert.equal(keyTypeOfBlob(ssh2Ed25519().blob), 'ssh-ed25519');
      assert.equal(keyTypeOfBlob(keygenKey(dir, 'ecdsa', 'kt-ecdsa').blob), 'ecdsa-sha2-nistp256');
      assert.equal(keyTypeOfBlob(keygenKey(dir, 'rsa', 'kt-rsa').blob), 'ssh-rsa');
      assert.throws(() => keyTypeOfBlob(Buffer.alloc(0)));
      assert.throws(() => keyTypeOfBlob(Buffer.from([0, 0, 0, 200, 1, 2])));
      assert.throws(() => keyTypeOfBlob(Buffer.from([0, 0, 0, 0])));
    });
  });

  describe('parseKnownHosts', () => {
    it('reads markers, line numbers, CRLF; skips comments, blanks and malformed lines; never throws', () => {
      const a = ssh2Ed25519().blob;
      const b = ssh2Ed25519().blob;
      const b64 = a.toString('base64');
      const text = [
        '# comment',
        '',
        line('host-a,10.0.0.1', a), // 3
        `   ${line('host-b', b)}  trailing comment words`, // 4
        line('*.example', a, '@revoked'), // 5
        line('*.corp', b, '@cert-authority') + '\r', // 6
        `@bogus host-c ssh-ed25519 ${b64}`, // bad marker
        'host-d ssh-ed25519', // missing key
        'host-e ssh-ed25519 not*base64', // bad base64
        `host-f ssh-rsa ${b64}`, // type field does not match the blob
        `host-g ssh-ed25519 ${b64.slice(0, -4)}`, // truncated blob
        `|1|bad|hash ssh-ed25519 ${b64}`, // bad hash field
        'garbage',
        '\u0000\u0001\u0002 \u00ff',
        line('host-h', a), // 15
      ].join('\n');
      const entries = parseKnownHosts(text, '/tmp/kh');
      assert.deepEqual(
        entries.map((e) => [e.line, e.marker, e.hosts, e.keyType]),
        [
          [3, '', 'host-a,10.0.0.1', 'ssh-ed25519'],
          [4, '', 'host-b', 'ssh-ed25519'],
          [5, '@revoked', '*.example', 'ssh-ed25519'],
          [6, '@cert-authority', '*.corp', 'ssh-ed25519'],
          [15, '', 'host-h', 'ssh-ed25519'],
        ],
      );
      assert.equal(entries[0].file, '/tmp/kh');
      assert.equal(entries[0].keyBase64, b64);
      assert.equal(entries[3].raw.endsWith('\r'), false);
      // random junk never throws
      for (let i = 0; i < 200; i++) {
        const junk = Array.from({ length: 300 }, () => String.fromCharCode(Math.floor(Math.random() * 128))).join('');
        assert.doesNotThrow(() => parseKnownHosts(junk + '\n|1|' + junk, 'x'));
      }
      assert.deepEqual(parseKnownHosts(undefined as unknown as string, 'x'), []);
    });
  });

  describe('hostMatches', () => {
    const k = ssh2Ed25519().blob;
    const entry = (hosts: string): KnownHostEntry => parseKnownHosts(line(hosts, k), 'f')[0];

    it('port 22 looks up the plain name; other ports [host]:port', () => {
      assert.equal(knownHostsLookupName('127.0.0.1', 22), '127.0.0.1');
      assert.equal(knownHostsLookupName('127.0.0.1', 2222), '[127.0.0.1]:2222');
      assert.equal(hostMatches(entry('127.0.0.1'), '127.0.0.1', 22), true);
      assert.equal(hostMatches(entry('127.0.0.1'), '127.0.0.1', 2222), false);
      assert.equal(hostMatches(entry('[127.0.0.1]:2222'), '127.0.0.1', 2222), true);
      assert.equal(hostMatches(entry('[127.0.0.1]:2222'), '127.0.0.1', 22), false);
      assert.equal(hostMatches(entry('[127.0.0.1]:22'), '127.0.0.1', 22), false); // ssh looks up "127.0.0.1"
      assert.equal(hostMatches(entry('[127.0.0.1]:*'), '127.0.0.1', 2222), true);
      assert.equal(hostMatches(entry('::1'), '::1', 22), true);
      assert.equal(hostMatches(entry('[::1]:2222'), '::1', 2222), true);
    });

    it('wildcards, comma lists, negation and case', () => {
      assert.equal(hostMatches(entry('gpu*.example,!gpu13.example'), 'gpu12.example', 22), true);
      assert.equal(hostMatches(entry('gpu*.example,!gpu13.example'), 'gpu13.example', 22), false);
      assert.equal(hostMatches(entry('!gpu13.example'), 'other', 22), false); // a negation alone matches nothing
      assert.equal(hostMatches(entry('node?'), 'node7', 22), true);
      assert.equal(hostMatches(entry('node?'), 'node', 22), false);
      assert.equal(hostMatches(entry('Node7.Example'), 'NODE7.example', 22), true);
    });

    it('agrees with ssh-keygen -F on plain and ssh-keygen -H hashed files', function () {
      if (!haveKeygen) this.skip();
      const hostsFields = [
        '127.0.0.1',
        '[127.0.0.1]:2222',
        '[127.0.0.1]:22',
        'gpu-node.example',
        'a.example,b.example',
        'Mixed.Case.Example',
        '[10.1.2.3]:2200',
        '::1',
        '[::1]:2201',
      ];
      const plain = path.join(dir, 'kh-plain');
      fs.writeFileSync(plain, hostsFields.map((h) => line(h, ssh2Ed25519().blob)).join('\n') + '\n');
      const hashed = path.join(dir, 'kh-hashed');
      fs.copyFileSync(plain, hashed);
      const h = keygen(['-H', '-f', hashed]);
      assert.equal(h.status, 0, h.stderr);
      const hashedEntries = parseKnownHosts(fs.readFileSync(hashed, 'utf8'), hashed);
      assert.ok(hashedEntries.length >= hostsFields.length);
      assert.ok(
        hashedEntries.every((e) => e.hosts.startsWith('|1|')),
        'ssh-keygen -H hashed every entry',
      );
      const lookups: [string, number][] = [
        ['127.0.0.1', 22],
        ['127.0.0.1', 2222],
        ['127.0.0.1', 2200],
        ['gpu-node.example', 22],
        ['GPU-Node.Example', 22],
        ['gpu-node.example', 2222],
        ['b.example', 22],
        ['mixed.case.example', 22],
        ['10.1.2.3', 2200],
        ['10.1.2.3', 22],
        ['::1', 22],
        ['::1', 2201],
        ['nowhere', 22],
      ];
      for (const file of [plain, hashed]) {
        const entries = parseKnownHosts(fs.readFileSync(file, 'utf8'), file);
        for (const [host, port] of lookups) {
          const r = keygen(['-F', knownHostsLookupName(host, port), '-f', file]);
          const theirs = r.stdout
            .split('\n')
            .filter((l) => l && !l.startsWith('#'))
            .map((l) => l.split(/\s+/)[2])
            .sort();
          const ours = entries
            .filter((e) => hostMatches(e, host, port))
            .map((e) => e.keyBase64)
            .sort();
          assert.deepEqual(ours, theirs, `${path.basename(file)} ${host}:${port}`);
        }
      }
      // The hashed [127.0.0.1]:2222 entry matches port 2222 only.
      const hashedOf2222 = hashedEntries.filter((e) => hostMatches(e, '127.0.0.1', 2222));
      assert.equal(hashedOf2222.length, 1);
      assert.equal(hostMatches(hashedOf2222[0], '127.0.0.1', 22), false);
    });
  });

  describe('checkHostKey', () => {
    const ed = ssh2Ed25519().blob;
    const ed2 = ssh2Ed25519().blob;
    let ecdsa: Buffer;
    before(function () {
      if (!haveKeygen) this.skip();
      ecdsa = keygenKey(dir, 'ecdsa', 'verdict-ecdsa').blob;
    });

    it('known / unknown / changed / revoked', () => {
      const entries = parseKnownHosts(
        [
          line('[127.0.0.1]:2222', ed), // 1
          line('gpu1.example', ed), // 2
          line('gpu2.example', ecdsa), // 3
        ].join('\n'),
        '/home/u/.ssh/known_hosts',
      );
      const known = checkHostKey(entries, '127.0.0.1', 2222, ed);
      assert.equal(known.status, 'known');
      assert.equal(known.status === 'known' && known.entry.line, 1);

      // Same host on port 22: not known (port semantics), no other keys.
      assert.deepEqual(checkHostKey(entries, '127.0.0.1', 22, ed), { status: 'unknown', otherKeys: [] });

      // Same type, other key: changed, with both fingerprints.
      const changed = checkHostKey(entries, 'gpu1.example', 22, ed2);
      assert.equal(changed.status, 'changed');
      if (changed.status !== 'changed') return;
      assert.equal(changed.expected.line, 2);
      assert.equal(changed.expectedFingerprint, fingerprintSha256(ed));
      assert.equal(changed.presentedFingerprint, fingerprintSha256(ed2));

      // Key of a type not known for the host: unknown, listing the other keys.
      const other = checkHostKey(entries, 'gpu2.example', 22, ed);
      assert.equal(other.status, 'unknown');
      assert.deepEqual(other.status === 'unknown' && other.otherKeys.map((e) => e.line), [3]);
      // ... or, OpenSSH-style, changed.
      const strict = checkHostKey(entries, 'gpu2.example', 22, ed, { otherTypeIsChanged: true });
      assert.equal(strict.status, 'changed');
      assert.equal(strict.status === 'changed' && strict.expected.line, 3);

      // Key known for the host AND revoked: revoked wins, whatever the @revoked host field says.
      const withRevoked = parseKnownHosts([line('gpu1.example', ed), line('some.other.host', ed, '@revoked')].join('\n'), 'kh');
      const rv = checkHostKey(withRevoked, 'gpu1.example', 22, ed);
      assert.equal(rv.status, 'revoked');
      assert.equal(rv.status === 'revoked' && rv.entry.line, 2);
      assert.equal(checkHostKey(withRevoked, 'gpu1.example', 22, ed2).status, 'changed');
    });

    it('ignores @cert-authority lines and lines for other hosts', () => {
      const entries = parseKnownHosts([line('*.example', ed, '@cert-authority'), line('gpu9.other', ed)].join('\n'), 'kh');
      assert.deepEqual(checkHostKey(entries, 'gpu1.example', 22, ed), { status: 'unknown', otherKeys: [] });
      assert.deepEqual(checkHostKey(entries, 'gpu1.example', 22, ed2), { status: 'unknown', otherKeys: [] });
    });

    it('a negated pattern excludes the host; the exact key on another line still counts', () => {
      const entries = parseKnownHosts([line('gpu*.example,!gpu13.example', ed), line('gpu13.example', ed2)].join('\n'), 'kh');
      assert.equal(checkHostKey(entries, 'gpu12.example', 22, ed).status, 'known');
      const v = checkHostKey(entries, 'gpu13.example', 22, ed);
      assert.equal(v.status, 'changed'); // line 1 does not apply to gpu13, line 2 has another ed25519 key
      assert.equal(v.status === 'changed' && v.expected.line, 2);
      assert.equal(checkHostKey(entries, 'gpu13.example', 22, ed2).status, 'known');
    });

    it('hashed entries work for verdicts', () => {
      const entries = parseKnownHosts(knownHostLine('127.0.0.1', 2222, ed, { hashed: true }), 'kh');
      assert.equal(checkHostKey(entries, '127.0.0.1', 2222, ed).status, 'known');
      assert.equal(checkHostKey(entries, '127.0.0.1', 2222, ed2).status, 'changed');
      assert.equal(checkHostKey(entries, '127.0.0.1', 22, ed2).status, 'unknown');
    });

    it('describeChangedKey names both fingerprints, the offending file:line and the fix', () => {
      const entries = parseKnownHosts(['# x', line('[127.0.0.1]:2222', ed)].join('\n'), '/home/u/.ssh/known_hosts');
      const v = checkHostKey(entries, '127.0.0.1', 2222, ed2);
      assert.equal(v.status, 'changed');
      if (v.status !== 'changed') return;
      const msg = describeChangedKey('127.0.0.1', 2222, v);
      assert.match(msg, /REMOTE HOST IDENTIFICATION HAS CHANGED/);
      assert.ok(msg.includes(fingerprintSha256(ed)));
      assert.ok(msg.includes(fingerprintSha256(ed2)));
      assert.ok(msg.includes('/home/u/.ssh/known_hosts:2'));
      assert.ok(msg.includes(`ssh-keygen -f /home/u/.ssh/known_hosts -R '[127.0.0.1]:2222'`), msg);
      assert.ok(msg.split('\n').length >= 5);
    });
  });

  describe('knownHostLine', () => {
    it('writes lines ssh-keygen -F finds (plain and hashed, port 22 and 2222)', function () {
      if (!haveKeygen) this.skip();
      const k = ssh2Ed25519().blob;
      const file = path.join(dir, 'kh-written');
      const lines = [
        knownHostLine('127.0.0.1', 2222, k),
        knownHostLine('Node-A.Example', 22, k, { hashed: true }),
        knownHostLine('10.9.8.7', 2200, k, { hashed: true }),
      ];
      assert.equal(lines[0], `[127.0.0.1]:2222 ssh-ed25519 ${k.toString('base64')}`);
      assert.match(lines[1], /^\|1\|[A-Za-z0-9+/]{27}=\|[A-Za-z0-9+/]{27}= ssh-ed25519 /);
      fs.writeFileSync(file, lines.join('\n') + '\n');
      for (const [name, want] of [
        ['[127.0.0.1]:2222', 1],
        ['127.0.0.1', 0],
        ['node-a.example', 1],
        ['[10.9.8.7]:2200', 1],
        ['10.9.8.7', 0],
      ] as const) {
        const r = keygen(['-F', name, '-f', file]);
        const found = r.stdout.split('\n').filter((l) => l && !l.startsWith('#'));
        assert.equal(found.length, want, `${name}: ${r.stdout}${r.stderr}`);
        if (want) assert.equal(r.status, 0);
      }
      // ssh-keygen reads back the same fingerprint.
      const r = keygen(['-l', '-f', file]);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(r.stdout.trim().split('\n').length, 3);
      for (const l of r.stdout.trim().split('\n')) assert.equal(l.split(/\s+/)[1], fingerprintSha256(k));
    });

    it('rejects host names that would corrupt the file', () => {
      const k = ssh2Ed25519().blob;
      for (const bad of ['', 'a b', 'a,b', 'a*', '[a]', 'a\nb', '|1|x', '#x']) {
        assert.throws(() => knownHostLine(bad, 22, k), Error, JSON.stringify(bad));
      }
      assert.throws(() => knownHostLine('a', 0, k));
      assert.throws(() => knownHostLine('a', 70000, k));
    });
  });

  describe('KnownHostsStore', () => {
    it('append creates dir 0700 and file 0600, fixes a missing final newline, and check sees it', function () {
      const ed = ssh2Ed25519().blob;
      const base = path.join(dir, 'store1');
      const userFile = path.join(base, 'nested', '.ssh', 'known_hosts');
      const systemFile = path.join(base, 'ssh_known_hosts');
      fs.mkdirSync(base);
      const store = new KnownHostsStore([userFile, systemFile, path.join(base, 'missing')]);
      assert.deepEqual(store.load(), []);
      assert.deepEqual(store.check('127.0.0.1', 2222, ed), { status: 'unknown', otherKeys: [] });
      const written = store.append('127.0.0.1', 2222, ed);
      assert.equal(written, `[127.0.0.1]:2222 ssh-ed25519 ${ed.toString('base64')}`);
      if (process.platform !== 'win32') {
        assert.equal(fs.statSync(path.dirname(userFile)).mode & 0o777, 0o700);
        assert.equal(fs.statSync(userFile).mode & 0o777, 0o600);
      }
      assert.equal(fs.readFileSync(userFile, 'utf8'), written + '\n');
      assert.equal(store.check('127.0.0.1', 2222, ed).status, 'known');

      // A file whose last line has no newline.
      const other = ssh2Ed25519().blob;
      fs.writeFileSync(userFile, `# no newline at end`);
      store.append('gpu1', 22, other);
      assert.deepEqual(fs.readFileSync(userFile, 'utf8').split('\n'), [
        '# no newline at end',
        `gpu1 ssh-ed25519 ${other.toString('base64')}`,
        '',
      ]);
      assert.equal(store.check('gpu1', 22, other).status, 'known');
    });

    it('reads the read-only system file too, but never writes it; preferredKeyTypes lists known types', function () {
      if (!haveKeygen) this.skip();
      const ed = ssh2Ed25519().blob;
      const ec = keygenKey(dir, 'ecdsa', 'store-ecdsa').blob;
      const rsa = keygenKey(dir, 'rsa', 'store-rsa').blob;
      const base = path.join(dir, 'store2');
      fs.mkdirSync(base);
      const userFile = path.join(base, 'known_hosts');
      const systemFile = path.join(base, 'ssh_known_hosts');
      fs.writeFileSync(userFile, line('[gpu1]:2222', ec) + '\n');
      fs.writeFileSync(
        systemFile,
        [line('gpu1', ed), line('[gpu1]:2222', rsa), line('[gpu1]:2222', ed, '@cert-authority')].join('\n') + '\n',
      );
      const before = fs.readFileSync(systemFile, 'utf8');
      const store = new KnownHostsStore([userFile, systemFile]);
      assert.deepEqual(store.preferredKeyTypes('gpu1', 2222), ['ecdsa-sha2-nistp256', 'ssh-rsa']);
      assert.deepEqual(store.preferredHostKeyAlgorithms('gpu1', 2222), ['ecdsa-sha2-nistp256', 'rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa']);
      assert.deepEqual(store.preferredKeyTypes('gpu1', 22), ['ssh-ed25519']);
      assert.deepEqual(store.preferredKeyTypes('gpu2', 22), []);
      const v = store.check('gpu1', 2222, rsa);
      assert.equal(v.status, 'known');
      assert.equal(v.status === 'known' && v.entry.file, systemFile);
      store.append('gpu1', 2222, ed);
      assert.equal(fs.readFileSync(systemFile, 'utf8'), before);
      assert.equal(store.check('gpu1', 2222, ed).status, 'known');
    });

    it('hashNewEntries writes hashed lines that still verify', () => {
      const ed = ssh2Ed25519().blob;
      const file = path.join(dir, 'store3', 'known_hosts');
      const store = new KnownHostsStore([file], { hashNewEntries: true });
      const l = store.append('10.0.0.5', 22, ed);
      assert.match(l, /^\|1\|/);
      assert.ok(!fs.readFileSync(file, 'utf8').includes('10.0.0.5'));
      assert.equal(store.check('10.0.0.5', 22, ed).status, 'known');
      assert.equal(store.check('10.0.0.5', 2222, ed).status, 'unknown');
    });
  });
});
