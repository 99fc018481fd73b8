import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { VerifiedWriter, fsProblem } from '../../../../src/core/salvage/transfer/verifiedWriter';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('salvage verified writer (core/salvage/verifiedWriter)', () => {
  let dest: string;
  beforeEach(() => (dest = mkdtempSync(path.join(os.tmpdir(), 'gs-vw-'))));
  afterEach(() => rmSync(dest, { recursive: true, force: true }));

  it('is in place only after a matching hash; close() first keeps the result the same', () => {
    const data = Buffer.from('hello\n');
    const w = new VerifiedWriter(dest, 'files/a/b.txt', true, false);
    w.write(data);
    assert.ok(!existsSync(path.join(dest, 'files/a/b.txt')));
    assert.equal(w.peekSha(), sha(data));
    w.close();
    const r = w.finish(sha(data), data.length);
    assert.equal(r.ok, true);
    assert.equal(r.md5, createHash('md5').update(data).digest('hex'));
    assert.ok(readFileSync(path.join(dest, 'files/a/b.txt')).equals(data));
    assert.ok(!existsSync(w.tmp));
  });

  it('a mismatch or a missing node hash leaves nothing behind', () => {
    for (const expected of [sha(Buffer.from('other')), null]) {
      const w = new VerifiedWriter(dest, 'files/x.txt', false, true);
      w.write(Buffer.from('mine'));
      const r = w.finish(expected, 4);
      assert.equal(r.ok, false);
      assert.match(r.reason ?? '', expected ? /mismatch/ : /did not report/);
      assert.ok(!existsSync(path.join(dest, 'files/x.txt')) && !existsSync(w.tmp));
    }
  });

  it('a path outside the destination is an error result, not a throw, and writes nothing', () => {
    const w = new VerifiedWriter(dest, '../out.txt', false, false);
    assert.ok(w.error);
    w.write(Buffer.from('x'));
    const r = w.finish(sha(Buffer.from('x')), 1);
    assert.equal(r.ok, false);
    assert.match(r.reason ?? '', /outside/);
    assert.ok(!existsSync(path.join(dest, '..', 'out.txt')));
  });

  it('names the local disk problems that stop a salvage', () => {
    const e = (code: string) => Object.assign(new Error(code), { code });
    assert.equal(fsProblem(e('ENOSPC')).fatal, true);
    assert.equal(fsProblem(e('EROFS')).fatal, true);
    assert.equal(fsProblem(e('EIO')).fatal, false);
  });
});
