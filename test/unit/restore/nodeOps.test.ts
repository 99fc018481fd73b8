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
          sha256: sha('good'),
          mode: '755',
          mtime: 1_600_000_000,
        },
        { tmp: path.join(dir, 'a', '.tmp2'), final: path.join(dir, 'a', 'b'), sha256: sha('other'), mode: '644', mtime: 0 },
        { tmp: path.join(dir, 'a', '.tmp3'), final: path.join(dir, 'a', 'is-a-dir'), sha256: sha('x'), mode: '644', mtime: 0 },
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
