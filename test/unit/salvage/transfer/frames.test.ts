import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FrameReader, FrameStreamError } from '../../../../src/core/salvage/transfer/frames';
import { nodeScript } from '../../../../src/core/util/nodeScripts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

interface Got {
  files: Map<number, { mode: number; size: number; data: Buffer; sha?: string; bytes?: number; aborted?: string }>;
  notSent: Map<number, string>;
}

/** Parses `stream` pushed in pieces of `piece` bytes. */
function read(stream: Buffer, files: number, piece = stream.length, want = (_i: number) => true): Got & { finished: boolean } {
  const got: Got = { files: new Map(), notSent: new Map() };
  let cur: number | null = null;
  const parts = new Map<number, Buffer[]>();
  const r = new FrameReader(files, {
    entry: (e) => {
      cur = e.index;
      parts.set(e.index, []);
      got.files.set(e.index, { mode: e.mode, size: e.size, data: Buffer.alloc(0) });
      return want(e.index);
    },
    data: (b) => parts.get(cur!)!.push(Buffer.from(b)),
    end: (s, bytes) => Object.assign(got.files.get(cur!)!, { sha: s, bytes, data: Buffer.concat(parts.get(cur!)!) }),
    aborted: (why) => (got.files.get(cur!)!.aborted = why),
    notSent: (i, why) => got.notSent.set(i, why),
  });
  for (let o = 0; o < stream.length; o += piece) r.push(stream.subarray(o, o + piece));
  return { ...got, finished: r.finished };
}

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
};
const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b;
};
const F = (i: number, size: number) => Buffer.concat([Buffer.from('F'), u32(i), u32(0o644), u64(size)]);
const D = (b: Buffer) => Buffer.concat([Buffer.from('D'), u32(b.length), b]);
const E = (b: Buffer) => Buffer.concat([Buffer.from('E'), createHash('sha256').update(b).digest(), u64(b.length)]);

describe("salvage: the node's single-pass reader (frames.py → FrameReader)", () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-frames-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads each file once: its bytes, mode and the SHA-256 of exactly what it sent; says why the others were not sent', () => {
    const big = Buffer.alloc(300 * 1024 + 13, 7).fill('xyz', 1000);
    const files: Array<[string, Buffer | 'symlink' | 'dir' | 'missing' | 'fifo']> = [
      ['a.jsonl', Buffer.from('{"i":1}\n')],
      ['empty', Buffer.alloc(0)],
      ['big.bin', big],
      ['name with\nnewline \\ and ünïcode', Buffer.from('odd name\n')],
      ['link', 'symlink'],
      ['sub', 'dir'],
      ['gone', 'missing'],
      ['pipe', 'fifo'],
      [Buffer.from([0x66, 0xff, 0xfe]).toString('latin1'), Buffer.from('latin1 name')],
    ];
    const names: Buffer[] = [];
    for (const [n, c] of files) {
      const p = path.join(dir, n);
      names.push(Buffer.from(p, n.startsWith('f\u00ff') ? 'latin1' : 'utf8'));
      if (c === 'symlink') symlinkSync('a.jsonl', p);
      else if (c === 'dir') mkdirSync(p);
      else if (c === 'fifo') execFileSync('mkfifo', [p]);
      else if (Buffer.isBuffer(c)) writeFileSync(names[names.length - 1], c);
    }
    const list = Buffer.concat(names.flatMap((n) => [n, Buffer.from([0])]));
    const out = execFileSync('python3', ['-c', nodeScript('salvage/transfer/frames.py')], { input: list, maxBuffer: 64 << 20 });
    for (const piece of [out.length, 4096, 7, 1]) {
      const got = read(out, names.length, piece);
      assert.equal(got.finished, true);
      for (const i of [0, 1, 2, 3, 8]) {
        const want = files[i][1] as Buffer;
        const f = got.files.get(i)!;
        assert.ok(f, `file ${i} sent`);
        assert.deepEqual(f.data, i === 8 ? Buffer.from('latin1 name') : want);
        assert.equal(f.sha, sha(f.data));
        assert.equal(f.bytes, f.data.length);
        assert.equal(f.size, f.data.length);
        assert.equal(f.mode, 0o644);
      }
      assert.equal(got.notSent.get(4), 'became a symlink (→ a.jsonl); not followed');
      assert.equal(got.notSent.get(5), 'not a regular file any more');
      assert.equal(got.notSent.get(6), 'vanished from the node');
      assert.equal(got.notSent.get(7), 'not a regular file any more', 'a FIFO is refused, not waited on');
      assert.equal(got.files.size + got.notSent.size, names.length);
    }
  });

  it('passes a refused file over and reads on', () => {
    const a = Buffer.from('first');
    const b = Buffer.from('second');
    const got = read(Buffer.concat([F(0, 5), D(a), E(a), F(1, 6), D(b), E(b), Buffer.from('Z')]), 2, 3, (i) => i === 1);
    assert.deepEqual(got.files.get(1)!.data, b);
    assert.equal(got.files.get(0)!.sha, undefined, 'no end for a refused file');
  });

  it("refuses a hostile node's stream: what was not asked, bytes past what was announced, records out of place", () => {
    const x = Buffer.from('12345');
    const bad: Array<[string, Buffer, RegExp]> = [
      ['an index not asked for', F(2, 5), /file number 2; only 2 were asked for/],
      ['more bytes than announced', Buffer.concat([F(0, 3), D(x)]), /more than the 3 B it announced/],
      ['bytes outside a file', D(x), /bytes outside a file/],
      ['an end that lies about the count', Buffer.concat([F(0, 5), D(x), Buffer.from('E'), Buffer.alloc(32), u64(9)]), /said it sent 9 B/],
      ['a file inside a file', Buffer.concat([F(0, 5), F(1, 5)]), /left open/],
      ['an unknown record', Buffer.from('Q'), /unknown record "Q"/],
      ['bytes after the end', Buffer.from('ZF'), /after the end/],
      ['a size past 2^53', Buffer.concat([Buffer.from('F'), u32(0), u32(0), Buffer.alloc(8, 0xff)]), /announced a file of/],
    ];
    for (const [what, stream, msg] of bad)
      assert.throws(
        () => read(stream, 2),
        (e: unknown) => e instanceof FrameStreamError && msg.test(e.message),
        what,
      );
  });

  it('a file the node could not read to its end is reported aborted, with its reason', () => {
    const a = Buffer.from('part');
    const why = Buffer.from('read failed on the node: Input/output error');
    const abort = Buffer.concat([Buffer.from('A'), Buffer.from([0, why.length]), why]);
    const got = read(Buffer.concat([F(0, 10), D(a), abort, Buffer.from('Z')]), 1, 2);
    assert.equal(got.files.get(0)!.aborted, why.toString());
    assert.equal(got.finished, true);
  });
});
