import * as assert from 'node:assert/strict';
import {
  includedByUser,
  protectedReason,
  refusedLink,
  refusedPatch,
  refusedPath,
  resolveIncludes,
  safeMode,
} from '../../../src/core/restore/targets';

const HOME = '/home/new';

describe('restore targets: what restore may write (issue 39)', () => {
  it('refuses paths with empty, "." or ".." components and kernel/system folders (R1, R2, R6)', () => {
    assert.match(refusedPath('/home/old//.ssh/authorized_keys2')!, /empty component/);
    assert.match(refusedPath('/home/old/./x')!, /"\." or "\.\."/);
    assert.match(refusedPath('/home/old/../../etc/x')!, /"\." or "\.\."/);
    assert.match(refusedPath('/proc/self/cwd/.ssh/rc')!, /under \/proc/);
    assert.match(refusedPath('/dev/shm/x')!, /under \/dev/);
    assert.match(refusedPath('/sys/x')!, /under \/sys/);
    assert.match(refusedPath('/etc/cron.d/x')!, /under \/etc/);
    assert.match(refusedPath('/usr/local/bin/x')!, /under \/usr/);
    assert.match(refusedPath('relative/x')!, /not absolute/);
    assert.match(refusedPath('/a/b/')!, /ends with/);
    assert.match(refusedPath('/')!, /empty component/);
    assert.equal(refusedPath('/home/old/job/out/.done_indices'), null);
    assert.equal(refusedPath('/workspace/run 1/new\nline.log'), null);
    assert.equal(refusedPath('/procurement/x'), null, 'a prefix of a name is not the folder');
  });

  it('protects the home dotfiles, any .ssh, start-up files, .git/config and hooks (R1, R2, R3)', () => {
    for (const p of [
      '.ssh/authorized_keys2',
      '.ssh/rc',
      '.bashrc',
      '.bash_profile',
      '.bash_login',
      '.profile',
      '.gitconfig',
      '.config/git/config',
      '.local/lib/python3.11/site-packages/evil.pth',
      '.cache/x',
    ])
      assert.ok(protectedReason(`${HOME}/${p}`, HOME), p);
    assert.ok(protectedReason('/workspace/team/.ssh/authorized_keys', HOME));
    assert.ok(protectedReason('/workspace/other/.bash_profile', HOME));
    assert.ok(protectedReason(`${HOME}/repo/.git/config`, HOME));
    assert.ok(protectedReason(`${HOME}/repo/.git/hooks/pre-commit`, HOME));
    for (const p of [
      'job/gen.py',
      'job/out/.done_indices',
      'repo/.gitignore',
      'venv/lib/python3.11/site-packages/x.pth',
      'repo/.git/objects/ab/cd',
    ])
      assert.equal(protectedReason(`${HOME}/${p}`, HOME), null, p);
  });

  it('--include-dotfiles names paths (~/x, x, /abs, comma-separated) that restore writes anyway', () => {
    const inc = resolveIncludes(['~/.bashrc,.config/myapp', '/workspace/.env', '', '/x//y'], HOME);
    assert.deepEqual(inc, [`${HOME}/.bashrc`, `${HOME}/.config/myapp`, '/workspace/.env']);
    assert.ok(includedByUser(`${HOME}/.config/myapp/settings.json`, inc));
    assert.ok(!includedByUser(`${HOME}/.config/myapp2`, inc));
    assert.ok(!includedByUser(`${HOME}/.ssh/authorized_keys`, inc));
  });

  it('modes keep only permission bits: no setuid, setgid, sticky, group- or world-write (R5)', () => {
    assert.equal(safeMode('4755'), '755');
    assert.equal(safeMode('2755'), '755');
    assert.equal(safeMode('1777'), '755');
    assert.equal(safeMode('0777'), '755');
    assert.equal(safeMode('664'), '644');
    assert.equal(safeMode('750'), '750');
    assert.equal(safeMode('600'), '600');
    assert.equal(safeMode(0o4711), '711');
    assert.equal(safeMode('garbage'), '644');
  });

  it('symlinks that point at the home, above it, a system folder or a protected path are refused (R4, R9)', () => {
    assert.match(refusedLink(`${HOME}/repo/evil`, '../.ssh', HOME)!, /protected/);
    assert.match(refusedLink(`${HOME}/job/gs-client-resume.log`, '../.ssh/authorized_keys', HOME)!, /protected/);
    assert.match(refusedLink(`${HOME}/job/up`, '..', HOME)!, /home or a folder above/);
    assert.match(refusedLink(`${HOME}/job/root`, '/', HOME)!, /home or a folder above/);
    assert.match(refusedLink(`${HOME}/job/etc`, '/etc/cron.d', HOME)!, /system folder/);
    assert.equal(refusedLink(`${HOME}/job/latest`, 'data.txt', HOME), null);
    assert.equal(refusedLink(`${HOME}/job/model`, '/models/llama', HOME), null);
    assert.equal(refusedLink(`${HOME}/job/abs`, `${HOME}/job/data.txt`, HOME), null);
  });

  it('a git diff that creates a link out to ~/.ssh or touches .git/hooks is refused (R4)', () => {
    const evil = [
      'diff --git a/evil b/evil',
      'new file mode 120000',
      'index 0000000..1111111',
      '--- /dev/null',
      '+++ b/evil',
      '@@ -0,0 +1 @@',
      '+../.ssh',
      '\\ No newline at end of file',
      '',
    ].join('\n');
    assert.match(refusedPatch(evil, `${HOME}/repo`, HOME)!, /creates the symlink evil/);
    const hook = 'diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\nnew file mode 100755\n';
    assert.match(refusedPatch(hook, `${HOME}/repo`, HOME)!, /\.git\/hooks/);
    const fine =
      'diff --git a/train.py b/train.py\nindex 1..2 100644\n--- a/train.py\n+++ b/train.py\n@@ -1 +1 @@\n-lr = 1e-4\n+lr = 3e-4\n';
    assert.equal(refusedPatch(fine, `${HOME}/repo`, HOME), null);
    const okLink = 'diff --git a/latest b/latest\nnew file mode 120000\n--- /dev/null\n+++ b/latest\n@@ -0,0 +1 @@\n+data/run3\n';
    assert.equal(refusedPatch(okLink, `${HOME}/repo`, HOME), null);
  });
});

describe('restore reads the run folder as data (issue 39, R7, R8)', () => {
  it('a captured profile with a string basePort (a newline and a command) is refused, naming the field', async () => {
    const { profileGroups } = await import('../../../src/core/flows/restore');
    const evil = [{ modelPath: '/models/m', gpus: [0], basePort: '33005\ntouch /tmp/PWNED' }];
    assert.throws(() => profileGroups(evil), /basePort/);
    assert.throws(() => profileGroups([{ modelPath: '/models/m', gpus: [0], basePort: 30000, name: 'x; rm -rf ~' }]), /name/);
    assert.equal(profileGroups([{ modelPath: '/models/m', gpus: [0], basePort: 30000 }])[0].basePort, 30000);
    assert.deepEqual(profileGroups(undefined), []);
  });

  it("a preview's preflight reads: no venv sourced, no interpreter run; its findings are warnings", async () => {
    const { buildPreflightScript } = await import('../../../src/core/launch/preflight');
    const profile = {
      modelPath: '/models/m',
      gpus: [0],
      basePort: 30000,
      layout: 'per-gpu',
      venv: '~/venv',
      extraArgs: [],
      env: {},
    } as never;
    const preview = buildPreflightScript('N0', profile, true);
    assert.doesNotMatch(preview, /activate|import sglang|-c '/);
    assert.match(preview, /site-packages\/sglang/);
    const full = buildPreflightScript('N0', profile, false);
    assert.match(full, /import sys, sglang/);
    // Run it for real on this machine: a planted venv whose activate and interpreter leave markers.
    const { mkdtempSync, mkdirSync, writeFileSync, chmodSync, existsSync, rmSync } = await import('node:fs');
    const os = await import('node:os');
    const path = await import('node:path');
    const { runOperation } = await import('../../../src/core/remote/operation');
    const { LocalTransport } = await import('../../../src/core/ssh/transport');
    const { preflightOperation } = await import('../../../src/core/launch/preflight');
    const d = mkdtempSync(path.join(os.tmpdir(), 'gs39-pf-'));
    try {
      mkdirSync(path.join(d, 'venv', 'bin'), { recursive: true });
      writeFileSync(path.join(d, 'venv', 'bin', 'activate'), `touch ${d}/ACTIVATED\n`);
      writeFileSync(path.join(d, 'py'), `#!/bin/sh\ntouch ${d}/PY_RAN\n`);
      chmodSync(path.join(d, 'py'), 0o755);
      const p = { ...(profile as object), venv: path.join(d, 'venv'), python: path.join(d, 'py') } as never;
      const r = await runOperation(new LocalTransport(), preflightOperation(p, [0], 'local', { preview: true }));
      assert.equal(existsSync(path.join(d, 'ACTIVATED')), false, 'the venv was not sourced');
      assert.equal(existsSync(path.join(d, 'PY_RAN')), false, 'the interpreter was not run');
      assert.equal(r.refusals.filter((x) => x.check === 'python').length, 0, JSON.stringify(r.refusals));
      assert.match(r.warnings.map((w) => w.message).join('\n'), /no sglang package in .*venv's site-packages .*a preview never runs/);
      await runOperation(new LocalTransport(), preflightOperation(p, [0], 'local', { preview: false }));
      assert.ok(existsSync(path.join(d, 'PY_RAN')), 'a confirmed launch preflight does run it (the test can fail)');
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
