import * as assert from 'node:assert/strict';
import { adaptProfile } from '../../../src/core/restore/launchAdapt';
import type { LaunchProfile } from '../../../src/core/launch/profile';

const group = (x: Partial<LaunchProfile>): LaunchProfile => ({
  modelPath: '/root/models/Qwen3.6-27B',
  gpus: [0, 1, 2, 3],
  layout: 'per-gpu',
  basePort: 30000,
  extraArgs: [],
  env: {},
  ...x,
});
const maps = [{ from: '/root', to: '/home/u' }];
const facts = (gpus: number[], busy: number[] = [], listening: number[] = []) => ({ home: '/home/u', gpus, busyGpus: busy, listening });

describe('restore launch adaptation', () => {
  it('re-assigns GPUs one server per disjoint set, keeps free ports, maps the model path', () => {
    const r = adaptProfile(
      [group({ gpus: [4, 5, 6, 7] }), group({ layout: 'single', tp: 2, gpus: [0, 1], basePort: 31000 })],
      maps,
      facts([0, 1, 2, 3, 4, 5, 6, 7]),
      'n',
    );
    assert.deepEqual(
      r.groups.map((g) => g.gpus),
      [
        [0, 1, 2, 3],
        [4, 5],
      ],
    );
    assert.deepEqual(
      r.groups.map((g) => g.basePort),
      [30000, 31000],
    );
    assert.equal(r.groups[0].modelPath, '/home/u/models/Qwen3.6-27B');
  });

  it('skips GPUs in use and moves a port block that is taken', () => {
    const r = adaptProfile([group({ gpus: [0, 1] })], maps, facts([0, 1, 2, 3], [0], [30001]), 'n');
    assert.deepEqual(r.groups[0].gpus, [1, 2]);
    assert.equal(r.groups[0].basePort, 30002);
    assert.ok(r.notes.some((n) => /port 30000 is in use/.test(n)));
  });

  it('refuses when the new node has fewer free GPUs than the run used, naming them', () => {
    assert.throws(
      () => adaptProfile([group({ gpus: [0, 1, 2, 3] })], maps, facts([0, 1]), 'small'),
      /used 4 GPU\(s\); small has 2 free \(0,1\)/,
    );
    assert.throws(() => adaptProfile([group({})], maps, { ...facts([]), gpus: null }, 'x'), /lists no GPU/);
  });

  it('--fill adds instances until every free GPU serves', () => {
    const per = adaptProfile([group({ gpus: [0, 1] })], maps, facts([0, 1, 2, 3, 4, 5, 6, 7]), 'n', true);
    assert.deepEqual(
      per.groups.flatMap((g) => g.gpus as number[]),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    const ports = per.groups.flatMap((g) => (g.gpus as number[]).map((_, k) => g.basePort + k));
    assert.equal(new Set(ports).size, 8);
    const single = adaptProfile([group({ layout: 'single', tp: 2, gpus: [0, 1] })], maps, facts([0, 1, 2, 3, 4]), 'n', true);
    assert.deepEqual(
      single.groups.map((g) => g.gpus),
      [
        [0, 1],
        [2, 3],
      ],
    );
  });
});
