/**
 * Destination name rules (issue 41 item 1): probed by trying names in the run folder, not guessed from the
 * platform; names kept byte-exact where accepted, only refused ones %-encoded; folding only where it folds.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, chmodSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  DestNameRules,
  EXACT_NAMES,
  describeDestRules,
  destComponent,
  destFold,
  destPolicy,
  destRelPath,
  probeDestNames,
  refusedBy,
} from '../../../../src/core/salvage/dest/destNames';
import { LocalNames } from '../../../../src/core/salvage/dest/localNames';
import { fsProblem } from '../../../../src/core/salvage/transfer/verifiedWriter';
import { confirmLocalEntries } from '../../../../src/core/salvage/transfer/entryCheck';
import type { SalvageItem } from '../../../../src/core/salvage/salvageTypes';
import { linkSync, writeFileSync, mkdirSync } from 'node:fs';

/** What fusefat / exFAT / an SMB share answered in the issue: folds case, refuses `: * ?` etc. */
const FAT: DestNameRules = {
  foldsCase: true,
  normalises: true,
  refusedChars: [':', '*', '?', '"', '<', '>', '|', '\\'],
  refusesTrailingDotSpace: true,
  refusesReserved: true,
  refusesControl: true,
  refusesNonAscii: true,
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

  it('encodes characters beyond ASCII as their UTF-8 bytes and control characters, only where refused', () => {
    assert.equal(destComponent('caf\u00e9.txt', FAT), 'caf%C3%A9.txt');
    assert.equal(destComponent('tab\there', FAT), 'tab%09here');
    assert.equal(destComponent('caf\u00e9.txt', EXACT_NAMES), 'caf\u00e9.txt');
    assert.equal(destComponent('caf\u00e9.txt', { ...EXACT_NAMES, refusesControl: true }), 'caf\u00e9.txt');
    assert.equal(destRelPath('/root/a:b/c.txt', 'files', FAT), 'files/root/a%3Ab/c.txt');
    assert.equal(describeDestRules(EXACT_NAMES), null);
    assert.match(describeDestRules(FAT)!, /folds case.*refuses : \*/);
  });

  it('LocalNames with a probed policy: twins get a suffix on a folding destination, not on an exact one', () => {
    const fat = new LocalNames('posix');
    fat.usePolicy(destPolicy(FAT));
    assert.equal(fat.folds, true);
    const a = fat.claim(fat.relPath('/w/Log.txt', 'files'), '/w/Log.txt');
    const b = fat.claim(fat.relPath('/w/log.txt', 'files'), '/w/log.txt');
    assert.equal(a.localPath, 'files/w/Log.txt');
    assert.match(b.localPath, /^files\/w\/log~[0-9a-f]{8}\.txt$/);
    assert.match(b.note ?? '', /same file on this destination/);
    const exact = new LocalNames('posix');
    exact.usePolicy(destPolicy(EXACT_NAMES));
    assert.equal(exact.folds, false);
    exact.claim('files/w/Log.txt', '/w/Log.txt');
    assert.equal(exact.claim('files/w/log.txt', '/w/log.txt').localPath, 'files/w/log.txt');
    assert.throws(() => exact.usePolicy(destPolicy(FAT)), /before the first local name/);
  });

  it('a permission error on one name in a writable folder fails that file only; an unwritable folder stops the run', () => {
    const eperm = Object.assign(new Error('EPERM'), { code: 'EPERM' });
    const one = fsProblem(eperm, dir);
    assert.equal(one.fatal, false);
    assert.match(one.reason, /refused this file's local name \(EPERM\)/);
    assert.deepEqual(readdirSync(dir), [], 'the check leaves nothing behind');
    const gone = fsProblem(eperm, path.join(dir, 'no-such-folder'));
    assert.equal(gone.fatal, true);
    assert.match(gone.reason, /not writable \(EPERM\)/);
  });

  it("a verified item whose local entry is another item's file, is missing, or has the wrong size is failed", () => {
    mkdirSync(path.join(dir, 'files'));
    const item = (n: string, size: number): SalvageItem =>
      ({ remotePath: `/w/${n}`, localPath: `files/${n}`, kind: 'file', size, status: 'verified', reason: null }) as unknown as SalvageItem;
    writeFileSync(path.join(dir, 'files', 'A'), 'aaaa');
    linkSync(path.join(dir, 'files', 'A'), path.join(dir, 'files', 'a')); // as a folding destination answers
    writeFileSync(path.join(dir, 'files', 'ok'), 'ok');
    writeFileSync(path.join(dir, 'files', 'short'), 'x');
    const items = [item('A', 4), item('a', 4), item('ok', 2), item('short', 5), item('missing', 1)];
    const bad = confirmLocalEntries(dir, items);
    assert.deepEqual(
      bad.map((b) => b.item.remotePath),
      ['/w/a', '/w/A', '/w/short', '/w/missing'],
    );
    assert.deepEqual(
      items.map((i) => i.status),
      ['verified', 'verified', 'verified', 'verified', 'verified'],
      'the check only says which; the caller fails them',
    );
    assert.match(bad[0].reason, /same file as files\/A/);
    assert.match(bad[1].reason, /was replaced by \/w\/a's/);
  });
});
