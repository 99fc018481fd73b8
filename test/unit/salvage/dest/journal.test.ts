import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { JOURNAL_FILE, SalvageJournal, readJournal, withJournal } from '../../../../src/core/salvage/dest/journal';
import { chooseRunDir } from '../../../../src/core/salvage/dest/runDir';
import type { SalvageItem, SalvageManifest } from '../../../../src/core/salvage/salvageTypes';

const item = (p: string, extra: Partial<SalvageItem> = {}): SalvageItem => ({
  remotePath: p,
  localPath: `files${p}`,
  kind: 'data',
  step: 'data',
  size: 7,
  mtime: '2026-12-04T10:00:00.000Z',
  sha256: 'a'.repeat(64),
  selected: true,
  status: 'verified',
  reason: null,
  leftReason: null,
  s3: 'unknown',
  syncedAt: '2026-12-04T10:00:01.000Z',
  ...extra,
});

describe('salvage journal', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-journal-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('appends one line per verified file (nothing for others), read back by remote path, the last line winning', () => {
    const j = new SalvageJournal(dir, (e) => assert.fail(String(e)));
    j.record(item('/w/a'));
    j.record(item('/w/b', { status: 'failed' }));
    j.record(item('/w/c', { redacted: true, localSha256: 'b'.repeat(64), secrets: [{ line: 3, kind: 'aws-key' }] }));
    j.record(item('/w/a', { size: 9, sha256: 'c'.repeat(64) }));
    j.flush();
    const lines = readFileSync(path.join(dir, JOURNAL_FILE), 'utf8').trim().split('\n');
    assert.equal(lines.length, 3);
    const r = readJournal(dir);
    assert.deepEqual([...r.keys()], ['/w/a', '/w/c']);
    assert.equal(r.get('/w/a')!.s, 9);
    assert.equal(r.get('/w/c')!.lh, 'b'.repeat(64));
    j.compact();
    assert.equal(existsSync(path.join(dir, JOURNAL_FILE)), false);
  });

  it('skips a torn last line (a crash mid-write) and lays the journal over the manifest snapshot', () => {
    const j = new SalvageJournal(dir, () => undefined);
    j.record(item('/w/a'));
    j.record(item('/w/new', { kind: 'log', step: 'logs' }));
    j.flush();
    appendFileSync(path.join(dir, JOURNAL_FILE), '{"p":"/w/torn","l":"fi');
    const snapshot = { items: [item('/w/a', { status: 'pending', sha256: null }), item('/w/z', { status: 'pending' })], roots: [] };
    const m = withJournal(dir, snapshot as unknown as SalvageManifest)!;
    const by = new Map(m.items.map((i) => [i.remotePath, i]));
    assert.equal(by.get('/w/a')!.status, 'verified');
    assert.equal(by.get('/w/a')!.sha256, 'a'.repeat(64));
    assert.equal(by.get('/w/z')!.status, 'pending');
    assert.equal(by.get('/w/new')!.status, 'verified', 'a file the snapshot did not hold yet is added');
    assert.equal(by.get('/w/new')!.kind, 'log');
    assert.equal(by.has('/w/torn'), false);
  });

  it('a run folder with a journal but no manifest still resumes: chooseRunDir returns the journaled files', () => {
    const base = mkdtempSync(path.join(os.tmpdir(), 'gs-journal-runs-'));
    try {
      const run = path.join(base, 'n1', '20261204-100000');
      mkdirSync(run, { recursive: true });
      writeFileSync(
        path.join(run, JOURNAL_FILE),
        JSON.stringify({ p: '/w/a', l: 'files/w/a', s: 7, m: 'x', h: 'a'.repeat(64), k: 'data', st: 'data', t: '' }) + '\n',
      );
      const c = chooseRunDir(base, 'n1', new Date());
      assert.equal(c.dir, run);
      assert.equal(c.previous?.items.length, 1);
      assert.equal(c.previous?.items[0].status, 'verified');
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('reports a journal it cannot write once, through onError', () => {
    const errors: unknown[] = [];
    const j = new SalvageJournal(path.join(dir, 'missing', 'deeper'), (e) => errors.push(e));
    j.record(item('/w/a'));
    j.flush();
    j.record(item('/w/b'));
    j.flush();
    assert.equal(errors.length, 1);
  });
});
