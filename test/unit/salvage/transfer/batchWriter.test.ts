import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BatchOp, BatchWriter, CommittedFile, EndedFile } from '../../../../src/core/salvage/transfer/batchWriter';
import { planted } from '../../../helpers/planted';
import { walk } from '../../../helpers/walk';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const under = (dir: string) => walk(dir).map((p) => path.relative(dir, p));

/** Sends `files` to the writer cut into reads of `readBytes` (a file may span reads, a read may hold many files). */
async function writeAll(bw: BatchWriter, files: Array<{ rel: string; data: Buffer }>, readBytes: number) {
  const ended = new Map<string, EndedFile>();
  const ids = new Map<string, number>();
  let pending = files.length;
  let all!: () => void;
  const done = new Promise<void>((r) => (all = r));
  let ops: BatchOp[] = [];
  let parts: Buffer[] = [];
  let len = 0;
  const flush = () => {
    bw.send(new Uint8Array(Buffer.concat(parts)), ops);
    ops = [];
    parts = [];
    len = 0;
  };
  for (const f of files) {
    const id = bw.open((e) => {
      ended.set(f.rel, e);
      if (--pending === 0) all();
    });
    ids.set(f.rel, id);
    ops.push(['o', id, f.rel]);
    for (let off = 0; off < f.data.length || off === 0; off += readBytes) {
      const piece = f.data.subarray(off, Math.min(f.data.length, off + readBytes));
      ops.push(['d', id, len, piece.length]);
      parts.push(piece);
      len += piece.length;
      if (len >= readBytes) flush();
      if (f.data.length === 0) break;
    }
    ops.push(['e', id]);
  }
  flush();
  await done;
  return { ended, ids };
}

for (const thread of [true, false]) {
  describe(`salvage batch writer (${thread ? 'writer thread' : 'inline'})`, () => {
    let dest: string;
    let bw: BatchWriter;
    beforeEach(() => {
      dest = mkdtempSync(path.join(os.tmpdir(), 'gs-bw-'));
      bw = BatchWriter.start(dest, { md5: true, scanLimit: 1024 * 1024, thread });
    });
    afterEach(async () => {
      await bw.close();
      rmSync(dest, { recursive: true, force: true });
    });

    it(`runs ${thread ? 'in a worker thread' : 'on the calling thread'}`, () => {
      assert.equal(bw.threaded, thread);
    });

    it('writes files byte-identical, kept only when the hash matches; a mismatch leaves nothing behind', async () => {
      // one file replaces an earlier copy: that copy stays whole until the new bytes verify
      mkdirSync(path.join(dest, 'files/d0'), { recursive: true });
      writeFileSync(path.join(dest, 'files/d0/f0.jsonl'), 'the copy verified earlier');
      const files = Array.from({ length: 300 }, (_, i) => ({
        rel: `files/d${i % 7}/f${i}.jsonl`,
        data: Buffer.alloc(i === 5 ? 0 : 100 + ((i * 997) % 20000), i % 251),
      }));
      const { ended, ids } = await writeAll(bw, files, 8192);
      for (const f of files) {
        const e = ended.get(f.rel)!;
        assert.equal(e.failed, false);
        assert.equal(e.bytes, f.data.length);
        assert.equal(e.sha256, sha(f.data));
      }
      // New files are written under their final names (no rename each); the one that replaces a copy is not.
      assert.deepEqual(
        under(dest).filter((p) => p.endsWith('.gs-partial')),
        ['files/d0/f0.jsonl.gs-partial'],
      );
      assert.equal(readFileSync(path.join(dest, 'files/d0/f0.jsonl'), 'utf8'), 'the copy verified earlier');
      const wrong = new Set([files[3].rel, files[200].rel]);
      const rs: CommittedFile[] = await bw.commit(
        files.map((f) => ({ id: ids.get(f.rel)!, sha256: wrong.has(f.rel) ? sha(Buffer.from('other')) : sha(f.data) })),
      );
      assert.equal(rs.length, files.length);
      for (const f of files) {
        const r = rs.find((x) => x.id === ids.get(f.rel))!.result;
        const abs = path.join(dest, f.rel);
        if (wrong.has(f.rel)) {
          assert.equal(r.ok, false);
          assert.match(r.reason ?? '', /SHA-256 mismatch/);
          assert.ok(!existsSync(abs), `${f.rel} must not be in place`);
        } else {
          assert.equal(r.ok, true, r.reason ?? '');
          assert.equal(r.sha256, sha(f.data));
          assert.equal(r.md5, createHash('md5').update(f.data).digest('hex'));
          assert.ok(readFileSync(abs).equals(f.data), f.rel);
        }
      }
      assert.deepEqual(
        under(dest).filter((p) => p.endsWith('.gs-partial')),
        [],
      );
    });

    it('scans the exact bytes for secrets where they are written (text only)', async () => {
      const tok = planted('hf_', 'abcdefghijklmnopqrstuvwxyz0123456789');
      const files = [
        { rel: 'files/a.env', data: Buffer.from(`x=1\nHF_TOKEN=${tok}\n`) },
        { rel: 'files/b.bin', data: Buffer.concat([Buffer.from([0]), Buffer.from(tok)]) },
        { rel: 'files/c.txt', data: Buffer.from('nothing here\n') },
      ];
      const { ids } = await writeAll(bw, files, 5);
      const rs = await bw.commit(files.map((f) => ({ id: ids.get(f.rel)!, sha256: sha(f.data) })));
      const by = (rel: string) => rs.find((r) => r.id === ids.get(rel))!;
      assert.deepEqual(
        by('files/a.env').secrets?.map((h) => h.line),
        [2],
      );
      assert.deepEqual(by('files/b.bin').secrets, []);
      assert.deepEqual(by('files/c.txt').secrets, []);
    });

    it('refuses a path outside the destination (the file fails, nothing is written outside)', async () => {
      const { ended, ids } = await writeAll(bw, [{ rel: '../escape.txt', data: Buffer.from('x') }], 1024);
      assert.equal(ended.get('../escape.txt')!.failed, true);
      const [r] = await bw.commit([{ id: ids.get('../escape.txt')!, sha256: sha(Buffer.from('x')) }]);
      assert.equal(r.result.ok, false);
      assert.match(r.result.reason ?? '', /outside/);
      assert.ok(!existsSync(path.join(dest, '..', 'escape.txt')));
    });

    it('closing discards what was not committed; later commits fail, never verify', async () => {
      const id = bw.open(() => undefined);
      let endedFailed: boolean | null = null;
      const id2 = bw.open((e) => (endedFailed = e.failed));
      bw.send(new Uint8Array(Buffer.from('abc')), [
        ['o', id, 'files/x.txt'],
        ['d', id, 0, 3],
        ['e', id],
        ['o', id2, 'files/half.txt'],
        ['d', id2, 0, 1],
      ]);
      await bw.close();
      if (thread) assert.equal(endedFailed, true, 'a file still open when the thread stopped ends failed');
      const [r] = await bw.commit([{ id, sha256: sha(Buffer.from('abc')) }]);
      assert.equal(r?.result.ok ?? false, false);
      assert.deepEqual(under(dest), []);
    });
  });
}
