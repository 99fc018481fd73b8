/** What Release Node did on purpose: its removals neutral, the rank loss it predicted expected (issue 43, item 4). */
import * as assert from 'node:assert/strict';
import { ReleasedByYou } from '../../../src/extension/releasedByYou';

describe('ReleasedByYou', () => {
  it('a removed worker is known by its guard key on that gateway node, for an hour', () => {
    const r = new ReleasedByYou();
    r.markRemoved('gw', 'http://10.0.0.2:30001', 8000, 1000);
    assert.equal(r.removedAt('gw', 'gateway:8000:http://10.0.0.2:30001', 2000), 1000);
    assert.equal(r.removedAt('other', 'gateway:8000:http://10.0.0.2:30001', 2000), undefined);
    assert.equal(r.removedAt('gw', 'gateway:8000:http://10.0.0.2:30002', 2000), undefined);
    assert.equal(r.removedAt('gw', 'gateway:8000', 2000), undefined, 'the gateway itself is no worker');
    assert.equal(r.removedAt('gw', 'gateway:8000:http://10.0.0.2:30001', 1000 + 3600_000), undefined);
    r.unmarkRemoved('gw', 'http://10.0.0.2:30001');
    assert.equal(r.removedAt('gw', 'gateway:8000:http://10.0.0.2:30001', 2000), undefined);
  });

  it('its removals on one gateway node, by guard key, with their port (a row even when the guard never saw the worker)', () => {
    const r = new ReleasedByYou();
    r.markRemoved('gw', 'http://127.0.0.1:30001', 8000, 1000);
    r.markRemoved('gw', 'http://127.0.0.1:30002', null, 1000);
    r.markRemoved('other', 'http://127.0.0.1:30003', 9000, 1000);
    assert.deepEqual(r.removals('gw', 2000), [
      { key: 'gateway:8000:http://127.0.0.1:30001', url: 'http://127.0.0.1:30001', port: 8000, at: 1000 },
    ]);
    assert.deepEqual(r.removals('gw', 1000 + 3600_000), [], 'forgotten after an hour');
    r.unmarkRemoved('gw', 'http://127.0.0.1:30001');
    assert.deepEqual(r.removals('gw', 2000), []);
  });

  it('a rank loss on a released node is expected; on another node it is not', () => {
    const r = new ReleasedByYou();
    r.markReleased('gpu-b', 0);
    const msg = (n: string) => `multi-node server :30000 (2 nodes, 10.0.0.1:5000) lost rank 1 (on ${n}): the whole server is failing`;
    assert.equal(r.expectedRankLoss(msg('gpu-b'), 10), 'gpu-b');
    assert.equal(r.expectedRankLoss(msg('gpu-c'), 10), undefined);
    assert.equal(r.expectedRankLoss(msg('gpu-b'), 3600_000), undefined);
  });

  it("a gateway the release left with no healthy worker: its 'not ready' is expected on that gateway only, for an hour", () => {
    const r = new ReleasedByYou();
    assert.equal(r.expectedNotReady('gw', 8000, 0), undefined, 'nothing marked: an alert as ever');
    r.markEmptied('gw', 8000, 'gpu-b', 0);
    assert.equal(r.expectedNotReady('gw', 8000, 10), 'gpu-b');
    assert.equal(r.expectedNotReady('gw', 8001, 10), undefined);
    assert.equal(r.expectedNotReady('other', 8000, 10), undefined);
    assert.equal(r.expectedNotReady('gw', 8000, 3600_000), undefined);
    assert.deepEqual(r.emptiedAt('gw', 'gateway:8000', 10), { node: 'gpu-b', at: 0 }, 'the row of its guard key');
    assert.equal(r.emptiedAt('gw', 'gateway:8000:http://10.0.0.2:30001', 10), undefined, 'a worker key is no gateway');
  });
});
