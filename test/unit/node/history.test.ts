/** The guard's history store (core/node/history): bounds in bytes, entries and age, and reloads. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HistoryStore, historyFileName } from '../../../src/core/node/history';

describe('HistoryStore bounds', () => {
  it('keeps the file under maxBytes, entries in memory under maxEntries, drops entries older than maxAge, survives a reload', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-hist-'));
    try {
      let now = Date.UTC(2026, 0, 1);
      const h = new HistoryStore(dir, 'node/../x y', { maxBytes: 20_000, maxEntries: 50, maxAgeMs: 3600_000, now: () => now });
      assert.ok(!historyFileName('node/../x y').includes('/'));
      for (let i = 0; i < 2000; i++) {
        now += 1000;
        h.addSample({ type: 'sample', time: new Date(now).toISOString(), i, pad: 'x'.repeat(50) });
      }
      assert.ok(statSync(h.file).size <= 20_000, String(statSync(h.file).size));
      assert.equal(h.all().length, 50);
      const again = new HistoryStore(dir, 'node/../x y', { maxBytes: 20_000, maxEntries: 50, maxAgeMs: 3600_000, now: () => now });
      assert.equal(again.all().length, 50);
      assert.equal((again.all().pop() as unknown as { i: number }).i, 1999);
      now += 2 * 3600_000;
      assert.equal(new HistoryStore(dir, 'node/../x y', { maxAgeMs: 3600_000, now: () => now }).all().length, 0, 'older than 24 h');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
