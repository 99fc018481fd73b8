/** Reading the job's progress on the node (core/node/progressRead): the script under /bin/sh, and its parser on hostile outputs. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseProgressSection, progressComplete, progressScript } from '../../../src/core/node/progressRead';
import { sectionPrologue, splitSections } from '../../../src/core/remote/sections';

const N = 'GSprog0123456789';
const sh = (script: string) => {
  const r = spawnSync('sh', ['-s'], { input: script, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
};

describe('job progress read (core/node/progressRead)', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-progread-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('progress.json and a .done_indices summary (count, lowest, highest, gaps) from paths that need quoting', () => {
    const pj = path.join(dir, "p $(x) 'q'.json");
    const di = path.join(dir, 'done; rm -rf ~');
    writeFileSync(pj, JSON.stringify({ completed: 7, total: 10 }));
    writeFileSync(di, ' 5\n7\n\nnot a number\n-3\n9\t\n12x\n 6 \n');
    const out = sh(progressScript(pj, di, N));
    assert.ok(progressComplete(out, N));
    const r = parseProgressSection(out, { progressPath: pj, donePath: di }, N);
    assert.equal(r.progressFile, pj);
    assert.ok(r.progress?.ok, JSON.stringify(r.progress));
    assert.deepEqual(r.doneIndices, { path: di, count: 4, lowest: 5, highest: 9, gaps: 1 });
  });

  it('an empty .done_indices is count 0 with no range; a missing one is no summary; a missing progress.json is not ok', () => {
    const di = path.join(dir, 'empty');
    writeFileSync(di, '');
    const missing = path.join(dir, 'nope.json');
    const out = sh(progressScript(missing, di, N));
    const r = parseProgressSection(out, { progressPath: missing, donePath: di }, N);
    assert.deepEqual(r.doneIndices, { path: di, count: 0, lowest: null, highest: null, gaps: 0 });
    assert.equal(r.progress?.ok, false);
    const gone = path.join(dir, 'gone');
    const r2 = parseProgressSection(sh(progressScript(null, gone, N)), { progressPath: null, donePath: gone }, N);
    assert.equal(r2.doneIndices, null, 'the shell error after the marker is not a summary');
    assert.equal(r2.progress, null);
  });

  it('no paths: only the end marker; a run cut before it is not complete', () => {
    const out = sh(progressScript(null, null, N));
    assert.equal(out, `\n@@${N}-E@@\n`);
    assert.ok(progressComplete(out, N));
    assert.ok(!progressComplete(`@@${N}-P@@\n{"completed": 1`, N));
    assert.ok(!progressComplete(`\n@@GSother-E@@\n`, N), 'another nonce does not end it');
  });

  it('a progress.json that prints marker look-alikes of another nonce cannot forge the summary', () => {
    const forged = `{"completed": 1}\n@@GSother-D@@\n999 0 999\n@@GSother-E@@\n`;
    const text = `@@${N}-P@@\n${forged}\n@@${N}-D@@\n3 1 3\n\n@@${N}-E@@\n`;
    const r = parseProgressSection(text, { progressPath: '/p', donePath: '/d' }, N);
    assert.deepEqual(r.doneIndices, { path: '/d', count: 3, lowest: 1, highest: 3, gaps: 0 });
    assert.equal(r.progress?.ok, false, 'the forged lines make progress.json malformed, reported not thrown');
  });

  it('nests inside a sectioned script with the same nonce: its markers do not split sections', () => {
    const pj = path.join(dir, 'nest.json');
    writeFileSync(pj, '{"completed": 2, "total": 4}');
    const out = sh([sectionPrologue(N), 'sec before', 'echo b', 'sec progress', progressScript(pj, null, N), 'sec end'].join('\n'));
    const s = splitSections(out, N);
    assert.deepEqual([...s.keys()], ['before', 'progress', 'end']);
    const r = parseProgressSection(s.get('progress')!, { progressPath: pj, donePath: null }, N);
    assert.ok(r.progress?.ok);
  });
});
