/**
 * Transfer: one step's files as parallel tar batches and streams of large files, verified, scanned and marked.
 */
import { confirmLocalEntries } from './entryCheck';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { errorMessage } from '../../util/errors';
import { redactText } from '../../util/redact';
import { insideDest } from '../dest/paths';
import { TransferResult, downloadAppend, downloadOne } from './transfer';
import { downloadBatch } from './batchReceive';
import { SecretHit, looksLikeText, scanSecrets } from './secretScan';
import { BatchWriter } from './batchWriter';
import { WriterPool, writerCount } from './writerPool';
import { SCAN_LIMIT, SMALL_FILE, STEPS, SalvageItem, StepId } from '../salvageTypes';
import { planBatches } from '../plan/deadline';
import { sha256File, writeAtomic } from '../dest/runDir';
import type { SalvageRun } from '../salvageRun';
import { salvageGit, writeServersScript } from '../capture/gitStep';

/** The writer threads of the run's file steps: started with the first batches, kept for the next steps. */
function writerPool(sv: SalvageRun): WriterPool {
  return (sv.writers ??= new WriterPool(() => BatchWriter.start(sv.dir, { md5: !!sv.o.s3, scanLimit: SCAN_LIMIT })));
}

export async function closeBatchWriter(sv: SalvageRun): Promise<void> {
  const pool = sv.writers;
  sv.writers = null;
  const idle = await pool?.close();
  if (idle !== undefined && idle !== null) sv.timer.note('writerIdle', idle);
}

/** `r.secrets`: the scan of the exact bytes, done where they were written (else the local copy is read). */
function markItem(sv: SalvageRun, it: SalvageItem, r: TransferResult & { secrets?: SecretHit[] }): void {
  if (r.ok) {
    if (r.bytes !== it.size) {
      it.reason =
        r.bytes > it.size
          ? `grew on the node while being read: verified the first ${r.bytes} B (listed ${it.size} B)`
          : `shrank on the node before it was read: verified the ${r.bytes} B it held then (listed ${it.size} B)`;
      it.size = r.bytes;
    } else it.reason = null;
    it.sha256 = r.remoteSha256;
    it.md5 = r.md5;
    it.status = 'verified';
    it.redacted = false;
    it.localSha256 = null;
    it.syncedAt = new Date().toISOString();
    sv.manifest.stats.filesTransferred++;
    if (it.localPath && it.size <= SCAN_LIMIT) scanItem(sv, it, r.secrets);
    sv.journal.record(it);
  } else {
    it.status = 'failed';
    it.reason = r.reason;
    if (r.fatal && !sv.fatal) sv.fatal = r.reason;
  }
  sv.filesDone++;
  sv.save();
}

/** Secrets scan of the exact copy; with --redact the local copy is then rewritten redacted (marked). */
function scanItem(sv: SalvageRun, it: SalvageItem, scanned?: SecretHit[]): void {
  const abs = insideDest(sv.dir, it.localPath!);
  try {
    // Already scanned from the bytes that were written (and verified): read the copy only to redact it.
    if (scanned && !(sv.redact && scanned.length)) {
      if (scanned.length) it.secrets = scanned;
      else delete it.secrets;
      return;
    }
    const buf = readFileSync(abs);
    if (!looksLikeText(buf)) {
      delete it.secrets;
      return;
    }
    const text = buf.toString('utf8');
    const hits = scanSecrets(text);
    if (hits.length) it.secrets = hits;
    else delete it.secrets;
    if (sv.redact && hits.length) {
      const red = redactText(text);
      if (red !== text) {
        writeAtomic(abs, red);
        it.redacted = true;
        it.localSha256 = createHash('sha256').update(red).digest('hex');
        it.reason = 'verified against the node, then written redacted (--redact)';
      }
    }
  } catch (e) {
    sv.log.warn(`Could not scan ${it.remotePath} for secrets: ${errorMessage(e)}`);
  }
}

export async function runFileStep(sv: SalvageRun, step: StepId, files: SalvageItem[]): Promise<void> {
  const m = sv.manifest;
  const gitItems = step === 'configs' ? m.items.filter((i) => i.kind === 'git-state' && i.selected && i.status === 'pending') : [];
  const cmdItems = step === 'scripts' ? m.items.filter((i) => i.kind === 'server-cmdline' && i.selected && i.status === 'pending') : [];
  if (files.length === 0 && gitItems.length === 0 && cmdItems.length === 0) {
    const already = m.items.some((i) => i.step === step && i.status === 'verified');
    m.steps[step] = already
      ? { status: 'done', reason: 'already salvaged by a previous run' }
      : { status: 'skipped', reason: 'nothing of this kind selected on the node' };
    // Throttled, not forced: a manifest of 30,000 files takes ~100 ms to write, and a run cut here resumes
    // the same from 'pending', 'running' or 'skipped' (the step's end, below, is forced).
    sv.save();
    return;
  }
  m.steps[step] = { status: 'running' };
  sv.save();
  sv.progress(step, STEPS.find((s) => s.id === step)!.title);
  for (const it of cmdItems) {
    writeServersScript(sv, it);
    sv.filesDone++;
  }
  await transferItems(sv, files, step);
  for (const it of gitItems) {
    sv.checkCancel();
    await salvageGit(sv, it);
    sv.filesDone++;
  }
  const mine = [...files, ...gitItems, ...cmdItems];
  const failed = mine.filter((i) => i.status === 'failed');
  m.steps[step] = failed.length
    ? { status: 'failed', reason: `${failed.length} of ${mine.length} item(s) failed${sv.fatal ? `: ${sv.fatal}` : ''}` }
    : { status: 'done' };
  sv.save(true);
}

/**
 * Fetch files: unchanged verified local copies are re-hashed and kept (no transfer), grown ones get
 * their appended bytes, large files travel alone, small ones in tar batches; a few channels in parallel.
 */
export async function transferItems(sv: SalvageRun, files: SalvageItem[], step: StepId | 'final', retry = false): Promise<void> {
  const t = sv.o.transport;
  const todo: SalvageItem[] = [];
  const appends: SalvageItem[] = [];
  for (const it of files) {
    const b = sv.bases.get(it.remotePath);
    if (b && b.size === it.size && b.mtime === it.mtime) {
      const h = b.trusted ? b.localSha256 : await sha256File(insideDest(sv.dir, it.localPath!));
      if (h && h === b.localSha256) {
        Object.assign(it, {
          sha256: b.sha256,
          md5: b.md5,
          localSha256: b.redacted ? b.localSha256 : null,
          redacted: b.redacted,
          status: 'verified',
          reason: b.redacted
            ? 'verified by a previous run, written redacted (--redact)'
            : 'verified by a previous run; local copy re-hashed and intact',
          syncedAt: new Date().toISOString(),
        });
        sv.bases.delete(it.remotePath);
        sv.journal.record(it);
        sv.filesDone++;
        sv.bytesTotal -= it.size;
        continue;
      }
    }
    if (b && it.size > b.size && !b.redacted) appends.push(it);
    else todo.push(it);
  }
  const big = todo.filter((f) => f.size > SMALL_FILE);
  const small = todo.filter((f) => f.size <= SMALL_FILE);
  const n = Math.max(1, Math.min(Number(process.env.GS_SALVAGE_STREAMS) || (sv.o.concurrency ?? 3), 4));
  const batches = planBatches(small, n);
  type Job = { kind: 'one'; item: SalvageItem } | { kind: 'append'; item: SalvageItem } | { kind: 'batch'; items: SalvageItem[] };
  const jobs: Job[] = [
    ...appends.map((item): Job => ({ kind: 'append', item })),
    // With a deadline, value per byte: the small files (already sorted) before the large ones.
    ...(sv.o.deadline ? [] : big.map((item): Job => ({ kind: 'one', item }))),
    ...batches.map((items): Job => ({ kind: 'batch', items })),
    ...(sv.o.deadline ? big.map((item): Job => ({ kind: 'one', item })) : []),
  ];
  const title = step === 'final' ? 'Final pass' : STEPS.find((s) => s.id === step)!.title;
  const onBytes = (n: number) => {
    sv.bytesDone += n;
    sv.manifest.stats.bytesTransferred += n;
    sv.progress(step, title);
  };
  const byPath = new Map(todo.map((i) => [i.remotePath, i]));
  const md5 = !!sv.o.s3;
  // Writer threads for the batches running in parallel: file writes stay off this thread.
  const writers = batches.length ? writerPool(sv) : null;
  const writerThreads = writerCount(n);
  const one = async (item: SalvageItem) => {
    const r = await downloadOne(
      t,
      sv.dir,
      { remotePath: item.remotePath, localPath: item.localPath!, size: item.size },
      onBytes,
      sv.o.signal,
      { md5 },
    );
    markItem(sv, item, r);
  };
  const worker = async () => {
    for (;;) {
      if (sv.fatal) return;
      sv.checkCancel();
      const job = jobs.shift();
      if (!job) return;
      if (job.kind === 'append') {
        const b = sv.bases.get(job.item.remotePath)!;
        const r = await downloadAppend(
          t,
          sv.dir,
          {
            remotePath: job.item.remotePath,
            localPath: job.item.localPath!,
            size: job.item.size,
            baseSize: b.size,
            baseSha256: b.sha256,
          },
          onBytes,
          sv.o.signal,
          { md5 },
        );
        sv.bases.delete(job.item.remotePath);
        if (!r.ok && r.prefixChanged) await one(job.item);
        else {
          markItem(sv, job.item, r);
          if (r.ok) job.item.reason = `appended ${r.appended} B to the copy verified earlier (${b.size} B); whole file verified`;
        }
      } else if (job.kind === 'one') {
        await one(job.item);
      } else {
        const { writer, release } = writers!.take(writerThreads);
        await downloadBatch(
          t,
          sv.dir,
          job.items.map((i) => ({ remotePath: i.remotePath, localPath: i.localPath!, size: i.size })),
          onBytes,
          (r) => {
            const it = byPath.get(r.remotePath);
            if (!it) return;
            if (!r.ok && r.reason === 'vanished from the node') {
              Object.assign(it, {
                status: 'skipped',
                goneFromNode: true,
                reason: 'vanished from the node before it was copied (nothing left there to save)',
              });
              sv.filesDone++;
              return;
            }
            markItem(sv, it, r);
          },
          sv.o.signal,
          { md5, writer, scanLimit: SCAN_LIMIT },
        ).finally(release);
      }
    }
  };
  await Promise.all(Array.from({ length: n }, worker));
  sv.checkCancel();
  // A channel that closed without an exit status (the connection dropped and came back): once more, whole.
  if (!retry && !sv.fatal) {
    const again = files.filter((i) => i.status === 'failed' && /exit null|connection dropped|interrupted/.test(i.reason ?? ''));
    if (again.length) {
      for (const it of again) Object.assign(it, { status: 'pending', reason: null });
      sv.filesDone -= again.length;
      await transferItems(sv, again, step, true);
    }
  }
  if (sv.fatal) {
    for (const it of files) if (it.status === 'pending') Object.assign(it, { status: 'failed', reason: `not attempted: ${sv.fatal}` });
  }
  // on a destination that folds names, "verified" needs each local entry to hold its own bytes
  if (!retry && sv.localNames.folds) {
    const bad = confirmLocalEntries(sv.dir, files);
    if (bad) sv.log.warn(`${bad} file(s) did not keep their own local entry on this destination; they are listed as failed.`);
  }
}
