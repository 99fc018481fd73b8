/**
 * Final pass: after the steps (and any stopped writers), what changed or appeared on the node, so the verdict judges
 * the end state. The phases here stop servers and writers, compare a new listing with the items, and check the
 * fetched files once more; each returns what it found, and the orchestrator (flows/salvage.ts) applies it and
 * fetches the files in between.
 */
import { errorMessage } from '../../util/errors';
import { runOperation } from '../../remote/operation';
import { redactText } from '../../util/redact';
import type { SglangServer } from '../../sglang/serverArgv';
import { remoteStats } from './transfer';
import { SalvageItem, SalvageManifest } from '../salvageTypes';
import type { SalvageListing } from '../plan/listing';
import { writerInfo } from '../plan/classify';
import type { ItemPatch, PhaseEnv } from '../phase';
import { ItemContext, cacheItem, itemFor } from '../plan/plan';
import { LocalBase, isFileItem } from '../salvageUtil';

type Stopped = SalvageManifest['stopped'][number];

/** Stop the run's SGLang servers, in parallel (each waits for its own process: SIGTERM, then SIGKILL after the timeout). */
export async function stopServers(env: PhaseEnv, servers: readonly SglangServer[]): Promise<Stopped[]> {
  const { o } = env;
  const { stopServer } = await import('../../launch/launch');
  env.checkCancel();
  env.progress('stop', `Stopping ${servers.length} SGLang server(s)${o.drain ? ' after draining them' : ''}…`);
  return Promise.all(
    servers.map(async (srv) => {
      try {
        const r = await stopServer(o.transport, {
          port: srv.port,
          pid: srv.pid,
          drain: o.drain,
          signal: o.signal,
          onProgress: (msg) => env.progress('stop', msg),
        });
        return { pid: srv.pid, port: srv.port, stopped: r.stopped, message: redactText(r.message) };
      } catch (e) {
        return { pid: srv.pid, port: srv.port, stopped: false, message: redactText(errorMessage(e)) };
      }
    }),
  );
}

/**
 * Stop the other processes writing under the folders (`--stop-writers`), once the face confirms; each one's outcome
 * goes to `stopped` as it ends (a cancel between two keeps the first). Returns whether any was tried.
 */
export async function stopWriters(env: PhaseEnv, listing: SalvageListing, stopped: (s: Stopped) => void): Promise<boolean> {
  const { o } = env;
  const others = listing.writers.filter((w) => !w.server);
  const infos = others.map(writerInfo);
  if (!others.length || (o.confirmStopWriters && !(await o.confirmStopWriters(infos)))) return false;
  const { buildKillScript } = await import('../../launch/launch');
  for (const w of others) {
    env.checkCancel();
    env.progress('stop', `Stopping pid ${w.pid} (${writerInfo(w).command.slice(0, 60)})…`);
    try {
      const gone = await runOperation(
        o.transport,
        {
          name: 'stop-writer',
          command: 'sh -s',
          stdin: buildKillScript(w.pid, { group: false, descendants: [], termTimeoutMs: 10_000 }),
          timeoutMs: 40_000,
          maxOutputBytes: 64 * 1024,
          parse: (r) => /GS-GONE/.test(r.stdout.toString()),
        },
        o.signal,
      );
      stopped({ pid: w.pid, port: null, stopped: gone, message: gone ? `stopped pid ${w.pid}` : `pid ${w.pid} is still alive` });
    } catch (e) {
      stopped({ pid: w.pid, port: null, stopped: false, message: redactText(errorMessage(e)) });
    }
  }
  return true;
}

/** What a new listing says of the items: each change, the new items, and what to fetch now. */
interface ListingDiff {
  /**
   * Items that changed: their patch; `base`: the verified copy to append to or keep; `uncountGuard`: the guard's S3
   * copy no longer counts.
   */
  changes: { item: SalvageItem; patch: ItemPatch; base?: LocalBase; uncountGuard?: boolean }[];
  /** Files and caches listed for the first time (new items, settled as far as the listing tells). */
  added: SalvageItem[];
  /** What to fetch: changed items and new files to save. */
  fetch: SalvageItem[];
  /** Bytes not saved yet as the listing shows them. */
  atRisk: number;
}

/** Compare a new listing (in `cx`) with the items; `fatal`: the run cannot save more (failed items stay failed). */
export function diffListing(cx: ItemContext, items: readonly SalvageItem[], fatal: boolean): ListingDiff {
  const L2 = cx.listing;
  const out: ListingDiff = { changes: [], added: [], fetch: [], atRisk: 0 };
  const now = new Map(L2.files.map((f) => [f.path, f]));
  const known = new Set(items.map((i) => i.remotePath));
  for (const it of items) {
    if (!isFileItem(it)) continue;
    const f = now.get(it.remotePath);
    if (!f) {
      if (it.status === 'verified')
        out.changes.push({
          item: it,
          patch: { goneFromNode: true, reason: 'removed from the node after it was saved (the saved copy is kept)' },
        });
      else if (it.selected)
        out.changes.push({
          item: it,
          patch: { status: 'skipped', goneFromNode: true, reason: 'no longer on the node (nothing left there to save)' },
        });
      continue;
    }
    const moved = f.size !== it.size || f.mtime !== it.mtime;
    if (it.guardS3 && moved) {
      // the node guard's S3 copy is of an older state: this file is downloaded as any other
      out.changes.push({ item: it, patch: { size: f.size, mtime: f.mtime }, uncountGuard: true });
      out.atRisk += f.size;
      out.fetch.push(it);
    } else if (it.status === 'verified' && moved) {
      out.atRisk += f.size > it.size ? f.size - it.size : f.size;
      out.changes.push({
        item: it,
        base: {
          size: it.size,
          mtime: it.mtime,
          sha256: it.sha256!,
          localSha256: it.localSha256 ?? it.sha256!,
          redacted: !!it.redacted,
          md5: it.md5 ?? null,
          trusted: true,
        },
        patch: { size: f.size, mtime: f.mtime, status: 'pending', changedAfterVerify: false, nodeSize: undefined, reason: null },
      });
      out.fetch.push(it);
    } else if (it.selected && it.status === 'failed' && !fatal) {
      out.changes.push({ item: it, patch: { size: f.size, mtime: f.mtime, status: 'pending', reason: null } });
      out.fetch.push(it);
    }
  }
  for (const f of L2.files) {
    if (known.has(f.path)) continue;
    const it = itemFor(cx, f);
    out.added.push(it);
    if (it.kind === 'symlink') Object.assign(it, { status: 'verified', syncedAt: new Date().toISOString() });
    else if (it.selected && it.status === 'pending' && isFileItem(it)) {
      out.atRisk += it.size;
      out.fetch.push(it);
    } else if (!it.selected && it.status === 'pending') it.status = 'skipped';
  }
  for (const c of L2.caches) if (!known.has(c.path)) out.added.push(cacheItem(c));
  return out;
}

/** The fetched files once more: one that moved again while it was fetched is still being written (its patch). */
export async function recheckFetched(env: PhaseEnv, fetched: readonly SalvageItem[]): Promise<{ item: SalvageItem; patch: ItemPatch }[]> {
  const out: { item: SalvageItem; patch: ItemPatch }[] = [];
  try {
    const st = await remoteStats(
      env.o.transport,
      fetched.map((i) => i.remotePath),
      env.o.signal,
    );
    for (const it of fetched) {
      const s = st.get(it.remotePath);
      if (!s) continue;
      const listedMtime = Math.floor(Date.parse(it.mtime) / 1000);
      if (s.size !== it.size || s.mtime > listedMtime + 1)
        out.push({
          item: it,
          patch: {
            changedAfterVerify: true,
            nodeSize: s.size,
            reason: `verified at ${it.size} B, but it changed again on the node (now ${s.size} B): still being written`,
          },
        });
    }
  } catch (e) {
    env.log.warn(`Could not re-check files after the final pass: ${errorMessage(e)}`);
  }
  return out;
}
