import * as assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BatchOp, BatchWriter, EndedFile } from '../../../../src/core/salvage/transfer/batchWriter';
import { WriterPool, writerCount } from '../../../../src/core/salvage/transfer/writerPool';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A stand-in writer: only what the pool looks at. */
function fakeWriter(idle: number) {
  const w = { alive: true, closed: false, idleMs: () => idle, close: async () => void ((w.closed = true), (w.alive = false)) };
  return w;
}

/** Every file in one send, then their ends awaited. */
async function writeFiles(
  bw: BatchWriter,
  files: Array<{ rel: string; data: Buffer }>,
): Promise<Map<string, { id: number; e: EndedFile }>> {
  const out = new Map<string, { id: number; e: EndedFile }>();
  const ops: BatchOp[] = [];
  let len = 0;
  const waits = files.map(
    (f) =>
      new Promise<void>((r) => {
        const id = bw.open((e) => (out.set(f.rel, { id, e }), r()));
        ops.push(['o', id, f.rel], ['d', id, len, f.data.length], ['e', id]);
        len += f.data.length;
      }),
  );
  bw.send(new Uint8Array(Buffer.concat(files.map((f) => f.data))), ops);
  await Promise.all(waits);
  return out;
}

describe('salvage writer pool', () => {
  it('uses as many writer threads as parallel batches, within the cores and at most 4', () => {
    assert.equal(writerCount(3, 2, undefined), 2);
    assert.equal(writerCount(3, 16, undefined), 3);
    assert.equal(writerCount(1, 16, undefined), 1);
    assert.equal(writerCount(8, 16, undefined), 4);
    assert.equal(writerCount(3, 1, undefined), 1);
    assert.equal(writerCount(3, 16, '1'), 1, 'GS_SALVAGE_WRITERS sets it (an A/B of the bench)');
    assert.equal(writerCount(3, 16, 'lots'), 3, 'a value that is not a number is ignored');
  });

  it('gives a batch the least busy writer, starts one more only while all are busy, and replaces a dead one', async () => {
    const made: Array<ReturnType<typeof fakeWriter>> = [];
    const pool = new WriterPool(() => {
      const w = fakeWriter(10 * (made.length + 1));
      made.push(w);
      return w as unknown as BatchWriter;
    });
    const a = pool.take(2);
    const b = pool.take(2);
    assert.notEqual(a.writer, b.writer, 'a second batch while the first runs: a second thread');
    const c = pool.take(2);
    assert.equal(made.length, 2, 'never more threads than asked');
    a.release();
    const d = pool.take(2);
    assert.equal(d.writer, a.writer, 'the writer with fewer batches now');
    void c;
    made[1].alive = false;
    b.release();
    const e = pool.take(2);
    assert.equal(made.length, 3, 'the dead writer was replaced');
    assert.equal(e.writer, made[2] as unknown as BatchWriter);
    assert.equal(pool.size, 2);
    assert.equal(await pool.close(), 10 + 20 + 30, 'idle time of every thread, the replaced one included');
    assert.ok(made[0].closed && made[2].closed);
    assert.equal(pool.size, 0);
  });

  it('two writer threads create the same new folders at once and both write every file', async () => {
    const dest = mkdtempSync(path.join(os.tmpdir(), 'gs-pool-'));
    const pool = new WriterPool(() => BatchWriter.start(dest, { md5: false, scanLimit: 0 }));
    try {
      const a = pool.take(2);
      const b = pool.take(2);
      assert.notEqual(a.writer, b.writer);
      const files = (tag: string) =>
        Array.from({ length: 500 }, (_, i) => ({ rel: `files/deep/d${i}/x/${tag}${i}.txt`, data: Buffer.from(`${tag} ${i}\n`) }));
      const fa = files('a');
      const fb = files('b');
      const [ra, rb] = await Promise.all([writeFiles(a.writer, fa), writeFiles(b.writer, fb)]);
      for (const [w, fs, r] of [
        [a.writer, fa, ra],
        [b.writer, fb, rb],
      ] as const) {
        const committed = await w.commit(fs.map((f) => ({ id: r.get(f.rel)!.id, sha256: sha(f.data) })));
        assert.equal(committed.filter((x) => x.result.ok).length, fs.length, committed.find((x) => !x.result.ok)?.result.reason ?? '');
      }
      for (const f of [...fa, ...fb]) assert.deepEqual(readFileSync(path.join(dest, f.rel)), f.data);
    } finally {
      await pool.close();
      rmSync(dest, { recursive: true, force: true });
    }
  });
});
