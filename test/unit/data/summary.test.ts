/** The Data row's text (core/data/summary). */
import assert from 'node:assert/strict';
import { dataRowText } from '../../../src/core/data/summary';
import type { DataSampleFile } from '../../../src/core/data/watch';

const f = (verdict: DataSampleFile['verdict'], rows: number, empty: number, truncated: number, top?: number): DataSampleFile => ({
  path: `/w/${verdict}.jsonl`,
  verdict,
  rows,
  shares: { empty, thinkingOnly: 0, truncated, topResponse: top ?? 0, repetitive: 0 },
  topResponse: top ? { text: 'OK.', share: top } : null,
  error: null,
});

describe('the Data row (core/data/summary)', () => {
  it('rows, empty and cut shares; the worst verdict and the repeated answer when degenerate', () => {
    assert.deepEqual(dataRowText([f('ok', 902087, 0.004, 0.03)]), {
      label: 'Data',
      detail: '902,087 rows · 0.4 % empty · 3.0 % cut at length',
      state: 'ok',
    });
    const r = dataRowText([f('ok', 10, 0, 0), f('degenerate', 90, 0, 0, 0.87)]);
    assert.equal(r.state, 'degenerate');
    assert.equal(r.label, 'Data degenerate');
    assert.match(r.detail, /^100 rows · .* · 87 % the same `OK\.`$/);
  });
});
