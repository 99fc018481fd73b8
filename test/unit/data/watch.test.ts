/** The live data guard's transitions (core/data/watch), with no node: baseline, one transition per change, suspect held. */
import assert from 'node:assert/strict';
import { DataWatch } from '../../../src/core/data/watch';
import type { DataFileReport, DataVerdict } from '../../../src/core/data/verdict';

const file = (path: string, verdict: DataVerdict): DataFileReport =>
  ({ path, verdict, reasons: verdict === 'ok' ? [] : [`${verdict} because`], judged: 100 }) as unknown as DataFileReport;

describe('DataWatch transitions (core/data/watch)', () => {
  it('the first judgement is the baseline; ok → degenerate is one transition at once', () => {
    const w = new DataWatch('n1');
    assert.deepEqual(w.judge([file('/a', 'degenerate'), file('/b', 'ok')]), []);
    const t = w.judge([file('/a', 'degenerate'), file('/b', 'degenerate')]);
    assert.equal(t.length, 1);
    assert.deepEqual([t[0].subject, t[0].path, t[0].from, t[0].to], ['data', '/b', 'data-ok', 'data-degenerate']);
    assert.deepEqual(w.judge([file('/a', 'degenerate'), file('/b', 'degenerate')]), []);
  });

  it('a move to suspect (or back to ok) is told once it held two judgements; ok → suspect → degenerate fast is one transition', () => {
    const w = new DataWatch('n1');
    w.judge([file('/a', 'ok')]);
    assert.deepEqual(w.judge([file('/a', 'suspect')]), []);
    const t = w.judge([file('/a', 'degenerate')]);
    assert.deepEqual(
      t.map((x) => [x.from, x.to]),
      [['data-ok', 'data-degenerate']],
    );
    assert.deepEqual(w.judge([file('/a', 'ok')]), []);
    assert.deepEqual(
      w.judge([file('/a', 'ok')]).map((x) => [x.from, x.to]),
      [['data-degenerate', 'data-ok']],
    );
    w.judge([file('/a', 'suspect')]);
    assert.deepEqual(
      w.judge([file('/a', 'suspect')]).map((x) => x.to),
      ['data-suspect'],
    );
  });

  it('a file first seen after the baseline that is already bad is a change', () => {
    const w = new DataWatch('n1');
    w.judge([file('/a', 'ok')]);
    const t = w.judge([file('/a', 'ok'), file('/new', 'degenerate')]);
    assert.deepEqual(
      t.map((x) => [x.path, x.from, x.to]),
      [['/new', 'data-ok', 'data-degenerate']],
    );
  });
});
