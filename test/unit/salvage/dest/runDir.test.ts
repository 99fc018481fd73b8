import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { chooseRunDir, safeNodeName, sha256File, writeAtomic } from '../../../../src/core/salvage/dest/runDir';

describe('salvage run folder (runDir)', () => {
  it('continues the latest run folder of the node (safe or not), so a rerun transfers only what changed', () => {
    const base = mkdtempSync(path.join(os.tmpdir(), 'gs-runs-'));
    try {
      const now = new Date(2026, 10, 29, 12, 0, 0);
      const a = chooseRunDir(base, 'node/1', now);
      assert.equal(path.basename(path.dirname(a.dir)), 'node_1');
      mkdirSync(a.dir, { recursive: true });
      writeFileSync(path.join(a.dir, 'salvage-manifest.json'), JSON.stringify({ verdict: 'unsafe', finishedAt: 'x', items: [] }));
      assert.equal(chooseRunDir(base, 'node/1', new Date(2026, 10, 29, 13, 0, 0)).dir, a.dir);
      writeFileSync(path.join(a.dir, 'salvage-manifest.json'), JSON.stringify({ verdict: 'safe', finishedAt: 'x', items: [] }));
      const again = chooseRunDir(base, 'node/1', new Date(2026, 10, 29, 13, 0, 0));
      assert.equal(again.dir, a.dir);
      assert.equal(again.previous?.verdict, 'safe');
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('names the node folder safely: no separators, no leading dots, never empty', () => {
    assert.equal(safeNodeName('user@gpu-1.example'), 'user@gpu-1.example');
    assert.equal(safeNodeName('a/b c'), 'a_b_c');
    assert.equal(safeNodeName('..'), '_');
    assert.equal(safeNodeName(''), 'node');
  });

  it('writes atomically (no temporary left) and hashes a file, whole or a prefix', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-rundir-'));
    try {
      const f = path.join(dir, 'm.json');
      writeAtomic(f, 'hello world');
      assert.equal(readFileSync(f, 'utf8'), 'hello world');
      assert.deepEqual(readdirSync(dir), ['m.json'], 'no temporary file left beside it');
      assert.equal(await sha256File(f), 'b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9');
      assert.equal(await sha256File(f, 5), '2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824');
      assert.equal(await sha256File(path.join(dir, 'missing')), null);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
