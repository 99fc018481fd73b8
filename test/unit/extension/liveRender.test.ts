import * as assert from 'node:assert/strict';
import { LiveRender } from '../../../src/extension/tree/liveRender';
import type { TreeNode } from '../../../src/extension/tree/types';

/** The tree re-renders a row only when what it shows changed, at most once per window (issue 30). */
describe('LiveRender: live rows keep their objects; re-rendered only when a shown value changes', () => {
  const node: TreeNode = { type: 'node', node: { name: 'n', host: 'h', port: 22, source: 'settings' } as never };
  const rowA: TreeNode = { type: 'info', node: 'n', label: 'a', live: 'progress' };
  const rowB: TreeNode = { type: 'info', node: 'n', label: 'b', live: 'deadline' };
  let shown: Record<string, string>;
  let kids: TreeNode[];
  let fired: (TreeNode[] | undefined)[];
  const make = (ms: number, figuresMs = 0) =>
    new LiveRender(
      {
        render: (el) =>
          ({
            id: el.type === 'node' ? 'node:n' : undefined,
            label: el.type === 'info' ? el.label : 'n',
            description: shown[el.type === 'info' ? el.label : 'n'],
          }) as never,
        childrenNow: () => kids,
        fire: (els) => fired.push(els),
      },
      ms,
      figuresMs,
    );
  beforeEach(() => {
    shown = { n: '7 servers', a: '10%', b: 'ends in 2h' };
    kids = [rowA, rowB];
    fired = [];
  });

  it('nothing changed: nothing is re-rendered; one row changed: only that row, the same object', () => {
    const r = make(0);
    r.noteNode('n', node);
    r.noteChildren('n', '', kids);
    r.update('n');
    assert.equal(fired.length, 0);
    shown.a = '11%';
    r.update('n');
    assert.equal(fired.length, 1);
    assert.equal(fired[0]![0], rowA);
    assert.equal(fired[0]!.length, 1);
    r.dispose();
  });

  it('the node row or the set of rows changed: the node is re-rendered', () => {
    const r = make(0);
    r.noteNode('n', node);
    r.noteChildren('n', '', kids);
    kids = [rowA];
    r.update('n');
    assert.deepEqual(fired, [[node]]);
    r.noteChildren('n', '', kids);
    shown.n = '6 servers';
    r.update('n');
    assert.deepEqual(fired, [[node], [node]]);
    r.dispose();
  });

  it('a burst of changes within the window is one render, after the window', async () => {
    const r = make(150);
    r.noteNode('n', node);
    r.noteChildren('n', '', kids);
    r.update('n'); // the window starts now
    for (let i = 0; i < 20; i++) {
      shown.a = `${i}%`;
      r.schedule('n');
    }
    assert.equal(fired.length, 0);
    await new Promise((res) => setTimeout(res, 250));
    assert.equal(fired.length, 1);
    assert.deepEqual(fired[0], [rowA]);
    r.dispose();
  });

  it('figures only (tok/s, queue, $): held for their window, so an open tooltip stays; a new state shows at once (issue 43)', async () => {
    const r = make(0, 200);
    r.noteNode('n', node);
    r.noteChildren('n', '', kids);
    shown.a = '12%';
    shown.n = '8 servers';
    r.update('n');
    assert.equal(fired.length, 0, 'numbers moved: not yet');
    shown.b = 'crashed';
    r.update('n');
    assert.deepEqual(fired, [[rowB]], 'what the row says changed: at once, that row only');
    r.update('n', true);
    assert.deepEqual(fired[1], [node], 'urgent (a transition, a verdict): the figures too');
    fired = [];
    r.noteChildren('n', '', kids);
    shown.a = '13%';
    r.update('n');
    assert.equal(fired.length, 0);
    await new Promise((res) => setTimeout(res, 300));
    assert.deepEqual(fired, [[rowA]], 'held figures are shown when their window ends, unasked');
    r.dispose();
  });

  it("the node's figures wait for the row under it rendered last (its render closes every hover under it), at most two windows", async () => {
    const sleep = (ms: number) => new Promise((res) => setTimeout(res, ms));
    const r = make(0, 300);
    const t0 = Date.now();
    r.noteNode('n', node);
    r.noteChildren('n', '', kids);
    await sleep(150);
    shown.b = 'crashed';
    r.update('n');
    assert.deepEqual(fired, [[rowB]], 'a new state: that row at once');
    shown.n = '8 servers';
    await sleep(320 - (Date.now() - t0));
    r.update('n');
    assert.equal(fired.length, 1, "the node's own window is over, but the row under it was rendered 170 ms ago: held");
    await sleep(520 - (Date.now() - t0));
    assert.deepEqual(fired[1], [node], 'shown unasked when the last rendered row has had its window');
    // rows that keep changing what they say cannot hold the node's figures past two windows
    fired = [];
    r.noteChildren('n', '', kids);
    const t1 = Date.now();
    shown.n = '9 servers';
    for (let i = 0; Date.now() - t1 < 560; i++) {
      shown.a = i % 2 ? 'stalled' : 'idle';
      r.update('n');
      await sleep(100);
    }
    const nodeAt = fired.findIndex((f) => f?.[0] === node);
    assert.ok(nodeAt >= 0, `the node was rendered within two windows: ${fired.length} renders`);
    assert.ok(
      fired.slice(0, nodeAt).every((f) => f?.[0] === rowA),
      'before that, only the changing row',
    );
    r.dispose();
  });
});
