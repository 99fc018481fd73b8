import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BATCH_BYTES, BATCH_FILES, chooseRunDir, planBatches, renderServersScript, stepOf } from '../../../src/core/salvage/salvage';
import { classifySalvage } from '../../../src/core/salvage/listing';
import { planted } from '../../helpers/planted';
import { server } from '../../helpers/sglangServer';

const SK_PLANTED = planted('sk-', 'abcdefghijklmnopqrstuvwxyz123456');

describe('salvage building blocks', () => {
  it('plans tar batches: even, a multiple of the streams, within the file and byte bounds, order kept', () => {
    const files = (n: number, size = 8192) => Array.from({ length: n }, (_, i) => ({ i, size }));
    const check = (bs: Array<Array<{ i: number; size: number }>>, all: Array<{ i: number }>) => {
      assert.deepEqual(
        bs.flat().map((f) => f.i),
        all.map((f) => f.i),
      );
      for (const b of bs) {
        assert.ok(b.length <= BATCH_FILES);
        assert.ok(b.length === 1 || b.reduce((a, f) => a + f.size, 0) <= BATCH_BYTES);
      }
    };
    const a = files(5000);
    const bs = planBatches(a, 3);
    check(bs, a);
    assert.equal(bs.length % 3, 0);
    assert.ok(Math.max(...bs.map((b) => b.length)) - Math.min(...bs.map((b) => b.length)) <= 1, 'even batches');
    assert.equal(planBatches(a, 4).length, 4);
    assert.equal(planBatches(files(2 * BATCH_FILES + 1), 1).length, 3);
    // Few files: fewer streams, never empty batches.
    assert.equal(planBatches(files(30), 4).length, 1);
    assert.equal(planBatches(files(120), 4).length, 2);
    assert.deepEqual(planBatches([], 3), []);
    // The byte bound cuts too: 40 files of 4 MiB.
    const big = files(40, 4 * 1024 * 1024);
    check(planBatches(big, 3), big);
  });

  it('classifies what salvage considers and maps kinds to checklist steps', () => {
    assert.equal(classifySalvage('/root/completions/batch_000001.jsonl'), 'data');
    assert.equal(classifySalvage('/dev/shm/model/model-00001-of-00011.safetensors'), 'model');
    assert.equal(classifySalvage('/root/launch_tuned.sh'), 'launch-script');
    assert.equal(classifySalvage('/root/.bash_history'), 'other');
    assert.equal(classifySalvage('/workspace/Makefile'), 'other');
    assert.equal(stepOf('launch-script'), 'scripts');
    assert.equal(stepOf('progress'), 'logs');
    assert.equal(stepOf('patch'), 'configs');
    assert.equal(stepOf('data'), 'data');
  });

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

  it('writes the running servers as a script with quoted, redacted argv', () => {
    const s = renderServersScript('n', [
      server(1, 30000, ['python3', '-m', 'sglang.launch_server', '--model-path', '/m x', '--api-key', SK_PLANTED], {
        modelPath: '/m x',
        logFile: '/root/a b.log',
        cudaVisibleDevices: '0',
        gpus: [0],
      }),
    ]);
    assert.match(s, /CUDA_VISIBLE_DEVICES=0 nohup python3 -m sglang\.launch_server --model-path '\/m x' --api-key/);
    assert.ok(!s.includes(SK_PLANTED), 'the key is not in the script');
    assert.match(s, /> '\/root\/a b\.log' 2>&1 &/);
  });
});
