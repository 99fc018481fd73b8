/**
 * Transfer: a step's files as parallel batches and streams of large files, verified and scanned. Each file's
 * outcome goes to a sink as it settles (the orchestrator applies it to the item, the journal and the counts); the
 * phase itself writes no state of the run.
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
import type { ItemPatch, PhaseEnv } from '../phase';
import type { LocalBase } from '../salvageUtil';
import { SCAN_LIMIT, SMALL_FILE, STEPS, SalvageItem, StepId } from '../salvageTypes';
import { planBatches } from '../plan/deadline';
import { sha256File, writeAtomic } from '../dest/runDir';

/** The writer threads of a run's file steps: started with the first batches, kept for the next steps. */
export function startWriterPool(dir: string, md5: boolean): WriterPool {
  return new WriterPool(() => BatchWriter.start(dir, { md5, scanLimit: SCAN_LIMIT }));
}

/** How a file settled, for the orchestrator to apply (`patch`: the item's new fields). */
export type FileSettled =
  /** An earlier run's copy, unchanged on the node and re-hashed intact here: nothing travelled. */
  | { kind: 'kept'; patch: ItemPatch }
  /** Transferred and verified. */
  | { kind: 'verified'; patch: ItemPatch }
  /** Not saved; `fatal`: nothing more can be saved this run (the destination, the connection). */
  | { kind: 'failed'; reason: string | null; fatal: boolean }
  /** Vanished from the node before it was read. */
  | { kind: 'gone'; patch: ItemPatch }
  /** Failed on a dropped connection: pending again, for one more try. */
  | { kind: 'retry' }
  /** Never tried: the run stopped on a fatal error first. */
  | { kind: 'not-attempted'; reason: string }
  /** Verified, but its local entry did not keep its own bytes (a destination that folds names). */
  | { kind: 'entry-lost'; patch: ItemPatch };

/** What a transfer reads of the run besides its items. */
export interface TransferInput {
  /** Verified local copies of earlier (resume, final pass): kept when unchanged, appended to when they grew. */
  readonly bases: ReadonlyMap<string, LocalBase>;
  /** The run's writer threads (started on first use). */
  readonly writers: () => WriterPool;
  /** The destination folds names (each local entry is checked after the transfer). */
  readonly folds: boolean;
  /** The run's fatal error so far (a file's fatal failure, or the manifest that could not be written). */
  readonly fatal: () => string | null;
}

/** Where a transfer reports, as it goes. */
export interface TransferSink {
  /** Bytes arrived (progress and the run's byte count). */
  bytes(n: number, step: StepId | 'final', title: string): void;
  /** A file settled. */
  settle(it: SalvageItem, s: FileSettled): void;
  /** The base of `remotePath` was used (kept, or appended to). */
  dropBase(remotePath: string): void;
}

/** A finished transfer's outcome. `r.secrets`: the scan of the exact bytes, done where they were written. */
function settledOf(env: PhaseEnv, it: SalvageItem, r: TransferResult & { secrets?: SecretHit[] }): FileSettled {
  if (!r.ok) return { kind: 'failed', reason: r.reason, fatal: !!r.fatal };
  const patch: ItemPatch = {
    reason:
      r.bytes === it.size
        ? null
        : r.bytes > it.size
          ? `grew on the node while being read: verified the first ${r.bytes} B (listed ${it.size} B)`
          : `shrank on the node before it was read: verified the ${r.bytes} B it held then (listed ${it.size} B)`,
    size: r.bytes,
    sha256: r.remoteSha256,
    md5: r.md5,
    status: 'verified',
    redacted: false,
    localSha256: null,
    syncedAt: new Date().toISOString(),
  };
  if (it.localPath && r.bytes <= SCAN_LIMIT) Object.assign(patch, scanItem(env, it, r.secrets));
  return { kind: 'verified', patch };
}

/** Secrets scan of the exact copy; with --redact the local copy is then rewritten redacted (marked). */
function scanItem(env: PhaseEnv, it: SalvageItem, scanned?: SecretHit[]): ItemPatch {
  const abs = insideDest(env.dir, it.localPath!);
  const redact = env.o.redact ?? false;
  try {
    // Already scanned from the bytes that were written (and verified): read the copy only to redact it.
    if (scanned && !(redact && scanned.length)) return { secrets: scanned.length ? scanned : undefined };
    const buf = readFileSync(abs);
    if (!looksLikeText(buf)) return { secrets: undefined };
    const text = buf.toString('utf8');
    const hits = scanSecrets(text);
    const patch: ItemPatch = { secrets: hits.length ? hits : undefined };
    if (redact && hits.length) {
      const red = redactText(text);
      if (red !== text) {
        writeAtomic(abs, red);
        Object.assign(patch, {
          redacted: true,
          localSha256: createHash('sha256').update(red).digest('hex'),
          reason: 'verified against the node, then written redacted (--redact)',
        } satisfies ItemPatch);
      }
    }
    return patch;
  } catch (e) {
    env.log.warn(`Could not scan ${it.remotePath} for secrets: ${errorMessage(e)}`);
    return {};
  }
}

/**
 * Copies an earlier run (or this one) verified, unchanged on the node and intact here, are kept without a transfer;
 * the others are to fetch whole (`todo`) or, when they only grew, to append to (`appends`).
 */
async function keepUnchanged(
  env: PhaseEnv,
  input: TransferInput,
  sink: TransferSink,
  files: SalvageItem[],
): Promise<{ todo: SalvageItem[]; appends: SalvageItem[] }> {
  const todo: SalvageItem[] = [];
  const appends: SalvageItem[] = [];
  for (const it of files) {
    const b = input.bases.get(it.remotePath);
    if (b && b.size === it.size && b.mtime === it.mtime) {
      const h = b.trusted ? b.localSha256 : await sha256File(insideDest(env.dir, it.localPath!));
      if (h && h === b.localSha256) {
        sink.dropBase(it.remotePath);
        sink.settle(it, {
          kind: 'kept',
          patch: {
            sha256: b.sha256,
            md5: b.md5,
            localSha256: b.redacted ? b.localSha256 : null,
            redacted: b.redacted,
            status: 'verified',
            reason: b.redacted
              ? 'verified by a previous run, written redacted (--redact)'
              : 'verified by a previous run; local copy re-hashed and intact',
            syncedAt: new Date().toISOString(),
          },
        });
        continue;
      }
    }
    if (b && it.size > b.size && !b.redacted) appends.push(it);
    else todo.push(it);
  }
  return { todo, appends };
}

/**
 * Fetch files: unchanged verified local copies are re-hashed and kept (no transfer), grown ones get
 * their appended bytes, large files travel alone, small ones in batches; a few channels in parallel.
 */
export async function transferItems(
  env: PhaseEnv,
  input: TransferInput,
  sink: TransferSink,
  files: SalvageItem[],
  step: StepId | 'final',
  retry = false,
): Promise<void> {
  const { o } = env;
  const t = o.transport;
  const { todo, appends } = await keepUnchanged(env, input, sink, files);
  const big = todo.filter((f) => f.size > SMALL_FILE);
  const small = todo.filter((f) => f.size <= SMALL_FILE);
  const n = Math.max(1, Math.min(Number(process.env.GS_SALVAGE_STREAMS) || (o.concurrency ?? 3), 4));
  const batches = planBatches(small, n);
  type Job = { kind: 'one'; item: SalvageItem } | { kind: 'append'; item: SalvageItem } | { kind: 'batch'; items: SalvageItem[] };
  const jobs: Job[] = [
    ...appends.map((item): Job => ({ kind: 'append', item })),
    // With a deadline, value per byte: the small files (already sorted) before the large ones.
    ...(o.deadline ? [] : big.map((item): Job => ({ kind: 'one', item }))),
    ...batches.map((items): Job => ({ kind: 'batch', items })),
    ...(o.deadline ? big.map((item): Job => ({ kind: 'one', item })) : []),
  ];
  const title = step === 'final' ? 'Final pass' : STEPS.find((s) => s.id === step)!.title;
  const onBytes = (k: number) => sink.bytes(k, step, title);
  const byPath = new Map(todo.map((i) => [i.remotePath, i]));
  const md5 = !!o.s3;
  // Writer threads for the batches running in parallel: file writes stay off this thread.
  const writers = batches.length ? input.writers() : null;
  const writerThreads = writerCount(n);
  const one = async (item: SalvageItem) => {
    const r = await downloadOne(
      t,
      env.dir,
      { remotePath: item.remotePath, localPath: item.localPath!, size: item.size },
      onBytes,
      o.signal,
      {
        md5,
      },
    );
    sink.settle(item, settledOf(env, item, r));
  };
  const append = async (item: SalvageItem) => {
    const b = input.bases.get(item.remotePath)!;
    const r = await downloadAppend(
      t,
      env.dir,
      { remotePath: item.remotePath, localPath: item.localPath!, size: item.size, baseSize: b.size, baseSha256: b.sha256 },
      onBytes,
      o.signal,
      { md5 },
    );
    sink.dropBase(item.remotePath);
    if (!r.ok && r.prefixChanged) return one(item);
    const settled = settledOf(env, item, r);
    if (r.ok && settled.kind === 'verified')
      settled.patch.reason = `appended ${r.appended} B to the copy verified earlier (${b.size} B); whole file verified`;
    sink.settle(item, settled);
  };
  const batch = async (items: SalvageItem[]) => {
    const { writer, release } = writers!.take(writerThreads);
    await downloadBatch(
      t,
      env.dir,
      items.map((i) => ({ remotePath: i.remotePath, localPath: i.localPath!, size: i.size })),
      onBytes,
      (r) => {
        const it = byPath.get(r.remotePath);
        if (!it) return;
        if (!r.ok && r.reason === 'vanished from the node')
          sink.settle(it, {
            kind: 'gone',
            patch: {
              status: 'skipped',
              goneFromNode: true,
              reason: 'vanished from the node before it was copied (nothing left there to save)',
            },
          });
        else sink.settle(it, settledOf(env, it, r));
      },
      o.signal,
      { md5, writer, scanLimit: SCAN_LIMIT },
    ).finally(release);
  };
  const worker = async () => {
    for (;;) {
      if (input.fatal()) return;
      env.checkCancel();
      const job = jobs.shift();
      if (!job) return;
      if (job.kind === 'append') await append(job.item);
      else if (job.kind === 'one') await one(job.item);
      else await batch(job.items);
    }
  };
  await Promise.all(Array.from({ length: n }, worker));
  env.checkCancel();
  // A channel that closed without an exit status (the connection dropped and came back): once more, whole.
  if (!retry && !input.fatal()) {
    const again = files.filter((i) => i.status === 'failed' && /exit null|connection dropped|interrupted/.test(i.reason ?? ''));
    if (again.length) {
      for (const it of again) sink.settle(it, { kind: 'retry' });
      await transferItems(env, input, sink, again, step, true);
    }
  }
  const fatal = input.fatal();
  if (fatal)
    for (const it of files) if (it.status === 'pending') sink.settle(it, { kind: 'not-attempted', reason: `not attempted: ${fatal}` });
  // on a destination that folds names, "verified" needs each local entry to hold its own bytes
  if (!retry && input.folds) {
    const bad = confirmLocalEntries(env.dir, files);
    for (const b of bad) sink.settle(b.item, { kind: 'entry-lost', patch: { status: 'failed', reason: b.reason, sha256: null } });
    if (bad.length)
      env.log.warn(`${bad.length} file(s) did not keep their own local entry on this destination; they are listed as failed.`);
  }
}
