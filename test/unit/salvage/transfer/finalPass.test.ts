/**
 * The final pass's comparison of a new listing with the items is a function of its inputs: it says what changed,
 * what is new and what to fetch, and touches none of the run's items (the orchestrator applies the changes).
 */
import assert from 'node:assert/strict';
import { diffListing } from '../../../../src/core/salvage/transfer/finalPass';
import { ItemNamer } from '../../../../src/core/salvage/plan/plan';
import type { SalvageListing } from '../../../../src/core/salvage/plan/listing';
import { LocalNames } from '../../../../src/core/salvage/dest/paths';
import { applyPatch } from '../../../../src/core/salvage/phase';
import { nullLogger } from '../../../../src/core/util/logger';
import { itemOf } from '../../../helpers/salvageManifest';

const T0 = '2026-11-29T12:00:00Z';
const T1 = '2026-11-29T12:05:00Z';

function listingOf(files: SalvageListing['files'], caches: SalvageListing['caches'] = []): SalvageListing {
  return {
    home: '/root',
    uid: 0,
    roots: [{ path: '/root/out', why: 'written by a server' }],
    realRoots: ['/root/out'],
    files,
    caches,
    processes: [],
    servers: [],
    writers: [],
    modelDirs: [],
    truncated: false,
    notListed: 0,
    bound: null,
    maxFiles: 100000,
    maxDepth: 64,
  };
}

describe('the final pass compares a new listing with the items (diffListing)', () => {
  const cx = (l: SalvageListing) => ({
    listing: l,
    namer: new ItemNamer(new LocalNames('posix'), null),
    modelDirs: [],
    sizeThreshold: 1 << 30,
    o: {},
    log: nullLogger,
  });

  it('says what changed, what is new and what to fetch, and changes no item itself', () => {
    const grew = itemOf('/root/out/a.log', { size: 10, mtime: T0, sha256: 'aa'.repeat(32) });
    const same = itemOf('/root/out/b.jsonl', { size: 5, mtime: T0, sha256: 'bb'.repeat(32) });
    const gone = itemOf('/root/out/c.jsonl', { size: 7, mtime: T0, sha256: 'cc'.repeat(32) });
    const failed = itemOf('/root/out/d.jsonl', { status: 'failed', reason: 'exit null', size: 3, mtime: T0 });
    const items = [grew, same, gone, failed];
    const before = JSON.stringify(items);
    const l = listingOf(
      [
        { path: '/root/out/a.log', kind: 'log', size: 25, mtime: T1 },
        { path: '/root/out/b.jsonl', kind: 'data', size: 5, mtime: T0 },
        { path: '/root/out/d.jsonl', kind: 'data', size: 4, mtime: T1 },
        { path: '/root/out/new.jsonl', kind: 'data', size: 9, mtime: T1 },
      ],
      [{ path: '/root/.cache/pip', files: 3, bytes: 100 }],
    );
    const d = diffListing(cx(l), items, false);
    assert.equal(JSON.stringify(items), before, 'the items are untouched: the orchestrator applies the changes');
    assert.deepEqual(
      d.changes.map((c) => [c.item.remotePath, c.patch.status ?? null, c.patch.goneFromNode ?? null]),
      [
        ['/root/out/a.log', 'pending', null],
        ['/root/out/c.jsonl', null, true],
        ['/root/out/d.jsonl', 'pending', null],
      ],
    );
    const base = d.changes[0].base!;
    assert.deepEqual([base.size, base.sha256, base.trusted], [10, 'aa'.repeat(32), true], 'the verified copy is the base to append to');
    assert.deepEqual(
      d.fetch.map((i) => i.remotePath),
      ['/root/out/a.log', '/root/out/d.jsonl', '/root/out/new.jsonl'],
    );
    assert.deepEqual(
      d.added.map((i) => [i.remotePath, i.kind, i.status]),
      [
        ['/root/out/new.jsonl', 'data', 'pending'],
        ['/root/.cache/pip', 'cache', 'skipped'],
      ],
    );
    assert.equal(d.atRisk, 15 + 9, 'the appended bytes of a.log and the new file (d.jsonl failed before: not counted)');
    applyPatch(grew, d.changes[0].patch);
    assert.deepEqual(
      [grew.size, grew.status, 'nodeSize' in grew],
      [25, 'pending', false],
      'applied: a patch value undefined removes the field',
    );
  });

  it('a run that cannot save more leaves failed items failed', () => {
    const failed = itemOf('/root/out/d.jsonl', { status: 'failed', reason: 'disk full', size: 3, mtime: T0 });
    const d = diffListing(cx(listingOf([{ path: '/root/out/d.jsonl', kind: 'data', size: 4, mtime: T1 }])), [failed], true);
    assert.deepEqual([d.changes.length, d.fetch.length], [0, 0]);
  });
});
