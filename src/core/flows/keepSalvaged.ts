/**
 * Keep Node Salvaged: after one full salvage, every interval one listing exec and only what
 * changed travels (appended bytes after a prefix check, new files, rewritten files), each verified, the
 * manifest rewritten atomically with `syncedAt` per item. A node unreachable for longer than the grace
 * period makes the last synced state final; an abort stops cleanly between syncs. The one loop behind
 * `gpu-sessions salvage --watch` and VS Code's Keep Node Salvaged toggle. Nothing here imports vscode.
 */
import { errorMessage } from '../util/errors';
import type { Salvager } from './salvage';
import type { SalvageItem } from '../salvage/salvageTypes';

interface WatchSync {
  listedAt: string;
  changedBytes: number;
  fetchedBytes: number;
  fetchedFiles: number;
}

export interface WatchState {
  intervalS: number;
  /** ISO 8601: when the last sync (or the first full salvage) finished; null: never. */
  lastSyncedAt: string | null;
  /** Bytes the last listing found changed but that are still not saved (kept copies of files that changed). */
  unsyncedBytes: number;
  /** Bytes per second written on the node, measured over the last interval (from the listings). */
  rate: number;
  syncs: number;
  /** Since when the node has not answered (ms since the epoch); null while it answers. */
  unreachableSince: number | null;
  lastError: string | null;
  last: WatchSync | null;
}

interface KeepSalvagedOptions {
  intervalS: number;
  /** How long the node may be unreachable before the last synced state becomes final. Default max(30 s, 3 intervals). */
  graceS?: number;
  signal?: AbortSignal;
  onSync?: (state: WatchState, r: WatchSync) => void;
  onUnreachable?: (state: WatchState, message: string) => void;
  now?: () => number;
}

interface KeepSalvagedResult {
  outcome: 'stopped' | 'vanished';
  state: WatchState;
  /** Estimated bytes written on the node after the last sync (the vanish report's figure). */
  atRiskBytes: number;
}

/**
 * Bytes the node holds that no verified copy does: for a file that grew since its copy (a log), the bytes since
 * the last verified copy, not the whole file ("3.1 MiB at risk" 2 s after a sync); for a rewritten or
 * unknown one, its size.
 */
export function unsavedBytes(items: readonly SalvageItem[]): number {
  let n = 0;
  for (const i of items) {
    if (!i.selected || !i.changedAfterVerify) continue;
    n += typeof i.nodeSize === 'number' && i.nodeSize >= i.size ? i.nodeSize - i.size : i.size;
  }
  return n;
}

/** Bytes at risk now: what the last listing found unsaved plus what the measured rate wrote since. */
export function atRiskBytes(s: WatchState, nowMs: number): number {
  const since = s.lastSyncedAt ? Math.max(0, (nowMs - Date.parse(s.lastSyncedAt)) / 1000) : 0;
  return Math.round(s.unsyncedBytes + s.rate * since);
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done);
  });
}

/** Runs until the signal aborts ('stopped') or the node stays unreachable past the grace period ('vanished'). */
export async function keepSalvaged(salvager: Salvager, o: KeepSalvagedOptions): Promise<KeepSalvagedResult> {
  const m = salvager.manifest;
  const now = o.now ?? Date.now;
  const graceMs = (o.graceS ?? Math.max(30, 3 * o.intervalS)) * 1000;
  const state: WatchState = {
    intervalS: o.intervalS,
    lastSyncedAt: m.finishedAt ?? new Date(now()).toISOString(),
    unsyncedBytes: 0,
    rate: 0,
    syncs: 0,
    unreachableSince: null,
    lastError: null,
    last: null,
  };
  let lastSyncMs = now();
  let lastChangedFiles = 0;
  const publish = () => {
    m.watch = { lastSyncedAt: state.lastSyncedAt, atRiskBytes: state.unsyncedBytes, syncs: state.syncs, intervalS: o.intervalS };
  };
  publish();
  for (;;) {
    await sleep(o.intervalS * 1000, o.signal);
    if (o.signal?.aborted) return { outcome: 'stopped', state, atRiskBytes: atRiskBytes(state, now()) };
    try {
      const r = await salvager.sync();
      const t = now();
      state.rate = r.changedBytes / Math.max(0.001, (t - lastSyncMs) / 1000);
      lastSyncMs = t;
      lastChangedFiles = m.items.filter((i) => i.syncedAt && Date.parse(i.syncedAt) >= Date.parse(r.listedAt) - 1000).length;
      state.unreachableSince = null;
      state.lastError = null;
      state.syncs++;
      state.unsyncedBytes = unsavedBytes(m.items);
      state.lastSyncedAt = new Date(t).toISOString();
      state.last = r;
      publish();
      o.onSync?.(state, r);
    } catch (e) {
      if (o.signal?.aborted) return { outcome: 'stopped', state, atRiskBytes: atRiskBytes(state, now()) };
      const t = now();
      state.unreachableSince ??= t;
      state.lastError = errorMessage(e);
      o.onUnreachable?.(state, state.lastError);
      if (t - state.unreachableSince >= graceMs) {
        const risk = Math.round(state.rate * ((t - lastSyncMs) / 1000));
        salvager.finalizeVanished({
          lastSyncedAt: state.lastSyncedAt,
          atRiskBytes: risk,
          atRiskFiles: lastChangedFiles,
          error: state.lastError,
        });
        return { outcome: 'vanished', state, atRiskBytes: risk };
      }
    }
  }
}
