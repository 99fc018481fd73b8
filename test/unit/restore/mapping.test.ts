import * as assert from 'node:assert/strict';
import { mapOf, mapPath, parseMapOption, resolveMaps } from '../../../src/core/restore/mapping';

describe('restore folder mapping', () => {
  it('parses --map OLD=NEW and refuses relative folders and ..', () => {
    assert.deepEqual(parseMapOption('/workspace/=/data/ws'), { from: '/workspace', to: '/data/ws' });
    assert.throws(() => parseMapOption('workspace=/x'), /absolute/);
    assert.throws(() => parseMapOption('/a/../b=/x'), /"\.\."|contains/);
    assert.throws(() => parseMapOption('/a'), /OLD=NEW/);
    assert.throws(() => parseMapOption('/a='), /OLD=NEW/);
  });

  it('maps by the longest folder, never a mere name prefix', () => {
    const maps = [
      { from: '/root', to: '/home/ubuntu' },
      { from: '/root/.sim', to: '/home/ubuntu/old-sim' },
    ];
    assert.equal(mapPath('/root/job/a b.log', maps), '/home/ubuntu/job/a b.log');
    assert.equal(mapPath('/root/.sim/env.sh', maps), '/home/ubuntu/old-sim/env.sh');
    assert.equal(mapPath('/rootfs/x', maps), null);
    assert.equal(mapPath('/root', maps), '/home/ubuntu');
    assert.equal(mapOf('/root/.sim/x', maps)?.from, '/root/.sim');
  });

  it('the old home maps to the new home by default; other roots stay where they were', () => {
    const maps = resolveMaps([{ from: '/workspace', to: '/data/ws' }], '/root', '/home/u', ['/root', '/workspace', '/scratch']);
    assert.deepEqual(maps, [
      { from: '/workspace', to: '/data/ws' },
      { from: '/root', to: '/home/u' },
      { from: '/scratch', to: '/scratch' },
    ]);
    // A user map of the home wins over the default.
    assert.deepEqual(resolveMaps([{ from: '/root', to: '/mnt/x' }], '/root', '/home/u', ['/root'])[0], { from: '/root', to: '/mnt/x' });
  });
});
