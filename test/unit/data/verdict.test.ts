/** The verdict rules (core/data/verdict): thresholds at their edges, the row minimum, the escaped top answer. */
import assert from 'node:assert/strict';
import { DEFAULT_THRESHOLDS, RawDataFile, escapeAnswer, judgeFile, parseThresholds } from '../../../src/core/data/verdict';

const raw = (
  n: number,
  c: Partial<{ empty: number; thinkingOnly: number; truncated: number; repetitive: number }>,
  top?: number,
  extra: Partial<RawDataFile> = {},
): RawDataFile => ({
  path: '/w/out.jsonl',
  error: null,
  rows: n,
  rowsExact: true,
  sampled: n,
  parsed: n,
  parseErrors: 0,
  judged: n,
  noResponse: 0,
  format: 'flat',
  counts: { empty: 0, thinkingOnly: 0, truncated: 0, repetitive: 0, ...c },
  top: top ? { text: 'OK.', count: top } : null,
  ...extra,
});

describe('data verdict rules (core/data/verdict)', () => {
  it('degenerate at 20 % empty, same answer or looping; suspect at 5 %; ok under', () => {
    assert.equal(judgeFile(raw(100, { empty: 20 })).verdict, 'degenerate');
    assert.equal(judgeFile(raw(100, { empty: 19 })).verdict, 'suspect');
    assert.equal(judgeFile(raw(100, { empty: 5 })).verdict, 'suspect');
    assert.equal(judgeFile(raw(100, { empty: 4 })).verdict, 'ok');
    assert.equal(judgeFile(raw(100, {}, 20)).verdict, 'degenerate');
    assert.equal(judgeFile(raw(100, {}, 4)).verdict, 'ok');
    assert.equal(judgeFile(raw(100, { repetitive: 20 })).verdict, 'degenerate');
    assert.equal(judgeFile(raw(100, { truncated: 50 })).verdict, 'suspect');
    assert.equal(judgeFile(raw(100, { truncated: 49 })).verdict, 'ok');
    assert.equal(judgeFile(raw(100, {}, undefined, { sampled: 105, parseErrors: 6 })).verdict, 'suspect');
  });

  it('under 50 rows a degenerate share is only suspect, in words', () => {
    const f = judgeFile(raw(49, { empty: 30 }));
    assert.equal(f.verdict, 'suspect');
    assert.match(f.reasons[0], /only 49 rows sampled: too few to call it degenerate/);
  });

  it('an answer seen once is no top response', () => {
    const f = judgeFile(raw(100, {}, 1));
    assert.equal(f.topResponse, null);
    assert.equal(f.shares.topResponse, 0);
  });

  it('thresholds are options: parsed from NAME=SHARE, bad ones refused in words', () => {
    const th = parseThresholds('degenerateEmpty=0.5,minRows=10');
    assert.equal(th.degenerateEmpty, 0.5);
    assert.equal(th.minRows, 10);
    assert.equal(judgeFile(raw(100, { empty: 30 }), th).verdict, 'suspect');
    assert.throws(() => parseThresholds('nope=1'), /unknown threshold "nope"/);
    assert.throws(() => parseThresholds('suspectEmpty=5'), /a share from 0 to 1/);
    assert.equal(DEFAULT_THRESHOLDS.degenerateEmpty, 0.2);
  });

  it('the top answer is escaped and at most 80 characters', () => {
    assert.equal(escapeAnswer('OK.\n\x1b[31m'), 'OK.\\n\\u001b[31m');
    const long = escapeAnswer('x'.repeat(200));
    assert.equal(long.length, 80);
    assert.ok(long.endsWith('…'));
    assert.ok(escapeAnswer('a\u202eb').includes('\\u202e'));
  });
});
