import assert from 'node:assert/strict';
import type { Salvager, SalvageManifest } from '../../../src/core/flows/salvage';
import { WatchState, atRiskBytes, keepSalvaged } from '../../../src/core/flows/keepSalvaged';

/** A Salvager stand-in: each sync() takes the next outcome (bytes that had changed, or an error). */
function fakeSalvager(outcomes: Array<number | Error>) {
  const m = { finishedAt: new Date().toISOString(), items: [], watch: null, vanished: null } as unknown as SalvageManifest;
  const calls = { syncs: 0, vanished: null as null | Record<string, unknown> };
  const s = {
    manifest: m,
    async sync() {
      const o = outcomes[Math.min(calls.syncs++, outcomes.length - 1)];
      if (o instanceof Error) throw o;
      return { listedAt: new Date().toISOString(), changedBytes: o, fetchedBytes: o, fetchedFiles: o ? 1 : 0 };
    },
    finalizeVanished(info: Record<string, unknown>) {
      calls.vanished = info;
      return m;
    },
  };
  return { salvager: s as unknown as Salvager, calls, m };
}

describe('Keep Node Salvaged: the watch loop (core/salvage/watch)', () => {
  it('syncs every interval, publishes manifest.watch, and stops cleanly on abort', async () => {
    const { salvager, calls, m } = fakeSalvager([100, 0, 50]);
    const ac = new AbortController();
    const seen: WatchState[] = [];
    const r = await keepSalvaged(salvager, {
      intervalS: 0.01,
      signal: ac.signal,
      onSync: (s) => {
        seen.push({ ...s });
        if (s.syncs === 3) ac.abort();
      },
    });
    assert.equal(r.outcome, 'stopped');
    assert.equal(calls.syncs, 3);
    assert.deepEqual(
      seen.map((s) => s.syncs),
      [1, 2, 3],
    );
    assert.equal(m.watch?.syncs, 3);
    assert.equal(m.watch?.lastSyncedAt, r.state.lastSyncedAt);
    assert.equal(calls.vanished, null);
  });

  it('a node unreachable past the grace period: the last synced state is final, with the estimated bytes at risk', async () => {
    const { salvager, calls } = fakeSalvager([1000, new Error('connect ECONNREFUSED 127.0.0.1:22')]);
    const errors: string[] = [];
    const r = await keepSalvaged(salvager, { intervalS: 0.02, graceS: 0.05, onUnreachable: (_s, msg) => errors.push(msg) });
    assert.equal(r.outcome, 'vanished');
    assert.ok(errors.length >= 2, `retried: ${errors.length}`);
    assert.match(errors[0], /ECONNREFUSED/);
    assert.equal(r.state.syncs, 1);
    assert.ok(r.state.unreachableSince !== null);
    assert.ok(r.atRiskBytes > 0, `estimated at risk: ${r.atRiskBytes}`);
    assert.equal(calls.vanished?.lastSyncedAt, r.state.lastSyncedAt);
    assert.equal(calls.vanished?.atRiskBytes, r.atRiskBytes);
  });

  it('a node that answers again within the grace period keeps being watched', async () => {
    const { salvager, calls } = fakeSalvager([0, new Error('timeout'), 10, 0]);
    const ac = new AbortController();
    const r = await keepSalvaged(salvager, {
      intervalS: 0.01,
      graceS: 60,
      signal: ac.signal,
      onSync: (s) => {
        if (s.syncs === 3) ac.abort();
      },
    });
    assert.equal(r.outcome, 'stopped');
    assert.equal(r.state.unreachableSince, null);
    assert.equal(r.state.lastError, null);
    assert.equal(calls.syncs, 4);
  });

  it('bytes at risk: what the last listing left unsaved plus the measured rate since the last sync', () => {
    const t = Date.parse('2026-12-01T12:00:00Z');
    const s: WatchState = {
      intervalS: 60,
      lastSyncedAt: new Date(t - 40_000).toISOString(),
      unsyncedBytes: 1000,
      rate: 30_000,
      syncs: 4,
      unreachableSince: null,
      lastError: null,
      last: null,
    };
    assert.equal(atRiskBytes(s, t), 1000 + 30_000 * 40);
    assert.equal(atRiskBytes({ ...s, lastSyncedAt: null }, t), 1000);
  });
});
