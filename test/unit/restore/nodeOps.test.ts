import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { runOperation } from '../../../src/core/remote/operation';
import { LocalTransport } from '../../../src/core/ssh/transport';
import {
  extractOperation,
  parseTargetStates,
  safeParentsOperation,
  symlinkOperation,
  targetStateOperation,
  verifyOperation,
  writableOperation,
} from '../../../src/core/restore/nodeOps';
import { writeTar } from '../../../src/core/restore/tarWrite';

const sha = (b: string) => createHash('sha256').update(b).digest('hex');

describe('restore node operations (run by /bin/sh on this machine)', () => {
  let dir: string;
  const t = new LocalTransport();
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs27-ops-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('target states: absent, file (size, mode), symlink, folder — hostile names included', async () => {
    const f = path.join(dir, "q'uote\nnew line");
    writeFileSync(f, 'abc');
    chmodSync(f, 0o640);
    symlinkSync('target with space', path.join(dir, 'link'));
    mkdirSync(path.join(dir, 'sub'));
    const st = await runOperation(t, targetStateOperation([f, path.join(dir, 'link'), path.join(dir, 'sub'), path.join(dir, 'nope')]));
    assert.deepEqual(st, [
      { t: 'file', size: 3, mode: '640' },
      { t: 'link', target: 'target with space' },
      { t: 'other' },
      { t: 'absent' },
    ]);
    assert.throws(() => parseTargetStates(Buffer.from('A\0\0'), 2), /answered for 1 only/);
  });

  it('verify: renames only a matching copy, with its mode; a mismatch is removed; never into a folder', async () => {
    const tar = writeTar([
      { name: path.join(dir, 'a', '.tmp1'), data: Buffer.from('good'), mode: 0o600, mtime: 1_600_000_000 },
      { name: path.join(dir, 'a', '.tmp2'), data: Buffer.from('bad'), mode: 0o600, mtime: 1_600_000_000 },
      { name: path.join(dir, 'a', '.tmp3'), data: Buffer.from('x'), mode: 0o600, mtime: 1_600_000_000 },
    ]);
    await runOperation(t, extractOperation(tar, 'local'));
    mkdirSync(path.join(dir, 'a', 'is-a-dir'));
    const out = await runOperation(
      t,
      verifyOperation([
        {
          tmp: path.join(dir, 'a', '.tmp1'),
          final: path.join(dir, 'a', '-dash $(x)'),
          base: dir,
          sha256: sha('good'),
          mode: '755',
          mtime: 1_600_000_000,
        },
        { tmp: path.join(dir, 'a', '.tmp2'), final: path.join(dir, 'a', 'b'), base: dir, sha256: sha('other'), mode: '644', mtime: 0 },
        { tmp: path.join(dir, 'a', '.tmp3'), final: path.join(dir, 'a', 'is-a-dir'), base: dir, sha256: sha('x'), mode: '644', mtime: 0 },
      ]),
    );
    assert.deepEqual(out[0], { ok: true });
    assert.equal(readFileSync(path.join(dir, 'a', '-dash $(x)'), 'utf8'), 'good');
    assert.equal(statSync(path.join(dir, 'a', '-dash $(x)')).mode & 0o777, 0o755);
    assert.equal(out[1].ok, false);
    assert.equal(existsSync(path.join(dir, 'a', '.tmp2')), false);
    assert.equal(existsSync(path.join(dir, 'a', 'b')), false);
    assert.equal(out[2].ok, false);
    assert.ok(statSync(path.join(dir, 'a', 'is-a-dir')).isDirectory());
  });

  it('writable: the nearest existing folder decides', async () => {
    const ro = path.join(dir, 'ro');
    mkdirSync(ro);
    chmodSync(ro, 0o555);
    const out = await runOperation(t, writableOperation([path.join(dir, 'new', 'deeper'), path.join(ro, 'x')]));
    assert.deepEqual(out[0], { ok: true, at: dir });
    // root writes anywhere: only an unprivileged user sees the read-only folder refused.
    if (process.getuid?.() !== 0) assert.deepEqual(out[1], { ok: false, at: ro });
    chmodSync(ro, 0o755);
  });
});

describe('restore never writes through a symlink (issue 39, R4/R9, on this machine)', () => {
  let dir: string;
  const t = new LocalTransport();
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs39-ops-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('safe parents: a folder below the mapped one that is a link is refused, named; new folders and the base are fine', async () => {
    const base = path.join(dir, 'home');
    mkdirSync(path.join(base, 'repo'), { recursive: true });
    mkdirSync(path.join(dir, 'secret'));
    symlinkSync('../../secret', path.join(base, 'repo', 'evil'));
    symlinkSync(path.join(dir, 'nowhere'), path.join(base, 'dangling'));
    symlinkSync(base, path.join(dir, 'home-link'));
    const out = await runOperation(
      t,
      safeParentsOperation([
        { path: path.join(base, 'repo', 'evil', 'authorized_keys2'), base },
        { path: path.join(base, 'repo', 'new', 'deeper', 'f'), base },
        { path: path.join(base, 'repo', 'f'), base },
        { path: path.join(base, 'dangling', 'x', 'f'), base },
        { path: path.join(dir, 'home-link', 'repo', 'f'), base: path.join(dir, 'home-link') },
        { path: path.join(dir, 'elsewhere', 'f'), base },
      ]),
    );
    assert.equal(out[0].ok, false);
    assert.match((out[0] as { reason: string }).reason, /evil resolves through a symlink/);
    assert.deepEqual(out[1], { ok: true });
    assert.deepEqual(out[2], { ok: true });
    assert.equal(out[3].ok, false);
    assert.match((out[3] as { reason: string }).reason, /dangling/);
    assert.deepEqual(out[4], { ok: true }, 'the mapped folder itself may be a link');
    assert.equal(out[5].ok, false);
    assert.match((out[5] as { reason: string }).reason, /outside/);
  });

  it('verify refuses to rename through a symlinked folder and removes the temporary copy', async () => {
    const base = path.join(dir, 'home');
    mkdirSync(path.join(base, 'repo'), { recursive: true });
    mkdirSync(path.join(dir, 'ssh'));
    const tmp = path.join(base, 'repo', '.gs-tmp');
    writeFileSync(tmp, 'attacker key\n');
    symlinkSync('../../ssh', path.join(base, 'repo', 'evil'));
    const out = await runOperation(
      t,
      verifyOperation([
        { tmp, final: path.join(base, 'repo', 'evil', 'authorized_keys2'), base, sha256: sha('attacker key\n'), mode: '644', mtime: 0 },
      ]),
    );
    assert.equal(out[0].ok, false);
    assert.match((out[0] as { reason: string }).reason, /not written: .*evil resolves through a symlink/);
    assert.equal(existsSync(path.join(dir, 'ssh', 'authorized_keys2')), false);
    assert.equal(existsSync(tmp), false);
  });

  it('symlinks are not made inside a symlinked folder; extract never replaces or follows a planted temporary name', async () => {
    const base = path.join(dir, 'home');
    mkdirSync(base, { recursive: true });
    mkdirSync(path.join(dir, 'ssh'));
    symlinkSync('../ssh', path.join(base, 'evil'));
    const out = await runOperation(t, symlinkOperation([{ link: path.join(base, 'evil', 'rc'), target: '/tmp/x', replace: false, base }]));
    assert.equal(out[0].ok, false);
    assert.equal(existsSync(path.join(dir, 'ssh', 'rc')), false);
    // A link already at the temporary name: tar -k fails, the link's target is untouched.
    writeFileSync(path.join(dir, 'victim'), 'keep me\n');
    symlinkSync(path.join(dir, 'victim'), path.join(base, '.gs-restore-x'));
    const tar = writeTar([{ name: path.join(base, '.gs-restore-x').slice(1), data: Buffer.from('evil'), mode: 0o600, mtime: 0 }]);
    await assert.rejects(runOperation(t, extractOperation(tar, 'local')), /tar exit/);
    assert.equal(readFileSync(path.join(dir, 'victim'), 'utf8'), 'keep me\n');
  });

  it('verify sets a safe mode: setuid and world-write dropped (R5)', async () => {
    const tmp = path.join(dir, '.gs-tmp');
    writeFileSync(tmp, 'bin');
    const out = await runOperation(
      t,
      verifyOperation([{ tmp, final: path.join(dir, 'helper'), base: dir, sha256: sha('bin'), mode: '4777', mtime: 0 }]),
    );
    assert.deepEqual(out[0], { ok: true });
    assert.equal(statSync(path.join(dir, 'helper')).mode & 0o7777, 0o755);
  });
});
