/** The guard's history store (core/node/history): bounds in bytes, entries and age, and reloads. */
import assert from 'node:assert/strict';
import {
  chmodSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HistoryStore, defaultHistoryDir, historyDirProblem, historyFileName, isHistoryEntry } from '../../../src/core/node/history';
import { cmdHistory } from '../../../src/cli/cmdHistory';

describe('HistoryStore bounds', () => {
  it('keeps the file under maxBytes, entries in memory under maxEntries, drops entries older than maxAge, survives a reload', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-hist-'));
    try {
      let now = Date.UTC(2026, 0, 1);
      const h = new HistoryStore(dir, 'node/../x y', { maxBytes: 20_000, maxEntries: 50, maxAgeMs: 3600_000, now: () => now });
      assert.ok(!historyFileName('node/../x y').includes('/'));
      for (let i = 0; i < 2000; i++) {
        now += 1000;
        h.addSample({ type: 'sample', time: new Date(now).toISOString(), i, pad: 'x'.repeat(50) });
      }
      assert.ok(statSync(h.file).size <= 20_000, String(statSync(h.file).size));
      assert.equal(h.all().length, 50);
      const again = new HistoryStore(dir, 'node/../x y', { maxBytes: 20_000, maxEntries: 50, maxAgeMs: 3600_000, now: () => now });
      assert.equal(again.all().length, 50);
      assert.equal((again.all().pop() as unknown as { i: number }).i, 1999);
      now += 2 * 3600_000;
      assert.equal(new HistoryStore(dir, 'node/../x y', { maxAgeMs: 3600_000, now: () => now }).all().length, 0, 'older than 24 h');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('HistoryStore: memory stays bounded however long it runs (issue 40 item 8)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-hist-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const sample = (i: number) => ({
    type: 'sample',
    time: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    i,
    pad: 'x'.repeat(4000),
  });

  it("watch's store (maxEntries 0) keeps no entry in memory after thousands of polls; its file has them", () => {
    const h = new HistoryStore(dir, 'n', { maxEntries: 0, maxBytes: 200_000, now: () => Date.UTC(2026, 0, 2) });
    for (let i = 0; i < 2000; i++) h.addSample(sample(i));
    assert.equal(h.all().length, 0);
    const back = new HistoryStore(dir, 'n', { maxBytes: 200_000, now: () => Date.UTC(2026, 0, 2) }).all();
    assert.ok(back.length > 10, String(back.length));
    assert.equal((back.pop() as unknown as { i: number }).i, 1999);
  });

  it('in memory no more than maxBytes of entries as JSON, the newest, however many maxEntries allows', () => {
    const h = new HistoryStore(dir, 'n', { maxEntries: 20_000, maxBytes: 200_000, now: () => Date.UTC(2026, 0, 2) });
    const sizes: number[] = [];
    for (let i = 0; i < 2000; i++) {
      h.addSample(sample(i));
      if (i % 500 === 499) sizes.push(h.all().reduce((a, e) => a + JSON.stringify(e).length + 1, 0));
    }
    for (const bytes of sizes) assert.ok(bytes <= 200_000, String(bytes));
    assert.ok(h.all().length >= 40, String(h.all().length));
    assert.equal((h.all().pop() as unknown as { i: number }).i, 1999);
    const big = { type: 'sample', time: new Date(Date.UTC(2026, 0, 1)).toISOString(), pad: 'y'.repeat(300_000) };
    h.addSample(big);
    assert.deepEqual(h.all(), [big], 'an entry larger than the bound is still the newest one');
  });
});

describe('HistoryStore: files and hostile contents', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-hist-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('the byte bound holds for multi-byte text too (node messages are UTF-8, not one byte a character)', () => {
    let now = Date.UTC(2026, 0, 1);
    const h = new HistoryStore(dir, 'n', { maxBytes: 20_000, maxEntries: 10_000, maxAgeMs: 3600_000, now: () => now });
    for (let i = 0; i < 3000; i++) {
      now += 1000;
      h.addTransition({ type: 'transition', time: new Date(now).toISOString(), i, message: '€—ü'.repeat(20) });
      assert.ok(statSync(h.file).size <= 20_000, `after entry ${i}: ${statSync(h.file).size} bytes`);
    }
    const again = new HistoryStore(dir, 'n', { maxBytes: 20_000, maxAgeMs: 3600_000, now: () => now });
    assert.equal((again.all().pop() as unknown as { i: number }).i, 2999, 'the newest entry survives a compaction');
  });

  it('a line cut mid-write, junk and entries without type/time are skipped on load', () => {
    const now = Date.UTC(2026, 0, 1);
    const h = new HistoryStore(dir, 'n', { now: () => now });
    const t = new Date(now).toISOString();
    writeFileSync(
      h.file,
      [
        JSON.stringify({ type: 'sample', time: t, ok: 1 }),
        '{"type":"sample","time":"' + t.slice(0, 5),
        'null',
        '42',
        JSON.stringify({ type: 'sample' }),
        JSON.stringify({ type: 'sample', time: 'not a date' }),
        JSON.stringify({ type: 7, time: t }),
        JSON.stringify({ type: 'transition', time: t, ok: 2 }),
        '',
      ].join('\n'),
    );
    const all = new HistoryStore(dir, 'n', { now: () => now }).all() as unknown as Array<{ ok: number }>;
    assert.deepEqual(
      all.map((e) => e.ok),
      [1, 2],
    );
  });

  it('file names: one file per node name, only safe characters, no collisions between look-alike names', () => {
    const names = ['a/b', 'a_b', 'a b', '../../etc/passwd', 'x'.repeat(500), '', 'ünï'];
    const files = names.map(historyFileName);
    assert.equal(new Set(files).size, names.length);
    for (const f of files) {
      assert.match(f, /^[A-Za-z0-9._-]*-[0-9a-f]{8}\.jsonl$/);
      assert.ok(f.length <= 80 + 16, f);
    }
    assert.equal(historyFileName('a/b'), historyFileName('a/b'), 'stable');
    const h = new HistoryStore(dir, '../../x');
    assert.equal(path.dirname(h.file), dir, 'writes only inside dir');
  });

  it('the default folder: GPU_SESSIONS_CACHE_DIR, else XDG_CACHE_HOME/gpu-sessions, else ~/.cache/gpu-sessions', () => {
    assert.equal(defaultHistoryDir({ GPU_SESSIONS_CACHE_DIR: '/c', XDG_CACHE_HOME: '/x' }), path.join('/c', 'history'));
    assert.equal(defaultHistoryDir({ XDG_CACHE_HOME: '/x' }), path.join('/x', 'gpu-sessions', 'history'));
    assert.equal(defaultHistoryDir({}), path.join(os.homedir(), '.cache', 'gpu-sessions', 'history'));
  });

  it('an unwritable folder does not throw: history is best effort, memory keeps the entries', () => {
    const file = path.join(dir, 'not-a-dir');
    writeFileSync(file, '');
    const h = new HistoryStore(path.join(file, 'sub'), 'n');
    h.addSample({ type: 'sample', time: new Date().toISOString() });
    assert.equal(h.all().length, 1);
  });
});

describe('HistoryStore: a folder others can write to, symlinks and links (#24 h1)', () => {
  let dir: string;
  let victim: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-hist-'));
    victim = path.join(dir, 'victim');
    writeFileSync(victim, 'precious\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const t = (i = 0) => new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString();
  const now = () => Date.UTC(2026, 0, 1, 1);

  it('creates the folder private (0700)', () => {
    const hd = path.join(dir, 'cache', 'history');
    const h = new HistoryStore(hd, 'n', { now });
    h.addSample({ type: 'sample', time: t() });
    assert.equal(statSync(hd).mode & 0o777, 0o700);
    assert.equal(statSync(h.file).mode & 0o777, 0o600);
    assert.equal(new HistoryStore(hd, 'n', { now }).all().length, 1);
  });

  it('a symlink planted at the history file is not followed: its target is unchanged, the history stays in memory, said once', () => {
    const hd = path.join(dir, 'history');
    mkdirSync(hd, { mode: 0o700 });
    symlinkSync(victim, path.join(hd, historyFileName('n')));
    const said: string[] = [];
    const h = new HistoryStore(hd, 'n', { now, onProblem: (m) => said.push(m) });
    assert.equal(h.all().length, 0, 'the target is not read as history either');
    for (let i = 0; i < 3; i++) h.addSample({ type: 'sample', time: t(i) });
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
    assert.equal(h.all().length, 3);
    assert.equal(said.length, 1, said.join('\n'));
    assert.match(said[0], /is a symbolic link \(not followed\)/);
    assert.match(h.problem!, new RegExp(historyFileName('n').replace(/[.]/g, '\\.')));
  });

  it('symlinks planted at the compaction temp names are not followed (a random name, O_EXCL)', () => {
    const hd = path.join(dir, 'history');
    mkdirSync(hd, { mode: 0o700 });
    const file = path.join(hd, historyFileName('n'));
    for (let p = process.pid - 5; p < process.pid + 400; p++) symlinkSync(victim, `${file}.${p}.tmp`);
    let i = 0;
    const h = new HistoryStore(hd, 'n', { maxBytes: 8192, now: () => Date.UTC(2026, 0, 1) + i * 1000 });
    for (; i < 400; i++) h.addSample({ type: 'sample', time: t(i), pad: 'x'.repeat(40) });
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
    assert.ok(lstatSync(file).isFile(), 'the history file is a file, not a symlink renamed into place');
    assert.ok(statSync(file).size <= 8192);
    assert.equal(h.problem, null);
    assert.equal(
      readdirSync(hd).filter((f) => f.endsWith('.tmp') && !lstatSync(path.join(hd, f)).isSymbolicLink()).length,
      0,
      'no temp file left',
    );
  });

  it('a hard link to another file at the history path is not written', () => {
    const hd = path.join(dir, 'history');
    mkdirSync(hd, { mode: 0o700 });
    linkSync(victim, path.join(hd, historyFileName('n')));
    const h = new HistoryStore(hd, 'n', { now });
    h.addSample({ type: 'sample', time: t() });
    assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
    assert.match(h.problem!, /other hard links/);
  });

  it('a folder other users can write to is neither read nor written, and the problem names it and the fix', () => {
    const hd = path.join(dir, 'history');
    mkdirSync(hd);
    chmodSync(hd, 0o777);
    writeFileSync(path.join(hd, historyFileName('n')), JSON.stringify({ type: 'sample', time: t() }) + '\n');
    const h = new HistoryStore(hd, 'n', { now });
    assert.equal(h.all().length, 0);
    h.addSample({ type: 'sample', time: t(1) });
    assert.equal(
      readFileSync(path.join(hd, historyFileName('n')), 'utf8')
        .split('\n')
        .filter(Boolean).length,
      1,
      'not appended to',
    );
    assert.ok(h.problem!.includes(hd), h.problem!);
    assert.match(h.problem!, /writable by other users \(mode 777\); run 'chmod 700 /);
    assert.equal(historyDirProblem(path.join(dir, 'absent')), null, 'absent: created private later');
    chmodSync(hd, 0o755);
    assert.equal(historyDirProblem(hd), null);
    assert.equal(
      new HistoryStore(hd, 'n', { now }).all().length,
      1,
      "what the user has is kept, read once the folder is the user's own again",
    );
  });

  it('cmdHistory refuses such a folder with the reason (exit 1)', () => {
    const hd = path.join(dir, 'history');
    mkdirSync(hd);
    chmodSync(hd, 0o757);
    let err = '';
    assert.equal(cmdHistory('n', { json: false, dir: hd }, { out: () => undefined, err: (s) => (err += s) }), 1);
    assert.match(err, /not reading history: the history folder .* is writable by other users/);
  });
});

describe('isHistoryEntry: the history record schema (zod)', () => {
  const t = '2026-01-01T00:00:00.000Z';
  const sample = {
    type: 'sample',
    time: t,
    reachable: true,
    servers: [{ state: 'serving', port: 30000 }],
    gpus: [{ state: 'ok' }],
    disks: [{ state: 'ok', mount: '/' }],
    job: { state: 'running', percent: null },
  };
  const cases: Array<[string, unknown, boolean, boolean]> = [
    ['a whole sample', sample, true, true],
    ['a sample without its disks', { ...sample, disks: undefined }, true, false],
    ['a sample whose servers are not objects', { ...sample, servers: [[1]] }, false, false],
    ['a sample whose server port is text', { ...sample, servers: [{ state: 'x', port: '1' }] }, false, false],
    ['a sample whose job has no percent', { ...sample, job: { state: 'running' } }, false, false],
    [
      'an unreachable sample (only its message is read)',
      { type: 'sample', time: t, reachable: false, message: null, servers: 7 },
      true,
      true,
    ],
    ['an unreachable sample with a numeric message', { type: 'sample', time: t, reachable: false, message: 7 }, false, false],
    ['a whole transition', { type: 'transition', time: t, from: 'a', to: 'b', message: 'm', class: null }, true, true],
    ['a transition without words', { type: 'transition', time: t }, true, false],
    ['a transition whose class is a number', { type: 'transition', time: t, class: 1 }, false, false],
    ['another type: only type and time', { type: 'note', time: t, anything: [1] }, true, true],
    ['no time', { type: 'note' }, false, false],
  ];
  for (const [what, e, loose, complete] of cases)
    it(`${what}: ${loose ? 'read' : 'skipped'}; ${complete ? 'printed' : 'not printed'} by the CLI's text lines`, () => {
      assert.equal(isHistoryEntry(JSON.parse(JSON.stringify(e))), loose);
      assert.equal(isHistoryEntry(JSON.parse(JSON.stringify(e)), true), complete);
    });
});
