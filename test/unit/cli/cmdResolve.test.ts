/**
 * `gpu-sessions resolve NODE --json` compared with OpenSSH's own `ssh -G` on configs that exercise tokens, Match,
 * Include, user@host forms, ProxyJump hops and quoting (issue 42). ssh -G runs in a network namespace without
 * network where `unshare -n` works; the configs need no DNS either way, and none has a `Match exec`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { main } from '../../../src/cli/main';
import type { CliIo } from '../../../src/cli/cliNode';
import { SSH_G_ORDER } from '../../../src/core/ssh/resolveView';

const SSH = '/usr/bin/ssh';
const haveSsh = fs.existsSync(SSH);
const netns = haveSsh && spawnSync('unshare', ['-n', 'true']).status === 0;

type GMap = Record<string, string | string[]>;

/** `ssh -G [extra] -F file dest` as key → value (identityfile → every line). */
function sshG(file: string, dest: string, extra: string[] = []): { status: number | null; g: GMap; stderr: string } {
  const argv = [...extra, '-G', '-F', file, dest];
  const r = netns
    ? spawnSync('unshare', ['-n', SSH, ...argv], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 })
    : spawnSync(SSH, argv, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 20_000 });
  const g: GMap = {};
  for (const l of (r.stdout ?? '').split('\n')) {
    const i = l.indexOf(' ');
    if (i <= 0) continue;
    const k = l.slice(0, i);
    const v = l.slice(i + 1);
    if (k === 'identityfile') g[k] = [...((g[k] as string[] | undefined) ?? []), v];
    else g[k] = v;
  }
  return { status: r.status, g, stderr: r.stderr ?? '' };
}

async function resolveJson(file: string, dest: string): Promise<{ code: number; json?: GMap & { hops?: GMap[] }; err: string }> {
  let out = '';
  let err = '';
  const io: CliIo = { out: (s) => void (out += s), err: (s) => void (err += s), isTTY: false };
  const code = await main(['--ssh-config', file, 'resolve', dest, '--json'], io);
  return { code, json: code === 0 ? JSON.parse(out) : undefined, err };
}

const KEYS: string[] = SSH_G_ORDER;

/** The fields that differ (ssh -G is the reference); every key the contract names is compared, present or not. */
function differences(ours: GMap, theirs: GMap): string[] {
  const diffs: string[] = [];
  for (const k of new Set([...KEYS, ...Object.keys(ours).filter((k) => k !== 'hops')])) {
    const a = JSON.stringify(ours[k]);
    const b = JSON.stringify(theirs[k]);
    if (a !== b) diffs.push(`${k}: ours ${a}, ssh -G ${b}`);
  }
  return diffs;
}

/** The hop's ssh invocation: `ssh -G [-p port] [user@]host`, as ssh runs it for a ProxyJump hop. */
function hopDest(hop: string): { dest: string; extra: string[] } {
  let t = hop.replace(/^ssh:\/\//, '');
  const extra: string[] = [];
  const m = /^(.*?)(?::(\d+))?$/.exec(t.startsWith('[') || (t.match(/:/g) ?? []).length < 2 ? t : `${t}`)!;
  if (t.startsWith('[')) {
    const b = /^(.*@)?\[([^\]]+)\](?::(\d+))?$/.exec(t)!;
    t = `${b[1] ?? ''}${b[2]}`;
    if (b[3]) extra.push('-p', b[3]);
  } else if (m[2] && (m[1].match(/:/g) ?? []).length === 0) {
    t = m[1];
    extra.push('-p', m[2]);
  }
  return { dest: t, extra };
}

interface Case {
  name: string;
  lines: (dir: string) => string[];
  files?: (dir: string) => Record<string, string[]>;
  dests: string[];
}

const CASES: Case[] = [
  {
    name: 'tokens',
    lines: () => [
      'Host tok1',
      '  HostName 2001:DB8:0:0::1',
      '  HostKeyAlias MyAlias',
      '  UserKnownHostsFile ~/.ssh/kh_%k %C /tmp/%h-%p-%r-%u-%n %d/x%%y',
      '  IdentityFile ~/.ssh/%r_key',
      '  GlobalKnownHostsFile ~/g_%h /etc/ssh/other',
      'Host tok2',
      '  HostName Real-%h.Example',
      '  UserKnownHostsFile /tmp/%k/%n/%l/%L/%i ${HOME}/kh',
      '  IdentityFile none',
      'Host tok3',
      '  HostName 10.0.0.7',
      '  Port 2222',
      '  User carol',
      '  UserKnownHostsFile none',
      '  GlobalKnownHostsFile none',
      '  IdentitiesOnly yes',
    ],
    dests: ['tok1', 'tok2', 'Tok2', 'tok3', 'bob@tok1', 'ssh://dave@tok3:2301'],
  },
  {
    name: 'quoting',
    lines: () => [
      'Host q1',
      '  User ops#2',
      '  IdentityFile /tmp/with\\ space',
      '  IdentityFile "/tmp/quoted path"',
      '  IdentityFile /tmp/x"mid quoted"y # a comment',
      'Host q2',
      '\tHostName=10.9.8.7',
      '  Port = 2200',
      "  User 'single'",
      '  ProxyCommand ssh -W %h:%p "jump host" # kept',
      'Host q3 "q4"',
      '  HostKeyAlias "Quoted Alias"',
      '  IdentityFile ~/.ssh/a\\\\b',
    ],
    dests: ['q1', 'q2', 'q3', 'q4', 'Ubuntu@q1'],
  },
  {
    name: 'match',
    lines: () => [
      'Host m*',
      '  HostName %h.internal',
      'Match user bob',
      '  Port 2202',
      '  IdentityFile ~/.ssh/bob_key',
      'Match user alice',
      '  Port 2201',
      '  IdentityFile ~/.ssh/alice_key',
      'Match originalhost mx !host *.nowhere',
      '  HostKeyAlias from-originalhost',
      'Match host *.internal localuser *',
      '  UserKnownHostsFile /tmp/internal_kh',
      'Match canonical host mfin.internal',
      '  Port 2400',
      'Match final host my.internal',
      '  User final-user',
      'Match all',
      '  User alice',
    ],
    dests: ['ma', 'bob@ma', 'alice@mb', 'mx', 'mfin', 'my', 'Eve@MY', 'ssh://bob@mz:2999'],
  },
  {
    name: 'include',
    files: (dir) => ({
      'inc/10-a.conf': ['Host inca', '  HostName 10.1.0.1', '  Port 2001'],
      'inc/20-b.conf': ['Host incb', '  User incuser', 'Host *', '  IdentityFile ~/.ssh/from_glob'],
      'scoped.conf': ['Port 3333', 'IdentityFile ~/.ssh/scoped'],
      'nested.conf': [`Include ${dir}/inc/*.conf`],
    }),
    lines: (dir) => [`Include ${dir}/nested.conf`, 'Host scoped-a', `  Include ${dir}/scoped.conf`, 'Host scoped-b', '  User sb'],
    dests: ['inca', 'incb', 'scoped-a', 'scoped-b', 'root@inca'],
  },
  {
    name: 'hops',
    lines: () => [
      'Host gpu',
      '  HostName 10.0.0.5',
      '  ProxyJump david@Project-Bastion,ops@Jump9:2222',
      'Host project-bastion',
      '  HostName 192.0.2.10',
      '  User ignored-for-david',
      '  Port 2022',
      'Host jump9',
      '  HostName 192.0.2.9',
      'Host Upper',
      '  Port 99',
      'Host gpu2',
      '  ProxyJump ssh://u@J1:23,[::1]:24',
      'Host pc',
      '  ProxyCommand nc %h %p',
      '  ProxyJump never-used',
      'Host pj-first',
      '  ProxyJump first',
      '  ProxyCommand never-used',
      'Host i-* mi-*',
      '  ProxyCommand sh -c "aws ssm start-session --target %h --parameters \'portNumber=%p\'"',
      '  IdentitiesOnly yes',
      '  HostKeyAlias SSM-Node',
      '  UserKnownHostsFile ~/.ssh/ssm_known_hosts',
      'Match user bob',
      '  Port 2202',
      'Host *',
      '  IdentityFile ~/.ssh/%r_id',
    ],
    dests: [
      'Upper',
      'upper',
      'UPPER',
      'Ubuntu@Project-Bastion',
      'x@project-bastion',
      'gpu',
      'gpu2',
      'pc',
      'pj-first',
      'i-0abc',
      'bob@i-0abc',
      'ssh://ec2-user@mi-77:2201',
      'bob@gpu',
    ],
  },
  {
    name: 'canonicalize',
    lines: () => [
      'Host canon',
      '  HostName 10.1.2.3',
      '  CanonicalizeHostname yes',
      'Host 10.1.*',
      '  Port 2222',
      '  User canonuser',
      'Host dotted',
      '  HostName a.b.c.example',
      '  CanonicalizeHostname yes',
      'Host a.b.c.example',
      '  Port 2323',
      'Host v6c',
      '  HostName 2001:DB8::0:1',
      '  CanonicalizeHostname always',
      'Host 2001:db8::1',
      '  User v6user',
      'Host proxied',
      '  HostName 10.1.9.9',
      '  ProxyCommand nc %h %p',
      '  CanonicalizeHostname yes',
    ],
    dests: ['canon', 'dotted', 'v6c', 'proxied', 'bob@canon'],
  },
  {
    name: 'addresses',
    lines: () =>
      [
        '2001:DB8::1',
        '2001:DB8:0:0::1',
        '::ffff:a00:1',
        '::FFFF:1.2.3.4',
        '0:0:0:0:0:0:0:1',
        '2001:db8:0:0:1:0:0:1',
        '::2:3',
        '10.0.0.01',
        '1.2.3',
        '0x0A.1.1.1',
        '1234',
        '[2001:DB8::1]',
        'Mixed.Case.Example',
      ].flatMap((h, i) => [`Host a${i}`, `  HostName ${h}`, `  UserKnownHostsFile /tmp/%h/%k`]),
    dests: Array.from({ length: 13 }, (_, i) => `a${i}`),
  },
  {
    name: 'proxy order',
    lines: () => [
      'Host pjn',
      '  ProxyJump none',
      '  ProxyCommand nc %h %p',
      'Host pjn2',
      '  ProxyJump none',
      '  ProxyJump j1',
      'Host pcn',
      '  ProxyCommand none',
      '  ProxyJump j2',
      'Host pcn2',
      '  ProxyCommand none',
      '  ProxyCommand nc x 1',
    ],
    dests: ['pjn', 'pjn2', 'pcn', 'pcn2'],
  },
  {
    name: 'syntax and negation',
    files: () => ({ 'm.conf': ['Port 6001', 'User incm'] }),
    lines: (dir) => [
      'IgnoreUnknown UseKeychain,AddKeysToAgnt',
      'Host=eqhost',
      '  Port=7001',
      'Host g?u',
      '  Port 7002',
      'Match originalhost inm',
      `  Include ${dir}/m.conf`,
      'Host ch',
      '  HostName 10.5.5.5',
      '  CanonicalizeHostname yes',
      '  CanonicalizeMaxDots 0',
      'Match host 10.5.5.5 canonical',
      '  User canon-match',
      'Host sd',
      '  HostName a.b',
      '  CanonicalizeHostname yes',
      '  CanonicalizeMaxDots 0',
      '  CanonicalDomains example.com',
      'Host uk',
      '  UseKeychain yes',
      'Host tabs',
      '\tUser\ttabuser\t',
      'Host my~host',
      '  Port 4444',
      'Host lastwins',
      '  Port 1',
      '  Port 2',
      `Match !user ${os.userInfo().username}`,
      '  HostKeyAlias not-local',
      `Match user ${os.userInfo().username} !originalhost nomatch*`,
      '  IdentityFile ~/.ssh/local_%h',
    ],
    dests: [
      'eqhost',
      'gpu',
      'gxu',
      'inm',
      'bob@inm',
      'ch',
      'sd',
      'uk',
      'tabs',
      'lastwins',
      'nomatch1',
      'Zed@zed',
      'my~host',
      'bob@my~host',
      'a@b@my~host',
    ],
  },
];

describe('resolve --json agrees with ssh -G (issue 42)', function () {
  this.timeout(120_000);
  let dir: string;
  const tally = { configs: 0, hosts: 0, fields: 0, agreeing: 0 };
  before(function () {
    if (!haveSsh) this.skip();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-resolve-'));
  });
  after(function () {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    if (tally.configs)
      console.log(
        `    ssh -G comparison: ${tally.configs} configs, ${tally.hosts} hosts/hops, ${tally.agreeing}/${tally.fields} fields agree`,
      );
  });

  for (const c of CASES) {
    it(`${c.name}: ${c.dests.join(', ')}`, async function () {
      const cdir = path.join(dir, c.name);
      fs.mkdirSync(cdir, { recursive: true });
      for (const [rel, lines] of Object.entries(c.files?.(cdir) ?? {})) {
        fs.mkdirSync(path.dirname(path.join(cdir, rel)), { recursive: true });
        fs.writeFileSync(path.join(cdir, rel), lines.join('\n') + '\n');
      }
      const file = path.join(cdir, 'config');
      fs.writeFileSync(file, c.lines(cdir).join('\n') + '\n');
      tally.configs++;
      const problems: string[] = [];
      const compare = (label: string, ours: GMap, theirs: GMap) => {
        const d = differences(ours, theirs);
        tally.hosts++;
        tally.fields += KEYS.length;
        tally.agreeing += KEYS.length - d.filter((x) => KEYS.includes(x.split(':')[0])).length;
        for (const x of d) problems.push(`${label}: ${x}`);
      };
      for (const dest of c.dests) {
        const ssh = sshG(file, dest);
        assert.equal(ssh.status, 0, `ssh -G ${dest}: ${ssh.stderr}`);
        const r = await resolveJson(file, dest);
        assert.equal(r.code, 0, `resolve ${dest}: ${r.err}`);
        const { hops, ...ours } = r.json!;
        compare(dest, ours, ssh.g);
        const pj = typeof ssh.g.proxyjump === 'string' ? ssh.g.proxyjump.split(',') : [];
        assert.equal((hops ?? []).length, pj.length, `${dest}: hops`);
        pj.forEach((hop, i) => {
          const h = hopDest(hop);
          compare(`${dest} hop ${hop}`, hops![i], sshG(file, h.dest, h.extra).g);
        });
      }
      assert.deepEqual(problems, []);
    });
  }

  it('refuses what ssh refuses: an alias with a comma is not a node, and resolve says so', async function () {
    const file = path.join(dir, 'refused');
    fs.writeFileSync(file, ['Host a,b ok', '  Port 1'].join('\n') + '\n');
    assert.notEqual(sshG(file, 'a,b').status, 0);
    const r = await resolveJson(file, 'a,b');
    assert.equal(r.code, 2);
    assert.match(r.err, /"a,b" is not listed as a node: ssh refuses it/);
    assert.equal((await resolveJson(file, 'ok')).json!.port, '1');
  });

  it('a "none" among other values is refused, as ssh refuses it', async function () {
    const file = path.join(dir, 'nonealone');
    fs.writeFileSync(file, ['Host n', '  UserKnownHostsFile /tmp/a none'].join('\n') + '\n');
    assert.notEqual(sshG(file, 'n').status, 0);
    const r = await resolveJson(file, 'n');
    assert.match(r.err, /UserKnownHostsFile "none" must appear alone/);
  });

  it('warns, naming the host, where CanonicalizeHostname would need DNS', async function () {
    const file = path.join(dir, 'dns');
    fs.writeFileSync(file, ['Host short', '  CanonicalizeHostname yes', '  CanonicalDomains example.com'].join('\n') + '\n');
    const r = await resolveJson(file, 'short');
    assert.equal(r.code, 0);
    assert.match(r.err, /CanonicalizeHostname for "short" would try it in example\.com \(a DNS lookup/);
    assert.equal(r.json!.hostname, 'short');
  });
});
