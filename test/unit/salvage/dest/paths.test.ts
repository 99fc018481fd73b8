import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { LocalNames, ensureParent, insideDest, localRelPath, safeComponent } from '../../../../src/core/salvage/dest/paths';

describe('local names safe on every OS (issue 12)', () => {
  it('attack 9: a Linux name with backslashes cannot climb out of the run folder on Windows', () => {
    const rel = localRelPath('/home/u/a\\..\\..\\..\\..\\running-servers.sh', 'files', 'win32');
    assert.equal(rel, 'files/home/u/a%5C..%5C..%5C..%5C..%5Crunning-servers.sh');
    const abs = insideDest('C:\\salvage\\node\\run', rel, path.win32);
    assert.equal(abs, 'C:\\salvage\\node\\run\\files\\home\\u\\a%5C..%5C..%5C..%5C..%5Crunning-servers.sh');
    // what the old mapping produced: a name that Windows resolves onto <run>\running-servers.sh
    assert.equal(
      path.win32.resolve('C:\\salvage\\node\\run', 'files/home/u/a\\..\\..\\..\\..\\running-servers.sh'),
      'C:\\salvage\\node\\run\\running-servers.sh',
    );
    assert.throws(() => insideDest('C:\\salvage\\run', '..\\x', path.win32), /outside/);
  });

  it('alternate data streams, reserved characters, trailing dots and spaces are encoded', () => {
    assert.equal(safeComponent('x.log:ads.log'), 'x.log%3Aads.log');
    assert.equal(safeComponent('a*b?c"d<e>f|g'), 'a%2Ab%3Fc%22d%3Ce%3Ef%7Cg');
    assert.equal(safeComponent('trail.'), 'trail%2E');
    assert.equal(safeComponent('trail. .'), 'trail%2E%20%2E');
    assert.equal(safeComponent('space '), 'space%20');
    assert.equal(safeComponent('100%.log'), '100%25.log');
    for (const c of ['x.log:ads.log', 'a*b', 'trail.', 'space ']) {
      const s = safeComponent(c);
      assert.ok(!/[\\:*?"<>|]/.test(s) && !/[. ]$/.test(s), s);
    }
  });

  it('Windows device names are encoded, with or without an extension, in any case', () => {
    for (const d of ['CON', 'CON.log', 'con.txt', 'Nul', 'aux.tar.gz', 'PRN', 'COM1', 'com9.log', 'LPT1.x', 'CON .log']) {
      const s = safeComponent(d);
      assert.ok(s.startsWith('%'), `${d} → ${s}`);
      assert.ok(!/^(con|prn|aux|nul|com\d|lpt\d)(\.|$)/i.test(s));
    }
    for (const ok of ['console.log', 'CONFIG', 'nullable.py', 'com10.log', 'auxiliary']) assert.equal(safeComponent(ok), ok);
  });

  it('attack 10: case and Unicode-normalisation twins get distinct local names, with a note', () => {
    const names = new LocalNames('win32');
    const a = names.claim(localRelPath('/w/Run.log', 'files', 'win32'), '/w/Run.log');
    const b = names.claim(localRelPath('/w/run.log', 'files', 'win32'), '/w/run.log');
    assert.equal(a.note, null);
    assert.notEqual(LocalNames.fold(b.localPath), LocalNames.fold(a.localPath));
    assert.match(b.localPath, /^files\/w\/run~[0-9a-f]{8}\.log$/);
    assert.match(b.note ?? '', /differs only in case or Unicode normalisation/);
    const nfc = 'caf\u00e9';
    const nfd = 'cafe\u0301';
    const c = names.claim(localRelPath(`/w/${nfc}`, 'files', 'win32'), `/w/${nfc}`);
    const d = names.claim(localRelPath(`/w/${nfd}`, 'files', 'win32'), `/w/${nfd}`);
    assert.equal(c.note, null);
    assert.ok(d.note);
    assert.notEqual(LocalNames.fold(c.localPath), LocalNames.fold(d.localPath));
    // the same remote path claimed again keeps its name; a third twin gets yet another
    assert.equal(names.claim(localRelPath('/w/Run.log', 'files', 'win32'), '/w/Run.log').localPath, a.localPath);
    const e = names.claim(localRelPath('/w/RUN.log', 'files', 'win32'), '/w/RUN.log');
    assert.equal(new Set([a, b, e].map((x) => LocalNames.fold(x.localPath))).size, 3);
  });

  it('attack 11: a record with `..` is refused on its own (the caller fails that item)', () => {
    assert.throws(() => localRelPath('/home/u/../etc', 'git'), /\.\./);
    assert.equal(localRelPath('/home/u/repo', 'git'), 'git/home/u/repo');
  });
});

describe('remote paths → the salvage folder', () => {
  it('maps remote paths into the salvage folder safely', () => {
    assert.equal(localRelPath('/root/logs/a.log'), 'files/root/logs/a.log');
    assert.equal(localRelPath('/root/new\nline.log', 'files', 'win32'), 'files/root/new%0Aline.log');
    assert.equal(localRelPath('/root/100%.log', 'files', 'win32'), 'files/root/100%25.log');
    assert.throws(() => localRelPath('/root/../etc/passwd'), /\.\./);
    assert.throws(() => localRelPath('/'), /Refusing/);
    assert.equal(safeComponent(`q'"$(x)`), `q'%22$(x)`); // `"` is not allowed in Windows names
    assert.ok(Buffer.byteLength(safeComponent('é'.repeat(300))) <= 240);
    const dest = mkdtempSync(path.join(os.tmpdir(), 'gs-dest-'));
    try {
      assert.throws(() => insideDest(dest, '../escape'), /outside/);
      assert.throws(() => insideDest(dest, '/etc/passwd'), /outside/);
      mkdirSync(path.join(dest, 'files'));
      symlinkSync('/tmp', path.join(dest, 'files', 'evil'));
      assert.throws(() => ensureParent(dest, path.join(dest, 'files', 'evil', 'x', 'y.log')), /symlink/);
      ensureParent(dest, path.join(dest, 'files', 'ok', 'deep', 'z.log'));
    } finally {
      rmSync(dest, { recursive: true, force: true });
    }
  });
});

describe('insideDest: the string-join fast path says what path.resolve says (issue 31)', () => {
  const reference = (dest: string, rel: string): string => {
    const root = path.posix.resolve(dest);
    const abs = path.posix.resolve(root, rel);
    if (abs !== root && !abs.startsWith(root + '/')) throw new Error('outside');
    return abs;
  };
  it('for clean and unclean folders and names, the same path or the same refusal', () => {
    const dests = [
      '/',
      '/a',
      '/a/b',
      '/a/b/',
      '/a/./b',
      '/a/../b',
      '/a//b',
      '/..',
      '/a/.x',
      '/a/..x',
      '/a/b/.',
      '/a/b/..',
      '/tmp/dest/run-1',
    ];
    const rels = [
      'x',
      'files/a/b.txt',
      '.hidden',
      '..x',
      'a/..b/c',
      'a/./b',
      'a/../b',
      '../x',
      '/etc',
      'a//b',
      'a/',
      '.',
      '..',
      '',
      'a/b/..',
      'a\\..\\b',
      'a b/cé',
      '...',
    ];
    for (const d of dests)
      for (const r of rels) {
        let want: string;
        try {
          want = reference(d, r);
        } catch {
          assert.throws(() => insideDest(d, r, path.posix), /outside/, JSON.stringify([d, r]));
          continue;
        }
        assert.equal(insideDest(d, r, path.posix), want, JSON.stringify([d, r]));
      }
  });
});
