/**
 * Model weights stay on the node only on evidence (issue 23 item 2): a model folder's small files are salvaged,
 * its weights are `on-the-hub` (HF cache entry, or the download metadata `huggingface-cli download --local-dir`
 * writes, read by the real script here), `in-s3`, or `origin-unknown` — which makes the verdict unsafe.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { classifyFile } from '../../../../src/core/flows/salvage';
import {
  downloadMetadataScript,
  hubCacheOrigin,
  parseDownloadMetadata,
  settleWeightsInS3,
  uniqueWeightsMessage,
} from '../../../../src/core/salvage/plan/weights';

const REV = 'b968826d9c46dd6066d109eabc6255188de91218';
const MiB = 1024 * 1024;

describe('model weights: left only on evidence (issue 23)', () => {
  it('a model folder’s small files are salvaged; its weights without evidence are origin-unknown', () => {
    const dirs = ['/w/ft-model'];
    const small = classifyFile({ path: '/w/ft-model/config.json', kind: 'data', size: 500, mtime: '' }, 256 * MiB, dirs);
    assert.equal(small.leftReason, null);
    for (const n of ['tokenizer.json', 'chat_template.jinja', 'tokenizer_config.json'])
      assert.equal(classifyFile({ path: `/w/ft-model/${n}`, kind: 'other', size: 9 * MiB, mtime: '' }, 256 * MiB, dirs).leftReason, null);
    const w = classifyFile({ path: '/w/ft-model/model.safetensors', kind: 'model', size: 5 * MiB, mtime: '' }, 256 * MiB, dirs);
    assert.equal(w.leftReason, 'origin-unknown');
    assert.match(w.reason!, /--leave \/w\/ft-model/);
    // anything above the threshold in a model folder counts as weights too
    const big = classifyFile({ path: '/w/ft-model/shard.data', kind: 'other', size: 300 * MiB, mtime: '' }, 256 * MiB, dirs);
    assert.equal(big.leftReason, 'origin-unknown');
  });

  it('an HF cache entry names repo and revision; download metadata vouches for its file only', () => {
    const p = '/w/hf/hub/models--Qwen--Qwen3-0.6B/snapshots/c1899de/model.safetensors';
    assert.deepEqual(hubCacheOrigin(p), {
      repo: 'Qwen/Qwen3-0.6B',
      revision: 'c1899de',
      evidence: '/w/hf/hub/models--Qwen--Qwen3-0.6B/snapshots/c1899de',
    });
    const c = classifyFile({ path: p, kind: 'model', size: 5 * MiB, mtime: '' }, 256 * MiB, []);
    assert.equal(c.leftReason, 'on-the-hub');
    assert.match(c.reason!, /Qwen\/Qwen3-0\.6B at revision c1899de/);
    const meta = new Map([
      [
        '/m/q/model-1.safetensors',
        { repo: null, revision: REV, evidence: '/m/q/.cache/huggingface/download/model-1.safetensors.metadata' },
      ],
    ]);
    const on = classifyFile({ path: '/m/q/model-1.safetensors', kind: 'model', size: 5 * MiB, mtime: '' }, 256 * MiB, ['/m/q'], meta);
    assert.equal(on.leftReason, 'on-the-hub');
    assert.match(on.reason!, new RegExp(`revision ${REV}`));
    // a checkpoint saved into the same folder later has no metadata of its own
    const ft = classifyFile({ path: '/m/q/finetuned.safetensors', kind: 'model', size: 5 * MiB, mtime: '' }, 256 * MiB, ['/m/q'], meta);
    assert.equal(ft.leftReason, 'origin-unknown');
  });

  it('the listing script reads the download metadata of each model folder (real sh, hostile names too)', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs23-meta-'));
    try {
      const m = path.join(dir, 'model q');
      const dl = path.join(m, '.cache/huggingface/download');
      mkdirSync(path.join(dl, 'sub'), { recursive: true });
      writeFileSync(path.join(dl, 'model-1.safetensors.metadata'), `${REV}\n"etag"\n1764633600.0\n`);
      writeFileSync(path.join(dl, 'sub', 'odd\nname.bin.metadata'), `${REV}\n"etag"\n1.0\n`);
      writeFileSync(path.join(dl, 'bad.bin.metadata'), `not a revision\n`);
      const models = path.join(dir, 'm.tsv');
      writeFileSync(models, `server\t${m}\nscript\t${m}\nserver\t${path.join(dir, 'none')}\n`);
      const r = spawnSync('sh', ['-s'], { input: downloadMetadataScript(models) });
      assert.equal(r.status, 0, r.stderr.toString());
      const { origins: got, files } = parseDownloadMetadata('\n' + r.stdout.toString('utf8'));
      assert.deepEqual([...got.keys()].sort(), [`${m}/model-1.safetensors`, `${m}/sub/odd\nname.bin`]);
      assert.equal(got.get(`${m}/model-1.safetensors`)!.revision, REV);
      // the metadata files themselves, to come home as the evidence (issue 40 item 5)
      const ev = files.find((f) => f.path === `${dl}/model-1.safetensors.metadata`);
      assert.ok(ev, JSON.stringify(files));
      assert.equal(ev.size, `${REV}\n"etag"\n1764633600.0\n`.length);
      assert.match(ev.mtime ?? '', /^20\d\d-/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('unknown-origin weights: unique-weights names the folder and size unless accepted; S3 turns them in-s3', () => {
    const item = (p: string, size: number, extra = {}) => ({
      remotePath: p,
      size,
      selected: false,
      leftReason: 'origin-unknown' as string | null,
      reason: 'x' as string | null,
      s3: 'missing',
      ...extra,
    });
    const items = [item('/w/ft/a.safetensors', 2 * MiB), item('/w/ft/b.safetensors', 3 * MiB)];
    assert.match(uniqueWeightsMessage(items, ['/w/ft'])!, /\/w\/ft \(2 file\(s\), 5\.0 MiB\).*--leave \/w\/ft/);
    assert.equal(
      uniqueWeightsMessage(
        items.map((i) => ({ ...i, leaveAccepted: true })),
        ['/w/ft'],
      ),
      null,
    );
    items[0].s3 = 'present';
    items[1].s3 = 'present';
    settleWeightsInS3(items);
    assert.deepEqual(
      items.map((i) => i.leftReason),
      ['in-s3', 'in-s3'],
    );
    assert.equal(uniqueWeightsMessage(items, ['/w/ft']), null);
  });
});
