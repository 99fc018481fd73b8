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

describe('DataWatch memory (issue 40 item 8)', () => {
  it('a job that keeps writing new files: only the files the latest discovery found stay (samples and states bounded)', () => {
    const w = new DataWatch('n1');
    const batch = (i: number) => `/job/batch_${String(i).padStart(6, '0')}.jsonl`;
    for (let last = 0; last < 2000; last++) {
      const newest = Array.from({ length: Math.min(24, last + 1) }, (_, k) => file(batch(last - k), 'ok'));
      w.judge(newest, true);
      assert.ok(w.sample().length <= 24 && w.states().size <= 24, `${w.sample().length} files after ${last + 1} polls`);
    }
    const paths = w.sample().map((f) => f.path);
    assert.ok(paths.includes(batch(1999)) && !paths.includes(batch(1975)), paths.join(' '));
    w.judge([file(batch(1999), 'ok')]); // a judgement of named files forgets nothing
    assert.equal(w.sample().length, 24);
  });
});
