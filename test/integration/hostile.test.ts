/**
 * A hostile node (issue 12) over a REAL OpenSSH sshd: wrappers first on the node user's PATH
 * (`~/.ssh/environment`, honoured by sshd's PermitUserEnvironment) and processes with crafted argv,
 * started over ssh as any tenant could. Each attack asserts the blocked outcome.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { SalvageManifest, Salvager } from '../../src/core/flows/salvage';
import { entryLimit } from '../../src/core/salvage/transfer/transfer';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode } from '../helpers/simnode';
import { walk } from '../helpers/walk';
import { keygen } from '../helpers/sshd';
import { pad512, paxRecord, tarHeader } from '../helpers/tarCraft';
import { unescapedMarkup } from '../helpers/markdown';
import { withEnv } from '../helpers/withEnv';
import { REDACTED } from '../../src/core/util/redact';

const RAW_CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const assertNoRawControls = (what: string, s: string) => {
  const m = RAW_CONTROL.exec(s);
  assert.equal(
    m,
    null,
    `${what} holds a raw control byte: ${JSON.stringify(s.slice(Math.max(0, (m?.index ?? 0) - 30), (m?.index ?? 0) + 30))}`,
  );
};
// Attack 7's file name: a backtick, HTML and a command link.
const MARKUP_NAME = 'x`y <img src=x onerror=alert(1)> [run](command:workbench.action.terminal.new).log';
const ESC_NAME = 'bad\x1b]0;T\x1b\\X.log';

// Wrappers: active only while their mode file exists, so the other attacks see the real tools.
const TAR_WRAPPER = `#!/bin/sh
case "$*" in
  *"-cf -"*) if [ -f "$HOME/.evil/tar-mode" ]; then cat "$HOME/.evil/$(cat "$HOME/.evil/tar-mode")"; exec cat /dev/zero; fi ;;
esac
exec /usr/bin/tar "$@"
`;
// The same for the node's single-pass reader (python3 running frames.py, which names itself "single-pass reader").
const PYTHON_WRAPPER = `#!/bin/sh
case "$*" in
  *"single-pass reader"*) if [ -f "$HOME/.evil/py-mode" ]; then cat "$HOME/.evil/$(cat "$HOME/.evil/py-mode")"; exec cat /dev/zero; fi ;;
esac
exec /usr/bin/python3 "$@"
`;
/** A frames.py record header: F (a file starts: index, mode, size) or D (bytes follow: length). */
const frame = (type: 'F' | 'D', ...n: bigint[]) => {
  const b = Buffer.alloc(1 + (type === 'F' ? 16 : 4));
  b.write(type);
  if (type === 'F') {
    b.writeUInt32BE(Number(n[0]), 1);
    b.writeUInt32BE(0o644, 5);
    b.writeBigUInt64BE(n[1], 9);
  } else b.writeUInt32BE(Number(n[0]), 1);
  return b;
};
// The listing runs `find` from PATH: with its mode file, a forged git-repository record (path with `..`) comes first.
const FIND_WRAPPER = `#!/bin/sh
if [ -f "$HOME/.evil/find-mode" ]; then printf 'G\\t1\\t0\\t0\\t%s/tarjob/../../../etc\\000' "$HOME"; fi
exec /usr/bin/find "$@"
`;
// Only the download stream (exec'd straight from sshd's shell), not the hashing pipeline, gets the extra bytes.
const HEAD_WRAPPER = `#!/bin/sh
if [ -f "$HOME/.evil/head-mode" ] && [ "$1" = "-c" ] && [ "$(cat /proc/$PPID/comm 2>/dev/null)" = "sshd" ]; then
  /usr/bin/head "$@"; exec cat /dev/zero
fi
exec /usr/bin/head "$@"
`;

describe('a hostile node over a real OpenSSH sshd (issue 12)', function () {
  this.timeout(240_000);
  let sim: SimNode;
  let base: string;
  let pool: ConnectionPool;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({
      startServers: false,
      beforeStart: (home: string) => {
        mkdirSync(path.join(home, 'evilbin'), { recursive: true });
        // Attack 1/7: a hostname with a window title, a screen clear and a bidi override.
        writeFileSync(
          path.join(home, 'evilbin', 'hostname'),
          "#!/bin/sh\nprintf 'node\\033]0;PWNED-TITLE\\007\\033[2J\\342\\200\\256eil\\n'\n",
          {
            mode: 0o755,
          },
        );
        // Attacks 2 and 7: escapes and markup in file names and a symlink target.
        mkdirSync(path.join(home, 'job7'), { recursive: true });
        writeFileSync(path.join(home, 'job7', ESC_NAME), 'unreadable\n', { mode: 0o000 });
        writeFileSync(path.join(home, 'job7', MARKUP_NAME), 'markup\n');
        symlinkSync('/tmp/\x1b]0;LINK\x07', path.join(home, 'job7', 'link.log'));
        writeFileSync(path.join(home, 'evilbin', 'tar'), TAR_WRAPPER, { mode: 0o755 });
        writeFileSync(path.join(home, 'evilbin', 'python3'), PYTHON_WRAPPER, { mode: 0o755 });
        writeFileSync(path.join(home, 'evilbin', 'head'), HEAD_WRAPPER, { mode: 0o755 });
        mkdirSync(path.join(home, '.ssh'), { recursive: true });
        writeFileSync(path.join(home, '.ssh', 'environment'), `PATH=${home}/evilbin:/usr/local/bin:/usr/bin:/bin\n`);
        mkdirSync(path.join(home, '.evil'), { recursive: true });
        // Attack 11: a find wrapper that slips a forged git-repository record with `..` into the listing.
        writeFileSync(path.join(home, 'evilbin', 'find'), FIND_WRAPPER, { mode: 0o755 });
        mkdirSync(path.join(home, 'tarjob'), { recursive: true });
        writeFileSync(path.join(home, 'tarjob', 'x.log'), 'seven!\n');
        writeFileSync(path.join(home, 'tarjob', 'big.log'), Buffer.alloc(5 * 1024 * 1024, 0x61));
        // Attack 6 on the node's reader: the 7-byte x.log (file 0 of its batch) announced at 1 TiB, then endless zeros;
        // or announced at 7 B and followed by a 4 GiB chunk of zeros.
        writeFileSync(path.join(home, '.evil', 'ftib'), frame('F', 0n, 1024n ** 4n));
        writeFileSync(path.join(home, '.evil', 'fmore'), Buffer.concat([frame('F', 0n, 7n), frame('D', 0xffffffffn)]));
        // Attack 5: a pax header that claims 8 GiB, then endless zeros.
        writeFileSync(path.join(home, '.evil', 'pax8g'), tarHeader({ name: 'PaxHeaders/x', type: 'x', size: 8n * 1024n ** 3n }));
        // Attack 6: the entry for the 7-byte x.log claims 1 TiB (pax size), then endless zeros.
        const pax = Buffer.from(paxRecord('path', path.join(home, 'tarjob', 'x.log')) + paxRecord('size', String(1024 ** 4)));
        writeFileSync(
          path.join(home, '.evil', 'tib'),
          Buffer.concat([
            tarHeader({ name: 'PaxHeaders/x.log', type: 'x', size: pax.length }),
            pad512(pax),
            tarHeader({ name: 'x.log', type: '0', size: 7 }),
          ]),
        );
      },
    });
    base = mkdtempSync(path.join(os.tmpdir(), 'gs-hostile-'));
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
  });
  after(async () => {
    pool?.dispose();
    await sim?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  const args = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];
  /** Run `fn` with one of the node's wrappers armed (its mode file written), and disarm it whatever happens. */
  async function withMode<T>(file: string, value: string, fn: () => Promise<T>): Promise<T> {
    const p = path.join(sim.home, '.evil', file);
    writeFileSync(p, value);
    try {
      return await fn();
    } finally {
      rmSync(p, { force: true });
    }
  }

  /** An in-process salvage of ~/tarjob, sampling this process's RSS while it runs. */
  async function salvageTarjob(name: string): Promise<{ m: SalvageManifest; peakRssGrowth: number; ms: number; dir: string }> {
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0];
    const t = pool.get(node);
    global.gc?.();
    const rss0 = process.memoryUsage().rss;
    let peak = rss0;
    const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const started = Date.now();
    const s = new Salvager({
      node: 'simnode',
      transport: t,
      base: path.join(base, name),
      roots: [path.join(sim.home, 'tarjob')],
      snapshot: async () => ({ json: {}, markdown: '', summary: 'skipped in this test' }),
    });
    try {
      const m = (await s.run())!;
      return { m, peakRssGrowth: Math.max(peak, process.memoryUsage().rss) - rss0, ms: Date.now() - started, dir: s.dir };
    } finally {
      clearInterval(timer);
    }
  }

  /** The node without python3: its small files come as tar, its large ones through `head`. */
  const withTar = (fn: () => Promise<void>) => withEnv({ GS_SALVAGE_READER: 'tar' }, fn);

  it('attack 5: a pax header claiming 8 GiB is refused; memory stays bounded', () =>
    withTar(async () => {
      await withMode('tar-mode', 'pax8g', async () => {
        const r = await salvageTarjob('pax');
        const x = r.m.items.find((i) => i.remotePath.endsWith('/tarjob/x.log'))!;
        assert.equal(x.status, 'failed');
        assert.match(x.reason ?? '', /exceeds the 1048576 B limit/);
        assert.equal(r.m.verdict, 'unsafe');
        console.log(`      pax 8 GiB: peak RSS growth ${(r.peakRssGrowth / 1048576).toFixed(1)} MiB, ${r.ms} ms`);
        assert.ok(r.peakRssGrowth < 128 * 1024 * 1024, `RSS grew by ${r.peakRssGrowth} B`);
      });
    }));

  for (const reader of ['tar', 'frames'] as const)
    it(`attack 6 (${reader}): an entry claiming 1 TiB for a 7-byte file is refused and not written; the stream stops`, () =>
      (reader === 'tar' ? withTar : (fn: () => Promise<void>) => fn())(async () => {
        await withMode(reader === 'tar' ? 'tar-mode' : 'py-mode', reader === 'tar' ? 'tib' : 'ftib', async () => {
          const r = await salvageTarjob('tib');
          const x = r.m.items.find((i) => i.remotePath.endsWith('/tarjob/x.log'))!;
          assert.equal(x.status, 'failed');
          assert.match(x.reason ?? '', /sent 1099511627776 B for a file listed at 7 B/);
          const sizes = walk(r.dir).map((f) => statSync(f).size);
          const biggest = Math.max(0, ...sizes);
          console.log(
            `      1 TiB entry: largest local file ${biggest} B, peak RSS growth ${(r.peakRssGrowth / 1048576).toFixed(1)} MiB, ${r.ms} ms`,
          );
          assert.ok(biggest <= entryLimit(7), `a local file of ${biggest} B`);
          assert.equal(x.localPath && existsSync(path.join(r.dir, x.localPath)), false, 'nothing written for the lying entry');
          assert.ok(!walk(r.dir).some((f) => f.endsWith('.gs-partial')));
          assert.ok(r.peakRssGrowth < 128 * 1024 * 1024, `RSS grew by ${r.peakRssGrowth} B`);
          assert.ok(r.ms < 60_000);
        });
      }));

  it('attack 6 (frames): bytes past what the node announced for a file are refused; the stream stops', async () => {
    await withMode('py-mode', 'fmore', async () => {
      const r = await salvageTarjob('fmore');
      const x = r.m.items.find((i) => i.remotePath.endsWith('/tarjob/x.log'))!;
      assert.equal(x.status, 'failed');
      assert.match(x.reason ?? '', /transfer stream broke mid-file: the node sent more than the 7 B it announced/);
      assert.ok(!walk(r.dir).some((f) => f.endsWith('/x.log') || f.endsWith('.gs-partial')), 'nothing written for it');
      assert.ok(r.peakRssGrowth < 128 * 1024 * 1024, `RSS grew by ${r.peakRssGrowth} B`);
      assert.ok(r.ms < 60_000);
    });
  });

  it('attack 6: the large-file stream stops at the listed length (a wrapped head sending endless bytes)', () =>
    withTar(async () => {
      await withMode('head-mode', '1', async () => {
        const r = await salvageTarjob('head');
        const big = r.m.items.find((i) => i.remotePath.endsWith('/tarjob/big.log'))!;
        assert.equal(big.status, 'verified', big.reason ?? '');
        const local = path.join(r.dir, big.localPath!);
        assert.equal(statSync(local).size, 5 * 1024 * 1024);
        assert.ok(readFileSync(local).equals(Buffer.alloc(5 * 1024 * 1024, 0x61)));
        for (const f of walk(r.dir)) assert.ok(statSync(f).size <= 5 * 1024 * 1024, f);
        console.log(`      endless head: ${statSync(local).size} B kept, ${r.ms} ms`);
      });
    }));

  it('attack 4: separator bytes in argv cannot forge a /proc record (probe lists the real pid only)', async () => {
    const port = 32000 + Math.floor(Math.random() * 900);
    const forged = `\\036P\\0351\\0350\\035/\\035/etc/shadow\\035/etc/shadow\\035\\035python3\\037-m\\037sglang.launch_server\\037--model-path\\037/evil\\037--port\\03730099\\037\\036`;
    const start = sim.sshd.ssh(
      `nohup bash -c 'sleep 900; :' -m sglang.launch_server --port ${port} --model-path "$(printf '${forged}')" >/dev/null 2>&1 & echo $!`,
    );
    const pid = Number(start.stdout.trim());
    assert.ok(pid > 1, start.stderr);
    try {
      const r = await cli([...args(), 'probe', 'simnode', '--json'], { timeoutMs: 60_000 });
      assert.equal(r.code, 0, r.stderr);
      const p = JSON.parse(r.stdout) as { servers: Array<{ pid: number; port: number; modelPath: string | null; logFile: string | null }> };
      const mine = p.servers.filter((s) => s.port === port);
      assert.deepEqual(
        mine.map((s) => s.pid),
        [pid],
      );
      assert.equal(p.servers.filter((s) => s.pid === 1 || s.modelPath === '/evil' || s.port === 30099).length, 0);
    } finally {
      sim.sshd.ssh(`kill ${pid}`);
    }
  });

  it('attack 1: escapes in the hostname and in a process argv never reach the terminal raw (probe, human and --json)', async () => {
    const port = 32000 + Math.floor(Math.random() * 900);
    const start = sim.sshd.ssh(
      `nohup bash -c 'sleep 900; :' -m sglang.launch_server --port ${port} --model-path "$(printf '/models/x\\033]0;TITLE\\033\\\\\\033[41mRED')" >/dev/null 2>&1 & echo $!`,
    );
    const pid = Number(start.stdout.trim());
    assert.ok(pid > 1, start.stderr);
    try {
      const human = await cli([...args(), 'probe', 'simnode'], { timeoutMs: 60_000 });
      assert.equal(human.code, 0, human.stderr);
      assertNoRawControls('probe stdout', human.stdout);
      assertNoRawControls('probe stderr', human.stderr);
      assert.match(human.stdout, /node\\u001b\]0;PWNED-TITLE\\u0007\\u001b\[2J\\u202eeil/);
      assert.match(human.stdout, new RegExp(`:${port} .*/models/x\\\\u001b\\]0;TITLE`));
      const json = await cli([...args(), 'probe', 'simnode', '--json'], { timeoutMs: 60_000 });
      assertNoRawControls('probe --json', json.stdout);
      const p = JSON.parse(json.stdout) as { hostname: string; servers: Array<{ port: number; modelPath: string }> };
      // JSON keeps the exact value (escaped in transit, decoded by any JSON reader)
      assert.equal(p.hostname, 'node\x1b]0;PWNED-TITLE\x07\x1b[2J\u202eeil');
      assert.equal(p.servers.find((s) => s.port === port)?.modelPath, '/models/x\x1b]0;TITLE\x1b\\\x1b[41mRED');
    } finally {
      sim.sshd.ssh(`kill ${pid}`);
    }
  });

  it('attacks 2 and 7: salvage output and SALVAGE.md / environment.md hold no raw escapes and no live markup', async () => {
    const dest = path.join(base, 'md');
    const r = await cli([...args(), '--roots', path.join(sim.home, 'job7'), 'salvage', 'simnode', '--dest', dest, '--yes'], {
      timeoutMs: 180_000,
    });
    assert.equal(r.code, 5, r.stderr + r.stdout);
    assertNoRawControls('salvage stdout', r.stdout);
    assertNoRawControls('salvage stderr', r.stderr);
    assert.match(r.stdout, /would be lost/);
    assert.match(r.stdout, /bad\\u001b\]0;T\\u001b\\X\.log/);
    const folder = path.join(dest, 'simnode', readdirSync(path.join(dest, 'simnode'))[0]);
    const md = readFileSync(path.join(folder, 'SALVAGE.md'), 'utf8');
    assertNoRawControls('SALVAGE.md', md);
    assert.deepEqual(unescapedMarkup(md, [/\[environment\.md\]\(environment\.md\)/g]), []);
    const markupPath = path.join(sim.home, 'job7', MARKUP_NAME);
    assert.ok(md.includes('``' + markupPath + '``'), 'the name with a backtick sits in a longer code span');
    const env = readFileSync(path.join(folder, 'environment.md'), 'utf8');
    assertNoRawControls('environment.md', env);
    assert.deepEqual(
      unescapedMarkup(env, [/<\/?(details|summary|code)>/g, new RegExp(REDACTED.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g')]),
      [],
    );
    assert.match(env, /node\\\\u001b\\\]0;PWNED-TITLE/);
  });

  it('attack 8: under IdentitiesOnly only the configured identity is offered, not every ssh-agent key', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-agent-'));
    const sock = path.join(dir, 'agent.sock');
    const other = keygen(path.join(dir, 'other'));
    writeFileSync(sim.sshd.authorizedKeys, readFileSync(sim.sshd.authorizedKeys, 'utf8') + other.pub + '\n');
    const agent = spawn('ssh-agent', ['-D', '-a', sock], { stdio: 'ignore' });
    const fp = (pub: string) => execFileSync('ssh-keygen', ['-lf', pub]).toString().split(' ')[1];
    try {
      for (let i = 0; i < 50 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 100));
      // the agent's first key is the one the node must not see; the configured key is in it too
      execFileSync('ssh-add', [other.priv, sim.sshd.clientKey], { env: { ...process.env, SSH_AUTH_SOCK: sock }, stdio: 'ignore' });
      const accepted = () =>
        readFileSync(sim.sshd.logFile, 'utf8')
          .split('\n')
          .filter((l) => /Accepted publickey/.test(l));
      const probe = async () => {
        const before = accepted().length;
        const r = await cli([...args(), 'probe', 'simnode', '--json'], { timeoutMs: 60_000, env: { SSH_AUTH_SOCK: sock } });
        assert.equal(r.code, 0, r.stderr);
        await new Promise((res) => setTimeout(res, 200));
        return accepted().slice(before).join('\n');
      };
      // without IdentitiesOnly every agent key is offered: the other key gets in (the control case)
      assert.ok((await probe()).includes(fp(other.priv + '.pub')), 'control: the agent key is offered without IdentitiesOnly');
      sim.sshd.writeSshConfig(['  IdentitiesOnly yes']);
      const log = await probe();
      assert.ok(log.includes(fp(sim.sshd.clientKey + '.pub')), log);
      assert.ok(!log.includes(fp(other.priv + '.pub')), 'an agent key that matches no IdentityFile was offered');
    } finally {
      sim.sshd.writeSshConfig();
      agent.kill();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('attack 11: a forged git-repository record whose path holds `..` fails that item; the rest of the plan is salvaged', async () => {
    await withMode('find-mode', 'on', async () => {
      const { m, dir } = await salvageTarjob('attack11');
      const forged = m.items.filter((i) => i.remotePath.includes('/../'));
      assert.equal(forged.length, 1, `the forged record is in the plan: ${JSON.stringify(m.items.map((i) => [i.kind, i.remotePath]))}`);
      assert.equal(forged[0].kind, 'git-state');
      assert.equal(forged[0].status, 'failed', JSON.stringify(forged[0]));
      assert.match(forged[0].reason ?? '', /\.\./);
      const small = m.items.find((i) => i.remotePath === path.join(sim.home, 'tarjob', 'x.log'));
      assert.equal(small?.status, 'verified', JSON.stringify(small));
      assert.equal(readFileSync(path.join(dir, small!.localPath!), 'utf8'), 'seven!\n');
      for (const f of walk(dir))
        assert.ok(path.resolve(f).startsWith(path.resolve(dir) + path.sep), `written outside the run folder: ${f}`);
    });
  });

  it('keeps the wrappers honest: with no mode file the node behaves normally', () => {
    assert.ok(existsSync(path.join(sim.home, 'evilbin', 'tar')));
    const r = sim.sshd.ssh('command -v tar');
    assert.equal(r.stdout.trim(), path.join(sim.home, 'evilbin', 'tar'));
    execFileSync('true');
  });
});
