import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { META_MAX_BYTES, TarEntry, TarReader, TarStreamError } from '../../../src/core/remote/tar';
import { pad512, paxRecord, tarHeader } from '../../helpers/tarCraft';

function reader(): { r: TarReader; entries: Array<{ path: string; size: number }>; bytes: () => number } {
  const entries: Array<{ path: string; size: number }> = [];
  let bytes = 0;
  const r = new TarReader({
    entry: (e) => (entries.push({ path: e.path, size: e.size }), true),
    data: (b) => (bytes += b.length),
    end: () => undefined,
  });
  return { r, entries, bytes: () => bytes };
}

describe('tar reader bounds (a hostile node)', () => {
  it('refuses a pax header that claims 8 GiB before buffering any of it', () => {
    const { r } = reader();
    const before = process.memoryUsage().rss;
    assert.throws(() => r.push(tarHeader({ name: 'PaxHeaders/x', type: 'x', size: 8n * 1024n ** 3n })), TarStreamError);
    assert.ok(process.memoryUsage().rss - before < 64 * 1024 * 1024);
  });

  for (const type of ['L', 'K', 'g', 'x']) {
    it(`caps '${type}' meta entries at ${META_MAX_BYTES} B`, () => {
      const { r } = reader();
      assert.throws(
        () => r.push(tarHeader({ name: '././@LongLink', type, size: META_MAX_BYTES + 1 })),
        (e: unknown) => e instanceof TarStreamError && /exceeds the 1048576 B limit/.test(e.message),
      );
      // exactly at the cap is still accepted
      const ok = reader();
      const name = Buffer.alloc(META_MAX_BYTES, 0x61);
      name[name.length - 1] = 0;
      ok.r.push(Buffer.concat([tarHeader({ name: '././@LongLink', type, size: META_MAX_BYTES }), pad512(name)]));
    });
  }

  it('refuses a pax size that is not a plain integer', () => {
    const { r } = reader();
    const pax = Buffer.from(paxRecord('size', '1e400'));
    assert.throws(
      () =>
        r.push(
          Buffer.concat([
            tarHeader({ name: 'PaxHeaders/a', type: 'x', size: pax.length }),
            pad512(pax),
            tarHeader({ name: 'a', type: '0', size: 1 }),
          ]),
        ),
      /pax size/,
    );
  });

  it('reports a base-256 size beyond 2^53 as corruption', () => {
    const { r } = reader();
    assert.throws(() => r.push(tarHeader({ name: 'big', type: '0', size: 2n ** 80n })), /entry size/);
  });

  it('a pax size of 1 TiB is handed to the sink as the claimed size; data is streamed, not buffered', () => {
    const { r, entries, bytes } = reader();
    const pax = Buffer.from(paxRecord('size', String(1024 ** 4)) + paxRecord('path', '/home/u/x.log'));
    r.push(
      Buffer.concat([
        tarHeader({ name: 'PaxHeaders/a', type: 'x', size: pax.length }),
        pad512(pax),
        tarHeader({ name: 'a', type: '0', size: 7 }),
      ]),
    );
    assert.deepEqual(entries, [{ path: '/home/u/x.log', size: 1024 ** 4 }]);
    const chunk = Buffer.alloc(1024 * 1024);
    for (let i = 0; i < 64; i++) r.push(chunk);
    assert.equal(bytes(), 64 * 1024 * 1024);
  });
});

describe('tar reader (GNU tar streams)', () => {
  it('reads GNU tar streams: long names, unicode, newlines, empty files, many entries', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-tar-'));
    try {
      const names = ['plain.log', 'x'.repeat(180) + '.log', 'ünï 日本.txt', 'new\nline.log', 'empty.log', '-dash.sh', `q'"$(x).log`];
      const contents = names.map((n, i) => (n === 'empty.log' ? '' : `${i}:${n}\n`.repeat(50 + i * 100)));
      names.forEach((n, i) => writeFileSync(path.join(dir, n), contents[i]));
      const list = names.map((n) => path.join(dir, n)).join('\0') + '\0';
      const r = spawnSync('tar', ['--null', '--verbatim-files-from', '--no-recursion', '-P', '-T', '-', '-cf', '-'], {
        input: list,
        maxBuffer: 64 * 1024 * 1024,
      });
      assert.equal(r.status, 0, r.stderr.toString());
      const got = new Map<string, string>();
      let cur: TarEntry | null = null;
      let buf: Buffer[] = [];
      const reader = new TarReader({
        entry: (e) => ((cur = e), (buf = []), true),
        data: (b) => buf.push(Buffer.from(b)),
        end: () => got.set(cur!.path, Buffer.concat(buf).toString()),
      });
      // Feed in awkward chunk sizes.
      for (let i = 0; i < r.stdout.length; i += 333) reader.push(r.stdout.subarray(i, i + 333));
      assert.ok(reader.finished);
      names.forEach((n, i) => assert.equal(got.get(path.join(dir, n)), contents[i], n));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects a corrupted tar header', () => {
    const bad = Buffer.alloc(1024, 0x41);
    const reader = new TarReader({ entry: () => true, data: () => undefined, end: () => undefined });
    assert.throws(() => reader.push(bad), /corrupted/);
  });
});
