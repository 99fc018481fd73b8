/**
 * Salvage into a destination that folds case and refuses characters (issue 41): a real FAT file system (an image
 * made by mkfs.fat, mounted by fusefat through FUSE: it folds case and refuses `:` `?` `*`, control characters and
 * anything beyond ASCII, as Windows and exFAT do) over a REAL OpenSSH sshd. Every file is verified with its own
 * bytes under the local name the manifest records, twins apart; one refused name stops nothing; a restore of that
 * run puts every file back on the node under its exact name.
 */
import assert from 'node:assert/strict';
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { Salvager } from '../../src/core/flows/salvage';
import type { SshTransport } from '../../src/core/ssh/transport';
import { SimNode, startSimNode } from '../helpers/simnode';
import { cli } from '../helpers/cli';

const NAMES = [
  'Log.txt',
  'log.txt',
  'run:2026-12-04.txt',
  'what?.txt',
  'a*b.log',
  'trail.',
  'CON.txt',
  'plain.txt',
  'caf\u00e9.txt',
  'tab\there',
];

const has = (bin: string) => spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0;
const mounted = (dir: string) => readFileSync('/proc/mounts', 'utf8').includes(` ${dir} `);

describe('salvage into a FAT file system under FUSE: twins, refused names, restore (real sshd)', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let work: string;
  let base: string;
  let mnt: string;
  let fuse: ChildProcess | null = null;
  let pool: ConnectionPool;
  let t: SshTransport;

  before(async function () {
    if (process.getuid?.() !== 0 || process.platform !== 'linux') this.skip();
    if (!existsSync('/dev/fuse') || !has('fusefat') || !has('mkfs.fat')) {
      console.log('      (skipped: FUSE, fusefat or mkfs.fat is not available here; .ci/run installs fusefat and dosfstools)');
      this.skip();
    }
    base = mkdtempSync(path.join(os.tmpdir(), 'gs41-fat-'));
    const img = path.join(base, 'fat.img');
    mnt = path.join(base, 'mnt');
    mkdirSync(mnt);
    execFileSync('truncate', ['-s', '64M', img]);
    execFileSync('mkfs.fat', ['-F', '32', img], { stdio: 'ignore' });
    // in the foreground (-f), so that the test owns the process; its chatter goes nowhere
    fuse = spawn('fusefat', ['-f', '-o', 'rw+', img, mnt], { stdio: 'ignore' });
    const end = Date.now() + 15_000;
    while (!mounted(mnt)) {
      if (Date.now() > end) throw new Error('fusefat did not mount the image within 15 s');
      await new Promise((r) => setTimeout(r, 100));
    }
    sim = await startSimNode({
      user: 'gs41fat',
      startServers: false,
      beforeStart: (home) => {
        work = path.join(home, 'names');
        mkdirSync(work, { recursive: true });
        for (const n of NAMES) writeFileSync(path.join(work, n), `bytes of ${n}\n`);
      },
    });
    execFileSync('chown', ['-R', `${sim.user}:${sim.user}`, sim.home]);
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    t = pool.get(listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0]) as SshTransport;
  });
  after(async () => {
    pool?.dispose();
    await sim?.stop();
    if (mnt && mounted(mnt)) spawnSync('fusermount', ['-u', mnt]);
    fuse?.kill();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  let runDir = '';

  it('verifies every file with its own bytes: case twins apart, refused names encoded, nothing stops the others', async () => {
    const s = new Salvager({
      node: 'fat',
      transport: t,
      base: path.join(mnt, 'salvage'),
      roots: [work],
      volumes: [],
      concurrency: 1,
      snapshot: async () => ({ json: {}, markdown: '', summary: 'skipped in this test' }),
    });
    const m = (await s.run())!;
    runDir = s.dir;
    const local = new Set<string>();
    for (const n of NAMES) {
      const it = m.items.find((i) => i.remotePath === `${work}/${n}`);
      assert.ok(it, n);
      assert.equal(it.status, 'verified', `${JSON.stringify(n)}: ${it.reason}`);
      assert.ok(it.localPath, n);
      local.add(it.localPath.toLowerCase());
      assert.equal(readFileSync(path.join(s.dir, it.localPath), 'utf8'), `bytes of ${n}\n`, `${n} holds its own bytes at ${it.localPath}`);
    }
    assert.equal(local.size, NAMES.length, 'every file has its own local entry, case apart');
    const byName = (n: string) => m.items.find((i) => i.remotePath === `${work}/${n}`)!.localPath!;
    // names the destination accepts stay exact; refused ones are encoded, nothing else
    assert.equal(byName('plain.txt'), `files${work}/plain.txt`);
    assert.equal(byName('run:2026-12-04.txt'), `files${work}/run%3A2026-12-04.txt`);
    assert.equal(byName('caf\u00e9.txt'), `files${work}/caf%C3%A9.txt`);
    assert.notEqual(byName('Log.txt').toLowerCase(), byName('log.txt').toLowerCase());
    assert.ok(!m.reasons.includes('failed-items'), m.reasons.join());
    assert.notEqual(m.verdict, 'unsafe', JSON.stringify(m.reasons));
  });

  it('a restore of that run puts every file back on the node under its exact name', async function () {
    if (!runDir) this.skip();
    for (const n of NAMES) rmSync(path.join(work, n));
    const g = ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];
    const r = await cli([...g, 'restore', runDir, 'simnode', '--yes', '--json'], { timeoutMs: 180_000 });
    assert.equal(r.code, 0, r.stderr + r.stdout.slice(0, 3000));
    for (const n of NAMES) assert.equal(readFileSync(path.join(work, n), 'utf8'), `bytes of ${n}\n`, n);
  });
});
