/** The away summary (core/guard/summary): one line from the journal. */
import assert from 'node:assert/strict';
import { awaySummary } from '../../../src/core/guard/summary';

describe('guard away summary (core/guard/summary)', () => {
  it('job done, synced, rental stopped', () => {
    const j = [
      { t: '2026-12-04T01:00:00Z', event: 'started' },
      { t: '2026-12-04T02:00:00Z', event: 'sync', copied: 3 },
      { t: '2026-12-04T03:12:05Z', event: 'job-done', verdict: 'safe' },
      { t: '2026-12-04T03:40:00Z', event: 'rental-ended', action: 'stop' },
    ];
    assert.equal(awaySummary(j), '3 files copied, verified · job done 03:12 · synced · rental stopped 03:40');
    assert.equal(awaySummary(j, '2026-12-04T03:00:00Z'), 'job done 03:12 · synced · rental stopped 03:40');
  });
  it('an unsafe job-done and a kept rental say so; nothing: "nothing happened"', () => {
    const j = [
      { t: '2026-12-04T03:12:00Z', event: 'job-done', verdict: 'unsafe', filesAtRisk: 2 },
      { t: '2026-12-04T03:12:01Z', event: 'rental-kept', why: 'the final sync is not verified (2 files at risk)' },
    ];
    assert.equal(
      awaySummary(j),
      'job done 03:12 · NOT all synced (2 files at risk) · rental kept 03:12: the final sync is not verified (2 files at risk)',
    );
    assert.equal(awaySummary([]), 'nothing happened');
  });
});
