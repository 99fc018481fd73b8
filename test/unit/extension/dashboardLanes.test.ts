/**
 * The dashboard's marker labels (media/dashboard.js, run in the webview): lanes, never two labels over each other
 * (issue 43: an hour of events drew an unreadable band). The function is read out of the webview script and run here.
 */
import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

type Lanes = (items: Array<{ x: number; w: number }>, max: number, gap: number) => number[];

function labelLanes(): Lanes {
  const js = readFileSync(path.resolve(__dirname, '..', '..', '..', '..', 'media', 'dashboard.js'), 'utf8');
  const body = /\/\/ labelLanes:begin([\s\S]*?)\/\/ labelLanes:end/.exec(js)![1];
  return new Function(`${body}; return labelLanes;`)() as Lanes;
}

describe('dashboard marker labels (media/dashboard.js labelLanes)', () => {
  const lanes = labelLanes();

  it('labels far apart share the first lane; close ones go down a lane; beyond the last lane: hover only', () => {
    assert.deepEqual(
      lanes(
        [
          { x: 0, w: 100 },
          { x: 300, w: 100 },
          { x: 310, w: 100 },
          { x: 320, w: 100 },
          { x: 330, w: 100 },
        ],
        3,
        6,
      ),
      [0, 0, 1, 2, -1],
    );
  });

  it('an hour of events (one a minute, 800 px wide): no two drawn labels overlap in a lane', () => {
    const items = Array.from({ length: 60 }, (_, i) => ({ x: (i * 800) / 60, w: 110 }));
    const got = lanes(items, 4, 6);
    for (let lane = 0; lane < 4; lane++) {
      const mine = items.filter((_, i) => got[i] === lane).sort((a, b) => a.x - b.x);
      for (let i = 1; i < mine.length; i++) assert.ok(mine[i].x >= mine[i - 1].x + mine[i - 1].w + 6, `lane ${lane}`);
    }
    assert.ok(
      got.some((l) => l < 0),
      'some labels wait for the hover',
    );
    assert.ok(got.filter((l) => l >= 0).length >= 20, 'but most are drawn');
  });
});
