/**
 * Issue 39: a hostile old node (or whoever hands over a run folder) cannot take over the new node through
 * restore. Crafted run folders (the shapes of security-findings-turn4's mkrun.py) are restored onto a real
 * OpenSSH sshd node: `//` and /proc paths, dotfiles and user-site .pth, setuid modes, absolute paths under no
 * root, a git diff that makes a link into ~/.ssh, a restored client log that links to authorized_keys, a
 * launch profile whose basePort carries a command, a dry run whose interpreter is a restored script, a local
 * symlink in the run folder, a newline in a name. Each ends blocked: no marker, no key, no setuid bit.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode, testUser } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';

const OLD = '/old/home';
const KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAttackerAttackerAttackerAttackerAttacker00 attacker\n';

interface Item {
  remotePath: string;
  localPath: string | null;
  kind: string;
  size: number;
  mtime: string;
  sha256: string | null;
  status: 'verified';
  linkTarget?: string;
}

/** A run folder as a hostile old node would leave it. */
class Run {
  readonly items: Item[] = [];
  readonly modes: Record<string, string> = {};
  profile: unknown = null;
  client: unknown = null;
  private n = 0;
  constructor(readonly dir: string) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(path.join(dir, 'files'), { recursive: true });
  }
  file(remote: string, data: string | Buffer, mode?: string): void {
    const local = `files/f${this.n++}`;
    writeFileSync(path.join(this.dir, local), data);
    const b = Buffer.from(data);
    this.items.push({
      remotePath: remote,
      localPath: local,
      kind: 'other',
      size: b.length,
      mtime: new Date().toISOString(),
      sha256: createHash('sha256').update(b).digest('hex'),
      status: 'verified',
    });
    if (mode) this.modes[remote] = mode;
  }
  link(remote: string, target: string): void {
    this.items.push({
      remotePath: remote,
      localPath: null,
      kind: 'symlink',
      size: 0,
      mtime: new Date().toISOString(),
      sha256: null,
      status: 'verified',
      linkTarget: target,
    });
  }
  git(remote: string, patch: string): void {
    const local = `git/r${this.n++}`;
    mkdirSync(path.join(this.dir, local), { recursive: true });
    writeFileSync(path.join(this.dir, local, 'git-diff.patch'), patch);
    this.items.push({
      remotePath: remote,
      localPath: local,
      kind: 'git-state',
      size: 0,
      mtime: new Date().toISOString(),
      sha256: null,
      status: 'verified',
    });
  }
  save(): string {
    const now = new Date().toISOString();
    const m = {
      version: 1,
      node: 'old-node',
      host: 'old',
      startedAt: now,
      finishedAt: now,
      dest: this.dir,
      roots: [{ path: OLD, why: 'home' }],
      items: this.items,
      verdict: 'safe',
      reasons: [],
      writers: [],
      lost: [],
      restore: {
        version: 1,
        capturedAt: now,
        home: OLD,
        profile: this.profile,
        profileErrors: [],
        servers: [],
        client: this.client,
        modes: this.modes,
        problems: [],
      },
    };
    writeFileSync(path.join(this.dir, 'salvage-manifest.json'), JSON.stringify(m, null, 1));
    return this.dir;
  }
}

describe('restore from a hostile run folder (issue 39, real sshd)', function () {
  this.timeout(300_000);
  let node: SimNode;
  let base: string;
  let marks: string;
  const g = () => ['--ssh-config', node.sshd.sshConfigFile, '--known-hosts', node.sshd.knownHostsFile];
  const home = () => node.home;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    node = await startSimNode({
      user: testUser('gs39new'),
      gpuCount: 2,
      startServers: false,
      beforeStart: (h) => {
        writeFileSync(path.join(h, '.bashrc'), '# the NEW node bashrc\n');
        mkdirSync(path.join(h, '.ssh'), { recursive: true, mode: 0o700 });
        writeFileSync(path.join(h, '.ssh', 'authorized_keys'), '# the user own keys\n', { mode: 0o600 });
        mkdirSync(path.join(h, 'repo'));
        execFileSync('git', ['-C', path.join(h, 'repo'), 'init', '-q']);
      },
    });
    base = mkdtempSync(path.join(os.tmpdir(), 'gs39-hostile-'));
    marks = path.join(base, 'marks');
    mkdirSync(marks, { mode: 0o1777 });
    execFileSync('chmod', ['1777', marks]);
  });
  after(async () => {
    await node?.stop();
    if (node) spawnSync('pkill', ['-u', node.user]);
    if (base) rmSync(base, { recursive: true, force: true });
  });

  it('refuses //, /proc, dotfiles, .pth, .gitconfig, paths under no root and local links; drops setuid; one line per name', async () => {
    const r = new Run(path.join(base, 'run1'));
    r.file(`${OLD}/work/README.txt`, 'job\n');
    r.file(`${OLD}//.ssh/authorized_keys2`, KEY);
    r.file('/proc/self/cwd/.ssh/rc', `#!/bin/sh\ntouch ${marks}/SSH_RC\n`);
    r.file(`${OLD}/.bash_profile`, `touch ${marks}/BASH_PROFILE\n`);
    r.file(`${OLD}/.bash_login`, `touch ${marks}/BASH_LOGIN\n`);
    r.file(`${OLD}/.local/lib/python3.11/site-packages/zz.pth`, `import os; open("${marks}/PTH", "a")\n`);
    r.file(`${OLD}/.gitconfig`, `[core]\n\tfsmonitor = "touch ${marks}/GITCONFIG; false"\n`);
    r.file(`${OLD}/tools/helper`, readFileSync('/usr/bin/id'), '4755');
    r.file(`${OLD}/work/run.sh`, '#!/bin/sh\necho run\n', '0777');
    r.file(`${marks}/OUTSIDE_ABS/x.txt`, 'written outside every root\n');
    r.file(`${OLD}/work/evil\nFILES: 0 conflicts\u001b]0;TITLE\u0007.txt`, 'n\n');
    // A local secret reached through a link planted in the run folder.
    const secret = path.join(base, 'local-secret');
    writeFileSync(secret, 'LOCAL SECRET\n', { mode: 0o600 });
    r.file(`${OLD}/work/loot.txt`, 'placeholder');
    const loot = r.items[r.items.length - 1];
    rmSync(path.join(r.dir, loot.localPath!));
    symlinkSync(secret, path.join(r.dir, loot.localPath!));
    const res = await cli([...g(), 'restore', r.save(), 'simnode', '--yes', '--json'], { timeoutMs: 120_000 });
    const j = JSON.parse(res.stdout);
    assert.equal(res.code, 1, res.stderr.slice(-2000));
    const failed = new Map<string, string>(j.files.failed.map((f: { path: string; reason: string }) => [f.path, f.reason]));
    assert.match(failed.get(`${OLD}//.ssh/authorized_keys2`) ?? '', /empty component/);
    assert.match(failed.get('/proc/self/cwd/.ssh/rc') ?? '', /under \/proc/);
    assert.match(failed.get(`${marks}/OUTSIDE_ABS/x.txt`) ?? '', /none of the run's recorded folders/);
    assert.match(failed.get(`${OLD}/work/loot.txt`) ?? '', /symlink in the run folder/);
    for (const p of ['.bash_profile', '.bash_login', '.gitconfig'])
      assert.ok(j.files.kept.includes(`${home()}/${p}`), `${p} kept: ${JSON.stringify(j.files.kept)}`);
    assert.ok(
      j.files.keptReasons.some((k: { path: string; reason: string }) => /site-packages\/zz\.pth$/.test(k.path) && /dotfile/.test(k.reason)),
    );
    // Nothing of it on the new node.
    assert.equal(existsSync(path.join(home(), '.ssh', 'authorized_keys2')), false);
    assert.equal(existsSync(path.join(home(), '.ssh', 'rc')), false);
    for (const p of ['.bash_profile', '.bash_login', '.gitconfig', '.local']) assert.equal(existsSync(path.join(home(), p)), false, p);
    assert.equal(existsSync(path.join(marks, 'OUTSIDE_ABS')), false);
    assert.equal(existsSync(path.join(home(), 'work', 'loot.txt')), false);
    assert.equal(readFileSync(path.join(home(), '.bashrc'), 'utf8'), '# the NEW node bashrc\n');
    // The work itself was restored, with safe modes.
    assert.equal(readFileSync(path.join(home(), 'work', 'README.txt'), 'utf8'), 'job\n');
    assert.equal(statSync(path.join(home(), 'tools', 'helper')).mode & 0o7777, 0o755);
    assert.equal(statSync(path.join(home(), 'work', 'run.sh')).mode & 0o7777, 0o755);
    // A login and the product's own probe run nothing planted.
    node.sshd.ssh('bash -lc true');
    await cli([...g(), 'probe', 'simnode', '--json'], { timeoutMs: 60_000 });
    assert.deepEqual(readdirMarks(marks), []);
    // The text form: a name's newline and escapes are shown escaped, on the item's own line.
    const text = await cli([...g(), 'restore', r.dir, 'simnode', '--yes'], { timeoutMs: 120_000 });
    assert.doesNotMatch(text.stdout, /^FILES: 0 conflicts/m);
    assert.doesNotMatch(text.stdout, /\u001b/);
  });

  it('a git diff that makes a link into ~/.ssh is not applied, and no file is written through a link (R4)', async () => {
    const r = new Run(path.join(base, 'run2'));
    r.git(
      `${OLD}/repo`,
      'diff --git a/evil b/evil\nnew file mode 120000\nindex 0000000..1111111\n--- /dev/null\n+++ b/evil\n@@ -0,0 +1 @@\n+../.ssh\n\\ No newline at end of file\n',
    );
    r.file(`${OLD}/repo/evil/authorized_keys2`, KEY);
    // The same link planted by hand (an earlier tool): the file under it is refused on the node.
    symlinkSync('../.ssh', path.join(home(), 'repo', 'evil2'));
    r.file(`${OLD}/repo/evil2/authorized_keys2`, KEY);
    const res = await cli([...g(), 'restore', r.save(), 'simnode', '--yes', '--json'], { timeoutMs: 120_000 });
    const j = JSON.parse(res.stdout);
    assert.notEqual(res.code, 0);
    const gitItem = j.files.git.find((x: { path: string }) => x.path === `${home()}/repo`);
    assert.equal(gitItem?.state, 'failed', JSON.stringify(j.files.git));
    assert.match(gitItem.reason, /creates the symlink evil/);
    // The diff's link was not made (the file item under it lands in a real folder, inside the repository).
    assert.equal(lstatSync(path.join(home(), 'repo', 'evil')).isSymbolicLink(), false);
    const f2 = j.files.failed.find((x: { path: string }) => x.path === `${home()}/repo/evil2/authorized_keys2`);
    assert.match(f2?.reason ?? '', /resolves through a symlink/);
    assert.equal(existsSync(path.join(home(), '.ssh', 'authorized_keys2')), false);
  });

  it('--resume-client never follows a restored log link (R9); the link itself is refused', async () => {
    const r = new Run(path.join(base, 'run3'));
    r.link(`${OLD}/work/gs-client-resume.log`, '../.ssh/authorized_keys');
    r.file(`${OLD}/work/gen.py`, `print(${JSON.stringify(KEY.trim())})\n`);
    r.client = { pid: 4242, argv: ['python3', 'gen.py'], cwd: `${OLD}/work`, envNames: ['PATH'] };
    const keysBefore = readFileSync(path.join(home(), '.ssh', 'authorized_keys'), 'utf8');
    const res = await cli([...g(), 'restore', r.save(), 'simnode', '--yes', '--json'], { timeoutMs: 120_000 });
    const j = JSON.parse(res.stdout);
    assert.match(j.files.failed.find((x: { path: string }) => x.path === `${OLD}/work/gs-client-resume.log`)?.reason ?? '', /protected/);
    // The same link planted on the node by hand: the client's log is a new file, the link is not followed.
    symlinkSync('../.ssh/authorized_keys', path.join(home(), 'work', 'gs-client-resume.log'));
    const r2 = new Run(path.join(base, 'run3b'));
    r2.file(`${OLD}/work/gen.py`, `print(${JSON.stringify(KEY.trim())})\n`);
    r2.client = { pid: 4242, argv: ['python3', 'gen.py'], cwd: `${OLD}/work`, envNames: ['PATH'] };
    const res2 = await cli([...g(), 'restore', r2.save(), 'simnode', '--yes', '--json', '--resume-client'], { timeoutMs: 120_000 });
    const j2 = JSON.parse(res2.stdout);
    assert.equal(res2.code, 0, res2.stderr.slice(-2000) + JSON.stringify(j2.files));
    assert.equal(j2.client.started, true, JSON.stringify(j2.client));
    assert.match(j2.client.log, /gs-client-resume-\w+\.log$/);
    await waitFor(
      'the client to write its log',
      () => existsSync(j2.client.log) && readFileSync(j2.client.log, 'utf8').includes('attacker'),
      15_000,
    );
    assert.equal(readFileSync(path.join(home(), '.ssh', 'authorized_keys'), 'utf8'), keysBefore);
    assert.ok(lstatSync(path.join(home(), 'work', 'gs-client-resume.log')).isSymbolicLink());
    assert.ok(j.files.uploaded >= 1);
  });

  it('a profile whose basePort carries a command is refused at --launch (R7); a dry run runs nothing of the node (R8)', async () => {
    const r = new Run(path.join(base, 'run4'));
    r.file(`${OLD}/models/tiny/config.json`, '{}\n');
    r.profile = [
      { name: 'restore', modelPath: `${OLD}/models/tiny`, gpus: [0], layout: 'single', basePort: `33005\ntouch ${marks}/LAUNCH_INJECT #` },
    ];
    const res = await cli([...g(), 'restore', r.save(), 'simnode', '--yes', '--launch', '--dry-run'], { timeoutMs: 120_000 });
    assert.notEqual(res.code, 0);
    assert.match(res.stderr, /basePort/);
    const r2 = new Run(path.join(base, 'run5'));
    r2.file(`${OLD}/models/tiny/config.json`, '{}\n');
    r2.file(`${OLD}/work/py`, `#!/bin/sh\ntouch ${marks}/DRYRUN_EXEC\nexec python3 "$@"\n`, '0755');
    r2.profile = [
      {
        name: 'restore',
        modelPath: `${OLD}/models/tiny`,
        gpus: [0],
        layout: 'single',
        basePort: 33006,
        python: `${OLD}/work/py`,
        workDir: `${OLD}/work`,
      },
    ];
    r2.save();
    // Restore the files (the interpreter lands on the node), then preview the launch.
    const files = await cli([...g(), 'restore', r2.dir, 'simnode', '--yes', '--json'], { timeoutMs: 120_000 });
    assert.equal(files.code, 0, files.stderr.slice(-2000));
    assert.ok(existsSync(path.join(home(), 'work', 'py')));
    const dry = await cli([...g(), 'restore', r2.dir, 'simnode', '--launch', '--dry-run', '--json'], { timeoutMs: 120_000 });
    assert.equal(dry.code, 0, dry.stderr.slice(-2000));
    assert.equal(JSON.parse(dry.stdout).launch.outcome, 'dry-run');
    assert.deepEqual(readdirMarks(marks), []);
  });

  it('--include-dotfiles restores a named dotfile, and only that one', async () => {
    const r = new Run(path.join(base, `run6-${randomBytes(3).toString('hex')}`));
    r.file(`${OLD}/.tmux.conf`, 'set -g mouse on\n');
    r.file(`${OLD}/.bash_profile`, `touch ${marks}/BASH_PROFILE\n`);
    const res = await cli([...g(), 'restore', r.save(), 'simnode', '--yes', '--json', '--include-dotfiles', '~/.tmux.conf'], {
      timeoutMs: 120_000,
    });
    assert.equal(res.code, 0, res.stderr.slice(-2000));
    assert.equal(readFileSync(path.join(home(), '.tmux.conf'), 'utf8'), 'set -g mouse on\n');
    assert.equal(existsSync(path.join(home(), '.bash_profile')), false);
  });
});

function readdirMarks(dir: string): string[] {
  return execFileSync('ls', ['-A', dir]).toString().split('\n').filter(Boolean);
}
