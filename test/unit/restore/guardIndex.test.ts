import * as assert from 'node:assert/strict';
import { parseGuardIndex, refusedEntry } from '../../../src/core/restore/guardIndex';

const SHA = 'a'.repeat(64);
const ok = (p: string, key = 'run/' + p.slice(1)) => ({ path: p, key, size: 3, mtime: 1.5, sha256: SHA, mode: '755' });
const doc = (files: unknown[], extra: Record<string, unknown> = {}) =>
  JSON.stringify({ format: 'gpu-sessions-guard-index', version: 1, home: '/home/u', roots: ['/home/u/job'], files, ...extra });

describe("restore --from-guard: the guard's S3 index (issue 47)", () => {
  it('takes an entry whose key is its own path under the prefix, byte-exact name and mode', () => {
    const name = '/home/u/job/out/a b\té.jsonl';
    const ix = parseGuardIndex(doc([ok(name)]), 'run/');
    assert.deepEqual(ix.refused, []);
    assert.equal(ix.entries.length, 1);
    assert.equal(ix.entries[0].path, name);
    assert.equal(ix.entries[0].key, 'run/home/u/job/out/a b\té.jsonl');
    assert.equal(ix.entries[0].mode, '755');
    assert.equal(ix.home, '/home/u');
    assert.deepEqual(ix.roots, ['/home/u/job']);
    // the whole bucket (no prefix)
    assert.equal(refusedEntry(ok('/home/u/x', 'home/u/x'), ''), null);
  });

  it('refuses hostile and malformed entries one by one, named, and keeps the rest', () => {
    const bad = [
      ok('/home/u/job/../../../etc/passwd'),
      ok('/home/u/job/x', 'run/../elsewhere/x'),
      ok('/home/u/job/y', 'other/home/u/job/y'),
      ok('/proc/self/environ'),
      ok('relative/path', 'run/relative/path'),
      ok('/home/u/job/nul\0x'),
      ok('/home/u/job/\udcff-not-utf8'),
      { ...ok('/home/u/job/z'), sha256: 'nope' },
      { ...ok('/home/u/job/w'), size: -1 },
      { ...ok('/home/u/job/v'), mtime: 'soon' },
      { key: 'run/x' },
      'not an object',
    ];
    const ix = parseGuardIndex(doc([...bad, ok('/home/u/job/good'), ok('/home/u/job/good')]), 'run/');
    assert.deepEqual(
      ix.entries.map((e) => e.path),
      ['/home/u/job/good'],
    );
    assert.equal(ix.refused.length, bad.length + 1);
    for (const r of ix.refused) assert.match(r.reason, /^refused: the guard's index names it, but .+; nothing was read or written for it$/);
    const why = ix.refused.map((r) => r.reason).join('\n');
    for (const re of [
      /"\." or "\.\."/,
      /key "run\/\.\.\/elsewhere\/x" is not/,
      /under \/proc/,
      /not absolute/,
      /NUL/,
      /not UTF-8/,
      /no SHA-256/,
      /no size/,
      /no mtime/,
      /no path/,
      /twice/,
    ])
      assert.match(why, re);
  });

  it('refuses an index that is not JSON or not of this format, and ignores a hostile home or root', () => {
    assert.throws(() => parseGuardIndex('{', 'run/'), /not JSON/);
    assert.throws(
      () => parseGuardIndex(JSON.stringify({ format: 'x', version: 1, files: [] }), 'run/'),
      /^GpuSessionsError: The guard's index: format: expected one of "gpu-sessions-guard-index", got the string "x" — it is not an index this version reads/,
    );
    assert.throws(
      () => parseGuardIndex(JSON.stringify({ format: 'gpu-sessions-guard-index', version: 1, files: {} }), 'run/'),
      /files: expected a list, got an object/,
    );
    const ix = parseGuardIndex(doc([], { home: '/home/u/../../etc', roots: ['/home/u/job', '/proc/1', 'rel', 7] }), 'run/');
    assert.equal(ix.home, null);
    assert.deepEqual(ix.roots, ['/home/u/job']);
  });
});
