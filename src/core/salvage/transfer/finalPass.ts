/**
 * Final pass: after the steps (and any stopped writers), fetch what changed or appeared, so the verdict judges the end state.
 */
import { GpuSessionsError, errorMessage } from '../../util/errors';
import { runOperation } from '../../remote/operation';
import { redactText } from '../../util/redact';
import { remoteStats } from './transfer';
import { SalvageItem } from '../salvageTypes';
import { writerInfo } from '../plan/classify';
import type { SalvageRun } from '../salvageRun';
import { cacheItem, itemFor, list } from '../plan/plan';
import { uncountGuardCopy } from '../plan/guardCopies';
import { transferItems } from './transferPhase';
import { writeServersScript } from '../capture/gitStep';
import { isFileItem, mergeRoots } from '../salvageUtil';

/**
 * The final pass: stop servers / writers when asked, list again (one exec), fetch only what changed
 * (appended bytes from the verified offset, new files, rewritten files), check the fetched ones once more.
 */
export async function finalPass(sv: SalvageRun): Promise<void> {
  const m = sv.manifest;
  const t = sv.o.transport;
  const L1 = sv.listing;
  if (!L1) return;
  if (sv.o.stopServers && L1.writers.some((w) => w.server)) {
    // The command lines are written before anything is stopped.
    for (const it of m.items) if (it.kind === 'server-cmdline' && it.status !== 'verified') writeServersScript(sv, it);
    const { stopServer } = await import('../../launch/launch');
    sv.checkCancel();
    sv.progress('stop', `Stopping ${sv.servers.length} SGLang server(s)${sv.o.drain ? ' after draining them' : ''}…`);
    // In parallel: each waits for its own process to end (SIGTERM, then SIGKILL after the timeout).
    const results = await Promise.all(
      sv.servers.map(async (srv) => {
        try {
          const r = await stopServer(t, {
            port: srv.port,
            pid: srv.pid,
            drain: sv.o.drain,
            signal: sv.o.signal,
            onProgress: (msg) => sv.progress('stop', msg),
          });
          return { pid: srv.pid, port: srv.port, stopped: r.stopped, message: redactText(r.message) };
        } catch (e) {
          return { pid: srv.pid, port: srv.port, stopped: false, message: redactText(errorMessage(e)) };
        }
      }),
    );
    m.stopped.push(...results);
    sv.save(true);
  }
  if (sv.o.stopWriters) {
    const others = L1.writers.filter((w) => !w.server);
    const infos = others.map(writerInfo);
    if (others.length && (!sv.o.confirmStopWriters || (await sv.o.confirmStopWriters(infos)))) {
      const { buildKillScript } = await import('../../launch/launch');
      for (const w of others) {
        sv.checkCancel();
        sv.progress('stop', `Stopping pid ${w.pid} (${writerInfo(w).command.slice(0, 60)})…`);
        try {
          const gone = await runOperation(
            t,
            {
              name: 'stop-writer',
              command: 'sh -s',
              stdin: buildKillScript(w.pid, { group: false, descendants: [], termTimeoutMs: 10_000 }),
              timeoutMs: 40_000,
              maxOutputBytes: 64 * 1024,
              parse: (r) => /GS-GONE/.test(r.stdout.toString()),
            },
            sv.o.signal,
          );
          m.stopped.push({
            pid: w.pid,
            port: null,
            stopped: gone,
            message: gone ? `stopped pid ${w.pid}` : `pid ${w.pid} is still alive`,
          });
        } catch (e) {
          m.stopped.push({ pid: w.pid, port: null, stopped: false, message: redactText(errorMessage(e)) });
        }
      }
      sv.save(true);
    }
  }
  sv.checkCancel();
  try {
    await catchUp(
      sv,
      L1.roots.map((r) => r.path),
    );
  } catch (e) {
    if (e instanceof GpuSessionsError && e.code === 'cancelled') throw e;
    sv.log.warn(`The final listing failed: ${errorMessage(e)}`);
    for (const it of m.items)
      if (it.status === 'verified' && isFileItem(it)) {
        it.changedAfterVerify = true;
        it.reason = `could not be checked again after it was saved: ${errorMessage(e)}`;
      }
  }
  sv.save(true);
}

/**
 * List again (one exec) and fetch only what changed since it was saved: appended bytes from the verified
 * offset (prefix hash first: a truncated or rotated file is fetched whole), new files, rewritten files;
 * then check the fetched ones once more. Throws when the node cannot be listed.
 */
export async function catchUp(
  sv: SalvageRun,
  extraRoots: string[],
): Promise<{ listedAt: string; changedBytes: number; fetchedBytes: number; fetchedFiles: number }> {
  const m = sv.manifest;
  const t = sv.o.transport;
  const before = { bytes: m.stats.bytesTransferred, files: m.stats.filesTransferred };
  sv.progress('final', 'Final pass: listing what changed since it was saved…');
  const L2 = await list(sv, extraRoots);
  const listedAt = new Date().toISOString();
  sv.listing = L2;
  m.roots = mergeRoots(m.roots, L2.roots);
  let atRisk = 0;
  const now = new Map(L2.files.map((f) => [f.path, f]));
  const known = new Set(m.items.map((i) => i.remotePath));
  const catchUp: SalvageItem[] = [];
  for (const it of m.items) {
    if (!isFileItem(it)) continue;
    const f = now.get(it.remotePath);
    if (!f) {
      if (it.status === 'verified') {
        it.goneFromNode = true;
        it.reason = 'removed from the node after it was saved (the saved copy is kept)';
      } else if (it.selected) {
        Object.assign(it, { status: 'skipped', goneFromNode: true, reason: 'no longer on the node (nothing left there to save)' });
      }
      continue;
    }
    if (it.guardS3 && (f.size !== it.size || f.mtime !== it.mtime)) {
      // the node guard's S3 copy is of an older state: this file is downloaded as any other
      uncountGuardCopy(m, it);
      Object.assign(it, { size: f.size, mtime: f.mtime });
      atRisk += f.size;
      catchUp.push(it);
    } else if (it.status === 'verified' && (f.size !== it.size || f.mtime !== it.mtime)) {
      atRisk += f.size > it.size ? f.size - it.size : f.size;
      sv.bases.set(it.remotePath, {
        size: it.size,
        mtime: it.mtime,
        sha256: it.sha256!,
        localSha256: it.localSha256 ?? it.sha256!,
        redacted: !!it.redacted,
        md5: it.md5 ?? null,
        trusted: true,
      });
      Object.assign(it, { size: f.size, mtime: f.mtime, status: 'pending', changedAfterVerify: false, nodeSize: undefined, reason: null });
      catchUp.push(it);
    } else if (it.selected && it.status === 'failed' && !sv.fatal) {
      Object.assign(it, { size: f.size, mtime: f.mtime, status: 'pending', reason: null });
      catchUp.push(it);
    }
  }
  for (const f of L2.files) {
    if (known.has(f.path)) continue;
    const it = itemFor(sv, f);
    m.items.push(it);
    if (it.kind === 'symlink') Object.assign(it, { status: 'verified', syncedAt: new Date().toISOString() });
    else if (it.selected && it.status === 'pending' && isFileItem(it)) {
      atRisk += it.size;
      catchUp.push(it);
    } else if (!it.selected && it.status === 'pending') it.status = 'skipped';
  }
  for (const c of L2.caches) if (!known.has(c.path)) m.items.push(cacheItem(sv, c));
  m.writers = L2.writers.map(writerInfo);
  if (catchUp.length) {
    sv.filesTotal += catchUp.length;
    sv.bytesTotal += catchUp.reduce((a, b) => a + b.size - (sv.bases.get(b.remotePath)?.size ?? 0), 0);
    sv.progress('final', `Final pass: ${catchUp.length} file(s) changed or new`);
    await transferItems(sv, catchUp, 'final');
    // Anything that moved again while we fetched it is still changing.
    const fetched = catchUp.filter((i) => i.status === 'verified');
    try {
      const st = await remoteStats(
        t,
        fetched.map((i) => i.remotePath),
        sv.o.signal,
      );
      for (const it of fetched) {
        const s = st.get(it.remotePath);
        if (!s) continue;
        const listedMtime = Math.floor(Date.parse(it.mtime) / 1000);
        if (s.size !== it.size || s.mtime > listedMtime + 1) {
          it.changedAfterVerify = true;
          it.nodeSize = s.size;
          it.reason = `verified at ${it.size} B, but it changed again on the node (now ${s.size} B): still being written`;
        }
      }
    } catch (e) {
      sv.log.warn(`Could not re-check files after the final pass: ${errorMessage(e)}`);
    }
  }
  sv.save(true);
  return {
    listedAt,
    changedBytes: atRisk,
    fetchedBytes: m.stats.bytesTransferred - before.bytes,
    fetchedFiles: m.stats.filesTransferred - before.files,
  };
}
