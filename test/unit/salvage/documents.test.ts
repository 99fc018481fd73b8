/**
 * The documents a run folder holds, read back through their zod schemas: a valid one reads as it was written (fields
 * this version does not know kept), a damaged one is refused with the file and the field named, never overwritten.
 */
import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { MANIFEST_FILE, newManifest, parseManifest, readManifest } from '../../../src/core/salvage/manifestSchema';
import { parseEnvironment, environmentSchema } from '../../../src/core/salvage/snapshot/environmentSchema';
import { chooseRunDir } from '../../../src/core/salvage/dest/runDir';
import { journalLine } from '../../../src/core/salvage/dest/journal';
import { uploadPartsSchema } from '../../../src/core/salvage/s3/upload';
import { pendingUploads } from '../../../src/core/salvage/s3/s3Step';
import type { Logger } from '../../../src/core/util/logger';
import { readRun } from '../../../src/core/flows/restore';
import { GpuSessionsError } from '../../../src/core/util/errors';
import { type Reads, documentProblem, fieldPath, parseDocument } from '../../../src/core/util/document';
import type { SalvageItem } from '../../../src/core/salvage/salvageTypes';

const item = (remotePath: string, extra: Partial<SalvageItem> = {}): SalvageItem => ({
  remotePath,
  localPath: `files${remotePath}`,
  kind: 'data',
  step: 'data',
  size: 10,
  mtime: '2026-12-04T10:00:00Z',
  sha256: 'a'.repeat(64),
  selected: true,
  status: 'verified',
  reason: null,
  leftReason: null,
  s3: 'unknown',
  ...extra,
});

const manifest = () => ({
  ...newManifest({ node: 'n1', host: { host: 'h', port: 22 }, startedAt: 'T0', dest: '/d', sizeThreshold: 1, stepStatus: 'pending' }),
  items: [item('/w/a'), item('/w/b'), item('/w/c'), item('/w/d')],
  environment: { json: 'environment.json', md: 'ENVIRONMENT.md', summary: 's' },
});

/** The error `fn` throws, which must be a GpuSessionsError. */
function thrown(fn: () => unknown): GpuSessionsError {
  try {
    fn();
  } catch (e) {
    assert.ok(e instanceof GpuSessionsError, String(e));
    return e;
  }
  assert.fail('did not throw');
}

describe('documents read back through their schemas (core/util/document, salvage/*Schema)', () => {
  let dir = '';
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'gs-docs-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('names a field by its path: items[3].sha256, a key that is not an identifier quoted, the document itself', () => {
    assert.equal(fieldPath(['items', 3, 'sha256']), 'items[3].sha256');
    assert.equal(fieldPath(['restore', 'modes', '/w/a b']), 'restore.modes["/w/a b"]');
    assert.equal(fieldPath([]), '(the document)');
  });

  it('salvage manifest: a valid one round-trips as written, with the fields this version does not know kept', () => {
    const m = { ...manifest(), fromLaterVersion: { x: 1 } };
    const text = JSON.stringify(m, null, 2);
    assert.deepEqual(parseManifest(text, MANIFEST_FILE), m);
    assert.equal(JSON.stringify(parseManifest(text, MANIFEST_FILE), null, 2), text, 'byte for byte');
    // older and hand-made run folders: roots as strings, host as a string, steps and counters missing
    assert.equal(parseManifest(JSON.stringify({ node: 'n', host: 'old', roots: ['/w'], items: [] }), 'f').host, 'old');
  });

  it('salvage manifest: a damaged one names the file and the field and says what to do', () => {
    const m = manifest() as unknown as { items: Array<Record<string, unknown>> };
    m.items[3].sha256 = 5;
    const e = thrown(() => parseManifest(JSON.stringify(m), 'salvage-manifest.json'));
    assert.equal(
      e.message,
      'salvage-manifest.json: items[3].sha256: expected a string, got the number 5 — the file is damaged; delete it (or its run folder) to start over',
    );
    assert.equal(e.code, 'config');
    delete m.items[1].remotePath;
    assert.match(
      thrown(() => parseManifest(JSON.stringify(m), 'f')).message,
      /^f: items\[1\]\.remotePath: missing \(expected a string\) — /,
    );
    assert.match(thrown(() => parseManifest('{"items": "x"}', 'f')).message, /^f: items: expected a list, got the string "x" — /);
    assert.match(
      thrown(() => parseManifest('{"items": [], "verdict": "maybe"}', 'f')).message,
      /^f: verdict: expected one of "safe", "unsafe", got the string "maybe"/,
    );
    assert.match(thrown(() => parseManifest('{"items": [', 'f')).message, /^f: not JSON \(.*\) — the file is damaged/);
    assert.match(thrown(() => parseManifest('[]', 'f')).message, /^f: \(the document\): expected an object, got a list/);
  });

  it('the previous run: none is null, a damaged manifest is refused and left as it was (never overwritten)', () => {
    const run = path.join(dir, 'n1', '20261204-100000');
    mkdirSync(run, { recursive: true });
    assert.equal(readManifest(run), null, 'no manifest yet: the run died before writing one');
    assert.equal(chooseRunDir(dir, 'n1', new Date()).previous, null);
    const bad = JSON.stringify({ ...manifest(), items: [{ ...item('/w/a'), size: '10' }] });
    writeFileSync(path.join(run, MANIFEST_FILE), bad);
    const e = thrown(() => chooseRunDir(dir, 'n1', new Date()));
    assert.equal(
      e.message,
      `${path.join(run, MANIFEST_FILE)}: items[0].size: expected a number, got the string "10" — the file is damaged; delete it (or its run folder) to start over`,
    );
    assert.equal(readFileSync(path.join(run, MANIFEST_FILE), 'utf8'), bad, 'left as it was');
    writeFileSync(path.join(run, MANIFEST_FILE), JSON.stringify(manifest()));
    assert.equal(chooseRunDir(dir, 'n1', new Date()).previous?.items.length, 4);
  });

  it('restore: a damaged run folder is a usage error naming the file and the field; a manifest without a node too', () => {
    writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify({ ...manifest(), restore: { modes: { '/w/a': 755 } } }));
    const e = thrown(() => readRun(dir));
    assert.equal(e.code, 'usage');
    assert.match(e.message, /salvage-manifest\.json: restore\.modes\["\/w\/a"\]: expected a string, got the number 755 — /);
    writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify({ items: [] }));
    assert.match(thrown(() => readRun(dir)).message, /salvage-manifest\.json: node: missing \(expected a string\) — /);
    writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify(manifest()));
    assert.equal(readRun(dir).node, 'n1');
  });

  it('journal lines: a valid one reads back; a damaged one says which field (and is skipped by resume)', () => {
    const line = {
      p: '/w/a',
      l: 'files/w/a',
      s: 7,
      m: 'T',
      h: 'a'.repeat(64),
      k: 'data',
      st: 'data',
      t: '',
      sec: [{ line: 3, kind: 'aws' }],
    };
    assert.deepEqual(journalLine(JSON.stringify(line)), line);
    assert.equal(journalLine(JSON.stringify({ ...line, s: 'seven' })), 's: expected a number, got the string "seven"');
    assert.equal(
      journalLine(JSON.stringify({ ...line, sec: [{ line: '3', kind: 'aws' }] })),
      'sec[0].line: expected a number, got the string "3"',
    );
    assert.equal(journalLine('{"p":"/w/torn","l":"fi'), 'not JSON (a torn line)');
  });

  it('upload-parts.json: a valid one resumes the uploads; a damaged one is named in a warning and the uploads start again', () => {
    const parts = { 'k/a': { uploadId: 'u1', size: 100, partSize: 50, etags: { '1': '"e1"' } } };
    assert.deepEqual(parseDocument(uploadPartsSchema, JSON.stringify(parts), 'upload-parts.json'), parts);
    const warned: string[] = [];
    const log = { warn: (m: string) => warned.push(m) } as unknown as Logger;
    writeFileSync(path.join(dir, 'upload-parts.json'), JSON.stringify(parts));
    assert.deepEqual(pendingUploads(dir, log).get('k/a'), parts['k/a']);
    assert.deepEqual(warned, []);
    writeFileSync(path.join(dir, 'upload-parts.json'), JSON.stringify({ 'k/a': { ...parts['k/a'], etags: { '1': 7 } } }));
    assert.equal(pendingUploads(dir, log).get('k/a'), undefined);
    assert.equal(warned.length, 1);
    assert.match(warned[0], /upload-parts\.json: \["k\/a"\]\.etags\["1"\]: expected a string, got the number 7 — the unfinished uploads/);
  });

  it('environment.json: a valid one round-trips; a damaged one names the file and the field', () => {
    const snap = { takenAt: 'T', node: 'n1', uptimeS: 60, servers: [{ pid: 1, port: 30000, alive: true }], extra: [1] };
    assert.deepEqual(parseEnvironment(JSON.stringify(snap), 'environment.json'), snap);
    assert.equal(
      thrown(() => parseEnvironment(JSON.stringify({ ...snap, servers: [{ pid: 1, port: 'x' }] }), 'environment.json')).message,
      'environment.json: servers[0].port: expected a number, got the string "x"',
    );
    assert.equal(documentProblem(environmentSchema, { uptimeS: null }), null);
  });

  it('the compile-time check refuses a written type the schema would not read', () => {
    type Good = Reads<typeof environmentSchema, { servers: Array<{ pid: number; port: number }> }>;
    // @ts-expect-error a port written as a string is not one the schema reads
    type Bad = Reads<typeof environmentSchema, { servers: Array<{ pid: number; port: string }> }>;
    const g: Good = { servers: [] };
    const b: Bad = { servers: [] };
    assert.deepEqual([g, b], [{ servers: [] }, { servers: [] }]);
  });
});
