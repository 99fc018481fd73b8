/** The roots summary groups processes by kind and port range (issue 23 item 6). */
import assert from 'node:assert/strict';
import { groupedWhy, portRange } from '../../../../src/core/salvage/plan/rootsWhy';

describe('why a folder is salvaged: grouped by kind and port range (issue 23)', () => {
  it('seven servers in one folder are one phrase with their port range, not seven', () => {
    const root = '/home/u';
    const under = [
      { why: 'home', detail: '-', path: root },
      ...[0, 1, 2, 3, 4, 5, 6].map((i) => ({ why: 'server-cwd', detail: String(4856 + i), path: root })),
    ];
    const single = (c: { why: string; detail: string }) =>
      c.why === 'home' ? 'the home directory' : `working directory of the SGLang server pid ${c.detail}`;
    const texts = groupedWhy(under, root, single, (pid) => 25502 + (pid - 4856));
    assert.deepEqual(texts, ['the home directory', 'working directory of 7 SGLang servers (ports 25502–25508)']);
    // one server keeps its own text
    assert.deepEqual(
      groupedWhy(under.slice(0, 2), root, single, () => 1),
      ['the home directory', 'working directory of the SGLang server pid 4856'],
    );
    assert.equal(portRange([30002, 30000, 30001]), '30000–30002');
    assert.equal(portRange([1, 5]), '1, 5');
  });
});
