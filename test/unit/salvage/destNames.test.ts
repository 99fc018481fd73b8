/**
 * Destination name rules (issue 41 item 1): probed by trying names in the run folder, not guessed from the
 * platform; names kept byte-exact where accepted, only refused ones %-encoded; folding only where it folds.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DestNameRules, EXACT_NAMES, destComponent, destFold, probeDestNames, refusedBy } from '../../../src/core/salvage/destNames';

/** What fusefat / exFAT / an SMB share answered in the issue: folds case, refuses `: * ?` etc. */
const FAT: DestNameRules = {
  foldsCase: true,
  normalises: true,
  refusedChars: [':', '*', '?', '"', '<', '>', '|', '\\'],
  refusesTrailingDotSpace: true,
  refusesReserved: true,
};

describe('destination name rules (issue 41)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'destnames-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('probes a Linux folder as exact (every name accepted, no folding) and leaves nothing behind', async function () {
    if (process.platform !== 'linux') this.skip();
    const rules = await probeDestNames(dir);
    assert.deepEqual(rules, EXACT_NAMES);
    assert.deepEqual(readdirSync(dir), []);
  });

  it('an unwritable folder is a clear permission error, not a refused name', async function () {
    if (process.platform === 'win32' || process.getuid?.() === 0) this.skip(); // root writes anywhere
    chmodSync(dir, 0o555);
    await assert.rejects(probeDestNames(dir), /not writable \(EACCES\)/);
    chmodSync(dir, 0o755);
  });

  it('keeps every name byte-exact on an exact destination', () => {
    for (const n of ['run:2026-12-04.txt', 'what?.txt', 'a*b.log', 'trail.', 'CON.txt', '100%.txt', 'Log.txt'])
      assert.equal(destComponent(n, EXACT_NAMES), n);
    assert.equal(destFold('files/Log.txt', EXACT_NAMES), null);
  });

  it('encodes exactly the refused names on a FAT-like destination', () => {
    assert.equal(destComponent('plain.txt', FAT), 'plain.txt');
    assert.equal(destComponent('Log.txt', FAT), 'Log.txt');
    assert.equal(destComponent('run:2026-12-04.txt', FAT), 'run%3A2026-12-04.txt');
    assert.equal(destComponent('what?.txt', FAT), 'what%3F.txt');
    assert.equal(destComponent('a*b.log', FAT), 'a%2Ab.log');
    assert.equal(destComponent('trail.', FAT), 'trail%2E');
    assert.equal(destComponent('CON.txt', FAT), '%43ON.txt');
    assert.equal(refusedBy('plain.txt', FAT), false);
  });

  it('encodes only the characters this destination refused, and `%` so encoded and real names never meet', () => {
    const colonOnly: DestNameRules = { ...EXACT_NAMES, refusedChars: [':'] };
    assert.equal(destComponent('a:b?.', colonOnly), 'a%3Ab?.');
    assert.equal(destComponent('a%3Ab', colonOnly), 'a%253Ab');
    assert.notEqual(destComponent('a%3Ab', colonOnly), destComponent('a:b', colonOnly));
    assert.equal(destComponent('100%', EXACT_NAMES), '100%');
  });

  it('folds twins only where the destination folds', () => {
    assert.equal(destFold('files/Log.txt', FAT), destFold('files/log.txt', FAT));
    assert.equal(destFold('files/n\u00e9', FAT), destFold('files/ne\u0301', FAT));
    const caseOnly: DestNameRules = { ...EXACT_NAMES, foldsCase: true };
    assert.notEqual(destFold('n\u00e9', caseOnly), destFold('ne\u0301', caseOnly));
  });

  it('refuses `.`, `..`, empty and `/` components on any destination', () => {
    for (const c of ['.', '..', '', 'a/b', 'a\0b']) assert.throws(() => destComponent(c, EXACT_NAMES), /Refusing/);
  });
});
