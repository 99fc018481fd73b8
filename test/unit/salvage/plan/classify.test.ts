import assert from 'node:assert/strict';
import { classifyFile, writerInfo } from '../../../../src/core/salvage/plan/classify';
import type { ListedFile, Writer } from '../../../../src/core/salvage/plan/listing';
import { planted } from '../../../helpers/planted';

const MiB = 1024 * 1024;
const file = (p: string, size: number, kind: ListedFile['kind'] = 'data'): ListedFile => ({
  path: p,
  kind,
  size,
  mtime: '2026-11-29T12:00:00Z',
});

describe('classifying a listed file (classify)', () => {
  it('selects small files, leaves secret stores and large files with a reason', () => {
    assert.deepEqual(classifyFile(file('/root/out/a.jsonl', 10), 256 * MiB, []), { leftReason: null, jobWeights: false, reason: null });
    const key = classifyFile(file('/root/.ssh/id_ed25519', 400, 'other'), 256 * MiB, []);
    assert.equal(key.leftReason, 'secret-store');
    const big = classifyFile(file('/root/out/huge.bin', 300 * MiB), 256 * MiB, []);
    assert.equal(big.leftReason, 'large');
    assert.match(big.reason ?? '', /larger than the 256(\.0)? MiB threshold/);
    const ckpt = classifyFile(file('/root/ckpt/adapter.safetensors', 300 * MiB, 'model'), 256 * MiB, []);
    assert.equal(ckpt.jobWeights, true);
    assert.match(ckpt.reason ?? '', /NOT re-downloadable/);
  });

  it('a model folder keeps its small files; its weights need evidence to stay', () => {
    const dirs = ['/models/llama'];
    assert.equal(classifyFile(file('/models/llama/config.json', 800, 'config'), 256 * MiB, dirs).leftReason, null);
    const w = classifyFile(file('/models/llama/model-00001-of-00002.safetensors', 900 * MiB, 'model'), 256 * MiB, dirs);
    assert.equal(w.leftReason, 'origin-unknown');
    assert.equal(w.jobWeights, false);
  });

  it('names a writer with its argv redacted and bounded', () => {
    const key = planted('sk-', 'abcdefghijklmnopqrstuvwxyz123456');
    const w = writerInfo({
      pid: 7,
      argv: ['python3', 'gen.py', '--api-key', key],
      writes: ['/root/out/a.jsonl'],
      server: false,
    } satisfies Writer);
    assert.equal(w.pid, 7);
    assert.ok(!w.command.includes(key), 'the key is redacted');
    assert.deepEqual(w.writes, ['/root/out/a.jsonl']);
  });
});
