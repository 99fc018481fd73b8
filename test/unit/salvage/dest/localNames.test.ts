/**
 * Local names (issue 23 item 1, issue 24 item 7): the node's names byte-exact on Linux and macOS, the Windows
 * encoding only on Windows, collisions only where the file system folds (full case folding, 8.3 short names),
 * the manifest's `localPath` (a salvage run over sshd: test/integration/salvageNames.test.ts).
 */
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { LocalNames, foldName, localComponent, localRelPathFor } from '../../../../src/core/salvage/dest/localNames';
import { insideDest } from '../../../../src/core/salvage/dest/paths';

const HOSTILE = [
  'weird/*',
  'double"quote.txt',
  '$(echo x | xargs touch)',
  'new\nline.log',
  'run:2026-12-02T00:00:00.log',
  'back\\slash',
  'CON',
];

describe('local names: exact on Linux and macOS, encoded on Windows (issue 23)', () => {
  it('keeps hostile names byte-exact on Linux and macOS', () => {
    for (const style of ['posix', 'darwin'] as const) {
      assert.equal(localRelPathFor('/w/weird/*', 'files', style), 'files/w/weird/*');
      for (const n of HOSTILE.filter((h) => !h.includes('/'))) assert.equal(localComponent(n, style), n);
      assert.equal(localComponent('trail. ', style), 'trail. ');
      assert.equal(localComponent('100%.log', style), '100%.log');
    }
    assert.throws(() => localRelPathFor('/w/../etc/passwd', 'files', 'posix'), /\.\./);
    assert.throws(() => localComponent('a\0b', 'posix'), /Refusing/);
  });

  it('encodes for Windows only, and the result stays inside the run folder under path.win32', () => {
    assert.equal(localRelPathFor('/w/weird/*', 'files', 'win32'), 'files/w/weird/%2A');
    assert.equal(localComponent('double"quote.txt', 'win32'), 'double%22quote.txt');
    assert.equal(localComponent('$(echo x | xargs touch)', 'win32'), '$(echo x %7C xargs touch)');
    assert.equal(localComponent('new\nline.log', 'win32'), 'new%0Aline.log');
    assert.equal(localComponent('run:1.log', 'win32'), 'run%3A1.log');
    const rel = localRelPathFor('/w/a\\..\\..\\x', 'files', 'win32');
    assert.ok(insideDest('C:\\s\\run', rel, path.win32).startsWith('C:\\s\\run\\files\\'));
  });

  it('8.3 short names cannot alias another file on Windows', () => {
    for (const n of ['PROGRA~1', 'LONGFI~1.TXT', 'model~12.bin']) assert.ok(!localComponent(n, 'win32').includes('~'), n);
    assert.equal(localComponent('PROGRA~1', 'posix'), 'PROGRA~1');
    assert.equal(localComponent('notes~draft.md', 'win32'), 'notes~draft.md');
  });

  it('folds (full case folding, normalisation) only where the file system does', () => {
    assert.equal(foldName('files/Run.log', 'posix'), null);
    for (const style of ['win32', 'darwin'] as const) {
      assert.equal(foldName('files/ſ.txt', style), foldName('files/s.txt', style), 'long s / s');
      assert.equal(foldName('files/ς.txt', style), foldName('files/σ.txt', style), 'final sigma / sigma');
      assert.equal(foldName('files/RUN.log', style), foldName('files/run.log', style));
    }
    const linux = new LocalNames('posix');
    assert.equal(linux.claim('files/w/Run.log', '/w/Run.log').localPath, 'files/w/Run.log');
    const b = linux.claim('files/w/run.log', '/w/run.log');
    assert.equal(b.localPath, 'files/w/run.log');
    assert.equal(b.note, null);
    const mac = new LocalNames('darwin');
    mac.claim('files/w/ſ.txt', '/w/ſ.txt');
    const twin = mac.claim('files/w/s.txt', '/w/s.txt');
    assert.notEqual(twin.localPath, 'files/w/s.txt');
    assert.match(twin.note ?? '', /macOS/);
    const win = new LocalNames('win32');
    win.claim('files/w/σ', '/w/σ');
    assert.notEqual(win.claim('files/w/ς', '/w/ς').localPath, 'files/w/ς');
  });
});
