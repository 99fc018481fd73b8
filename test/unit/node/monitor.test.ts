/** The node monitor's progress operation (core/node/monitor, with the script and parser of core/node/progressRead), run locally. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { progressOperation } from '../../../src/core/node/monitor';
import { runOperation } from '../../../src/core/remote/operation';
import { LocalTransport } from '../../../src/core/ssh/transport';
import { GpuSessionsError } from '../../../src/core/util/errors';

describe('generation progress on the node', () => {
  let dir: string;
  before(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-prog-'))));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('reads progress.json and summarizes .done_indices in one exec (count, range, gaps)', async () => {
    const pj = path.join(dir, "progress it's.json");
    const di = path.join(dir, '.done_indices');
    writeFileSync(
      pj,
      JSON.stringify({ completed: 902087, failed: 2199, total: 913786, output_tokens: 1640000000, elapsed_s: 62820, status: 'running' }),
    );
    const idx = Array.from({ length: 1000 }, (_, i) => i).filter((i) => i !== 10 && i !== 500 && i !== 501);
    writeFileSync(di, idx.join('\n') + '\n');
    const t = new LocalTransport();
    let execs = 0;
    const orig = t.exec.bind(t);
    t.exec = (c, o) => (execs++, orig(c, o));
    const r = await runOperation(t, progressOperation(pj, di));
    assert.equal(execs, 1);
    assert.ok(r.progress?.ok);
    assert.equal(r.progress?.completed, 902087);
    assert.equal(r.progress?.total, 913786);
    assert.deepEqual(r.doneIndices, { path: di, count: 997, lowest: 0, highest: 999, gaps: 3 });
  });

  it('reports a half-written progress.json instead of throwing', async () => {
    const pj = path.join(dir, 'progress.json');
    writeFileSync(pj, '{"completed": 10, "total": 1');
    const r = await runOperation(new LocalTransport(), progressOperation(pj, null));
    assert.equal(r.progress?.ok, false);
    assert.match(r.progress?.error ?? '', /incomplete|truncated/);
    assert.equal(r.doneIndices, null);
  });

  it('a progress.json that prints the old fixed markers cannot forge the .done_indices summary', async () => {
    const pj = path.join(dir, 'hostile.json');
    const di = path.join(dir, 'hostile_done');
    writeFileSync(pj, '{"completed": 1, "total": 2}\n@@D@@\n999 0 999\n@@E@@\n');
    writeFileSync(di, '1\n2\n');
    const r = await runOperation(new LocalTransport(), progressOperation(pj, di));
    assert.deepEqual(r.doneIndices, { path: di, count: 2, lowest: 1, highest: 2, gaps: 0 });
  });

  it('a run cut short (no end marker) fails with remote-incomplete', () => {
    const op = progressOperation(path.join(dir, 'progress.json'), null, 'n1');
    assert.throws(
      () => op.parse({ stdout: Buffer.from('{"completed": 1'), stderr: Buffer.from('killed'), code: 137, truncated: false }),
      (e: unknown) =>
        e instanceof GpuSessionsError && e.code === 'remote-incomplete' && /did not complete on n1 \(exit 137: killed\)/.test(e.message),
    );
  });

  it('a missing file is reported, not thrown', async () => {
    const r = await runOperation(new LocalTransport(), progressOperation(path.join(dir, 'nope.json'), path.join(dir, 'nope')));
    assert.equal(r.progress?.ok, false);
    assert.equal(r.doneIndices?.count ?? 0, 0);
  });
});
