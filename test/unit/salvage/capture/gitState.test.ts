/** A repository's git state for salvage (core/salvage/gitState), run for real with git under /bin/sh. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { gitStateOperation } from '../../../../src/core/salvage/capture/gitState';
import { runOperation } from '../../../../src/core/remote/operation';
import { LocalTransport } from '../../../../src/core/ssh/transport';
import { GpuSessionsError } from '../../../../src/core/util/errors';
import { ExecFakeTransport, execResult } from '../../../helpers/fakeTransport';

describe('salvage git state (core/salvage/gitState)', function () {
  let dir: string;
  let repo: string;
  const git = (...a: string[]) => {
    const r = spawnSync('git', ['-C', repo, '-c', 'user.email=t@example.invalid', '-c', 'user.name=t', ...a], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  };
  before(function () {
    if (spawnSync('git', ['--version']).status !== 0) this.skip();
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-git-'));
    repo = path.join(dir, "my repo's; $(touch pwned)");
    mkdirSync(repo);
    git('init', '-q', '-b', 'main');
    writeFileSync(path.join(repo, 'train.py'), 'lr = 1e-4\n');
    git('add', 'train.py');
    git('commit', '-q', '-m', 'first');
    git('remote', 'add', 'origin', 'https://example.invalid/r.git');
    writeFileSync(path.join(repo, 'train.py'), 'lr = 3e-4\n');
    // a file whose name prints a marker look-alike in `git status`
    writeFileSync(path.join(repo, '@@GS0123456789abcdef:end@@'), '');
  });
  after(() => dir && rmSync(dir, { recursive: true, force: true }));

  it('status (branch, HEAD, porcelain, remotes) and the diff of tracked changes, from a path that needs quoting', async () => {
    const g = await runOperation(new LocalTransport(), gitStateOperation(repo));
    assert.ok(g.ok, JSON.stringify(g));
    assert.match(g.status, /^# git status \(main [0-9a-f]{40}\)\n## main\n M train\.py\n\?\? @@GS0123456789abcdef:end@@\n/);
    assert.match(g.status, /# git remote -v\norigin\thttps:\/\/example\.invalid\/r\.git \(fetch\)/);
    assert.match(g.diff, /^diff --git a\/train\.py b\/train\.py\n[^]*-lr = 1e-4\n\+lr = 3e-4\n$/);
    assert.equal(spawnSync('ls', [path.join(dir, 'pwned')]).status !== 0, true, 'the path ran nothing');
  });

  it('a folder that is gone: not ok, with the reason (exit 3), nothing thrown', async () => {
    const g = await runOperation(new LocalTransport(), gitStateOperation(path.join(dir, 'missing')));
    assert.deepEqual(g, { ok: false, reason: 'cannot enter the repository' });
  });

  it('a run cut short (killed, or exit 0 without its end marker) is a typed remote-incomplete error', async () => {
    const op = () => gitStateOperation('/r');
    const killed = new ExecFakeTransport(() => execResult('\n@@GSx:status@@\n# git', { code: null, signal: 'KILL' }));
    const e1 = await runOperation(killed, op()).catch((x) => x);
    assert.ok(e1 instanceof GpuSessionsError, String(e1));
    assert.equal(e1.code, 'remote-incomplete');
    assert.match(e1.message, /Reading git state of \/r did not complete/);
    const cut = new ExecFakeTransport(() => execResult('partial'));
    assert.equal((await runOperation(cut, op()).catch((x) => x)).code, 'remote-incomplete');
  });
});
