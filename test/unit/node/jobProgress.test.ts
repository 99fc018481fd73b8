import assert from 'node:assert/strict';
import { parseProgressJson, parseDoneIndices } from '../../../src/core/node/jobProgress';

describe('progress: parseProgressJson', () => {
  it('reads the plain spelling and derives percent, rate and ETA', () => {
    const p = parseProgressJson(
      JSON.stringify({ completed: 500, failed: 0, total: 1000, output_tokens: 250000, elapsed_s: 100, status: 'running' }),
    );
    assert.equal(p.ok, true);
    assert.equal(p.error, undefined);
    assert.equal(p.completed, 500);
    assert.equal(p.failed, 0);
    assert.equal(p.total, 1000);
    assert.equal(p.outputTokens, 250000);
    assert.equal(p.elapsedS, 100);
    assert.equal(p.status, 'running');
    assert.equal(p.percent, 50);
    assert.equal(p.ratePerS, 5);
    assert.equal(p.etaS, 100);
    assert.deepEqual(p.extra, {});
  });

  it('tolerates key variants and unit conversions', () => {
    const a = parseProgressJson(
      '{"done": 10, "failures": 2, "num_prompts": 20, "total_output_tokens": 999, "elapsed_hours": 0.5, "state": "generating", "model": "qwen"}',
    );
    assert.equal(a.completed, 10);
    assert.equal(a.failed, 2);
    assert.equal(a.total, 20);
    assert.equal(a.outputTokens, 999);
    assert.equal(a.elapsedS, 1800);
    assert.equal(a.status, 'generating');
    assert.equal(a.percent, 60);
    assert.deepEqual(a.extra, { model: 'qwen' });
    assert.ok(a.etaS !== null && Math.abs(a.etaS - 8 / (10 / 1800)) < 1e-6);

    const b = parseProgressJson(
      '{"num_completed": "7", "errors": ["boom", "bang"], "total_prompts": 9, "elapsed": "0:01:10", "Elapsed-Seconds": 5}',
    );
    assert.equal(b.completed, 7);
    assert.equal(b.failed, 2);
    assert.equal(b.total, 9);
    assert.equal(b.elapsedS, 70);
    assert.equal(b.etaS, 0);
    assert.equal(b.percent, 100);

    const c = parseProgressJson('{"completed": 3, "elapsed_seconds": 6, "elapsed_ms": 1}');
    assert.equal(c.elapsedS, 6);
    assert.equal(c.ratePerS, 0.5);
    assert.equal(c.total, null);
    assert.equal(c.percent, null);
    assert.equal(c.etaS, null);
    assert.deepEqual(c.extra, { elapsed_ms: 1 });

    const d = parseProgressJson('{"elapsed_min": 3}');
    assert.equal(d.elapsedS, 180);
    const e = parseProgressJson('{"elapsed_ms": 2500}');
    assert.equal(e.elapsedS, 2.5);
  });

  it('reads counters nested under "progress" and keeps the rest', () => {
    const p = parseProgressJson('{"job": "gen-1", "progress": {"completed": 4, "total": 8, "shard": 2}}');
    assert.equal(p.completed, 4);
    assert.equal(p.total, 8);
    assert.deepEqual(p.extra, { job: 'gen-1', progress: { shard: 2 } });
  });

  it('accepts Python NaN / Infinity', () => {
    const p = parseProgressJson('{"completed": 1, "total": 2, "eta": NaN, "rate": Infinity, "note": "NaN stays text"}');
    assert.equal(p.ok, true);
    assert.equal(p.completed, 1);
    assert.deepEqual(p.extra, { eta: null, rate: null, note: 'NaN stays text' });
  });

  it('refuses a truncated file (mid-write) with the byte position', () => {
    const full = JSON.stringify({ completed: 500, failed: 3, total: 1000, elapsed_s: 100, status: 'running' });
    for (const cut of [1, 10, 14, 30, full.length - 1]) {
      const p = parseProgressJson(full.slice(0, cut));
      assert.equal(p.ok, false, full.slice(0, cut));
      assert.equal(p.completed, null);
      assert.equal(p.total, null);
      assert.match(
        p.error!,
        new RegExp(
          `progress\\.json is incomplete \\(truncated at byte ${cut} — the writer may be mid-write\\); showing nothing rather than guessing`,
        ),
      );
    }
  });

  it('refuses malformed, empty and non-object documents without throwing', () => {
    for (const t of ['', '   \n', 'not json', '{"a": 1}}', '[1,2,3]', '42', 'null', '"str"', '{"a": tru}']) {
      const p = parseProgressJson(t);
      assert.equal(p.ok, false, t);
      assert.ok(p.error && p.error.length > 0);
      assert.equal(p.completed, null);
    }
    assert.equal(parseProgressJson(undefined as unknown as string).ok, false);
  });

  it('ignores negative / non-numeric counters (kept in extra)', () => {
    const p = parseProgressJson('{"completed": -1, "total": "many", "done": 5}');
    assert.equal(p.completed, 5);
    assert.equal(p.total, null);
    assert.deepEqual(p.extra, { completed: -1, total: 'many' });
  });
});

describe('progress: parseDoneIndices', () => {
  it('one per line with gaps, blanks, invalid entries and duplicates', () => {
    const d = parseDoneIndices('0\n1\n2\n\n5\n6\nabc\n9\r\n9\n-3\n12x\n');
    assert.equal(d.count, 6);
    assert.equal(d.lowest, 0);
    assert.equal(d.highest, 9);
    assert.equal(d.gaps, 4);
    assert.deepEqual(d.firstGaps, [
      [3, 4],
      [7, 8],
    ]);
    assert.equal(d.invalidLines, 3);
    assert.equal(d.duplicates, 1);
  });

  it('comma/space separated and JSON arrays', () => {
    assert.deepEqual(parseDoneIndices('3, 1 2,4').firstGaps, []);
    const j = parseDoneIndices('[5, 3, 10, "4"]');
    assert.equal(j.count, 4);
    assert.equal(j.lowest, 3);
    assert.equal(j.highest, 10);
    assert.equal(j.gaps, 4);
    assert.deepEqual(j.firstGaps, [[6, 9]]);
    assert.equal(j.invalidLines, 0);
    const truncated = parseDoneIndices('[1, 2, 3, 4');
    assert.equal(truncated.count, 4);
  });

  it('empty input', () => {
    assert.deepEqual(parseDoneIndices(''), {
      count: 0,
      highest: null,
      lowest: null,
      gaps: 0,
      firstGaps: [],
      invalidLines: 0,
      duplicates: 0,
    });
    assert.equal(parseDoneIndices('\n\n  \n').count, 0);
  });

  it('caps firstGaps at 10', () => {
    const lines: number[] = [];
    for (let i = 0; i < 100; i += 2) lines.push(i);
    const d = parseDoneIndices(lines.join('\n'));
    assert.equal(d.count, 50);
    assert.equal(d.gaps, 49);
    assert.equal(d.firstGaps.length, 10);
    assert.deepEqual(d.firstGaps[0], [1, 1]);
  });

  it('1,000,000 shuffled lines quickly', () => {
    const n = 1_000_000;
    const arr = new Uint32Array(n);
    for (let i = 0; i < n; i++) arr[i] = i;
    let seed = 7;
    for (let i = n - 1; i > 0; i--) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const j = seed % (i + 1);
      const t = arr[i];
      arr[i] = arr[j];
      arr[j] = t;
    }
    // drop three indices
    const parts: string[] = [];
    for (let i = 0; i < n; i++) if (arr[i] !== 17 && arr[i] !== 500000 && arr[i] !== 500001) parts.push(String(arr[i]));
    const text = parts.join('\n') + '\n';
    const t0 = Date.now();
    const d = parseDoneIndices(text);
    const dt = Date.now() - t0;
    assert.equal(d.count, n - 3);
    assert.equal(d.lowest, 0);
    assert.equal(d.highest, n - 1);
    assert.equal(d.gaps, 3);
    assert.deepEqual(d.firstGaps, [
      [17, 17],
      [500000, 500001],
    ]);
    assert.ok(dt < 8000, `took ${dt} ms`);
  });
});
