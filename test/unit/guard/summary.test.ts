/** The away summary (core/guard/summary): one line from the journal. */
import assert from 'node:assert/strict';
import { awaySummary, guardRowText } from '../../../src/core/guard/summary';
import type { GuardStatus } from '../../../src/core/guard/operations';

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
  it('a job done with nothing listed under the folders says so, not "0 files at risk"', () => {
    const j = [{ t: '2026-12-04T03:12:00Z', event: 'job-done', verdict: 'unsafe', filesAtRisk: 0, reasons: ['nothing-listed'] }];
    assert.equal(awaySummary(j), 'job done 03:12 · nothing listed under the folders (not safe)');
  });

  it('the Guard row of the tree: running, its last verified sync, what is at risk and its policy', () => {
    const g: GuardStatus = {
      running: true,
      pid: 4242,
      settings: {
        target: 's3://b/p/',
        s3Endpoint: null,
        intervalS: 60,
        data: [],
        whenDone: 'stop',
        idleMin: null,
        until: null,
        credentialExpires: null,
      },
      startedAt: '2026-12-04T01:00:00Z',
      lastVerifiedSync: { at: '2026-12-04T03:12:05Z', files: 42, target: 's3://b/p/', beingWritten: 0 },
      lastCycle: '2026-12-04T03:12:05Z',
      bytesAtRisk: 0,
      filesAtRisk: 0,
      filesVerified: 42,
      roots: ['/root/job'],
      end: null,
      journal: [{ t: '2026-12-04T03:12:05Z', event: 'sync', copied: 2 }],
    };
    const r = guardRowText(g);
    assert.equal(r.label, 'Guard running');
    assert.equal(r.detail, 'synced 03:12 UTC (42 files) · 0 B at risk · when done: stop');
    assert.equal(r.ok, true);
    assert.match(r.tooltip, /pid 4242[\s\S]*s3:\/\/b\/p\/[\s\S]*\/root\/job[\s\S]*sync/);
    const stopped = guardRowText({ ...g, running: false, pid: null, bytesAtRisk: 3 * 1024 * 1024, filesAtRisk: 2, lastVerifiedSync: null });
    assert.equal(stopped.label, 'Guard stopped');
    assert.equal(stopped.detail, 'no verified sync yet · 3.0 MiB at risk (2 files) · when done: stop');
    assert.equal(stopped.ok, false);
  });
});
