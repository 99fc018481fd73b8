import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { VerifiedWriter, fsProblem } from '../../../../src/core/salvage/transfer/verifiedWriter';
import { waitFor } from '../../../helpers/wait';

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

  it('a durable file starts flushing to disk while it is written, on a descriptor of its own that it closes', async function () {
    if (process.platform !== 'linux') this.skip(); // reads /proc/self/fd
    const fdsOn = (f: string) =>
      readdirSync('/proc/self/fd').filter((n) => {
        try {
          return readlinkSync(`/proc/self/fd/${n}`) === f;
        } catch {
          return false;
        }
      }).length;
    const chunk = (i: number) => Buffer.alloc(1024 * 1024, i % 251);
    const all: Buffer[] = [];
    const w = new VerifiedWriter(dest, 'weights/model.bin', false, true);
    for (let i = 0; i < 31; i++) w.write((all[i] = chunk(i)));
    assert.equal(fdsOn(w.tmp), 1, 'under 32 MiB: only the writing descriptor');
    for (let i = 31; i < 40; i++) w.write((all[i] = chunk(i)));
    assert.equal(fdsOn(w.tmp), 2, 'past 32 MiB: a flush runs on a second descriptor (its callback has not run yet)');
    const data = Buffer.concat(all);
    const r = w.finish(sha(data), data.length);
    assert.equal(r.ok, true);
    assert.ok(readFileSync(path.join(dest, 'weights/model.bin')).equals(data));
    await waitFor('the flush descriptor to close', () => fdsOn(path.join(dest, 'weights/model.bin')) === 0, 5000, 10);
  });

  it('names the local disk problems that stop a salvage', () => {
    const e = (code: string) => Object.assign(new Error(code), { code });
    assert.equal(fsProblem(e('ENOSPC')).fatal, true);
    assert.equal(fsProblem(e('EROFS')).fatal, true);
    assert.equal(fsProblem(e('EIO')).fatal, false);
  });
});
