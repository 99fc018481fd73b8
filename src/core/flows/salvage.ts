/**
 * Salvage Node: the checklist the seeds ran by hand before a rented node was shut down.
 *
 *   plan → (review) → scripts → logs & progress → configs & patches → data → final pass → S3 → environment → verdict
 *
 * Everything lands in `<base>/<node>/<timestamp>/`: the files mirrored under `files/` (the node's bytes,
 * exactly), git state under `git/`, `running-servers.sh`, `environment.json|md`, `salvage-manifest.json`
 * (rewritten atomically as items finish, so a cancelled or crashed run leaves a consistent manifest),
 * `SALVAGE.md` and a `.gitignore` holding `*`. A rerun continues in the latest folder of the node: verified
 * files whose local bytes still hash the same and whose remote size and mtime did not change are not
 * transferred again; files that only grew get their appended bytes (the prefix verified first).
 *
 * The verdict is `safe` only when every selected item is verified, the listing is complete, and nothing
 * under the folders is still being written: while SGLang servers or other writers run it is `unsafe` with
 * the reason `still-running`, however quiet their logs happen to be. `stopServers` / `stopWriters` stop
 * them first (after writing the servers' command lines), then a final pass fetches what changed.
 */
export * from '../salvage/salvageTypes';
export * from '../salvage/plan/deadline';
export * from '../salvage/plan/stepOf';
export * from '../salvage/dest/runDir';
export * from '../salvage/capture/serversScript';
export * from '../salvage/plan/classify';
export * from '../salvage/report/report';
export { MANIFEST_FILE, parseManifest, readManifest } from '../salvage/manifestSchema';
import * as path from 'node:path';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { Logger, nullLogger } from '../util/logger';
import { SglangServer } from '../sglang/serverArgv';
import { outputFilesOf, recordDataQuality } from '../data/salvageRecord';
import { redactText } from '../util/redact';
import { SalvageListing } from '../salvage/plan/listing';
import { LocalNames, insideDest } from '../salvage/dest/paths';
import type { WriterPool } from '../salvage/transfer/writerPool';
import { PhaseTimer } from '../salvage/report/timings';
import { SalvageJournal } from '../salvage/dest/journal';
import { Settled, startEarly, unwrap } from '../salvage/early';
import { S3Inventory } from '../salvage/s3/s3';
import { LEFT_REASON_TEXT, STEPS, SalvageItem, SalvageManifest, SalvageOptions, SalvageProgress, StepId } from '../salvage/salvageTypes';
import { byValuePerByte } from '../salvage/plan/deadline';
import { chooseRunDir, writeAtomic } from '../salvage/dest/runDir';
import { MANIFEST_FILE, newManifest } from '../salvage/manifestSchema';
import {
  ItemContext,
  ItemNamer,
  ListingInput,
  listNode,
  planItems,
  prepareRunFolder,
  takeListing,
  useDestNames,
} from '../salvage/plan/plan';
import { resumeFromPrevious } from '../salvage/plan/resume';
import { diffListing, recheckFetched, stopServers, stopWriters } from '../salvage/transfer/finalPass';
import { nodeReadsFrames } from '../salvage/transfer/frames';
import { FileSettled, TransferInput, TransferSink, startWriterPool, transferItems } from '../salvage/transfer/transferPhase';
import { salvageGit, writeServersScript } from '../salvage/capture/gitStep';
import { planDeadline } from '../salvage/plan/deadlineStep';
import { S3Check, afterUploads, runS3Step, uploadMissing } from '../salvage/s3/s3Step';
import { judge, writeSalvageReport } from '../salvage/report/verdict';
import { settleWeightsInS3 } from '../salvage/plan/weights';
import { writerInfo } from '../salvage/plan/classify';
import { countGuardCopies, uncountGuardCopy } from '../salvage/plan/guardCopies';
import { ItemPatch, PhaseEnv, applyPatch } from '../salvage/phase';
import { LocalBase, SnapshotResult, defaultSnapshot, isFileItem, mergeRoots } from '../salvage/salvageUtil';
import { readGuardSeen } from '../guard/seen';
import type { GuardSeen } from '../salvage/salvageTypes';

/**
 * The orchestrator: it holds the run's state (the manifest, the counts, the listing, the resume bases, the journal)
 * and is the only one to change it. Each phase is a function of the run's options and services (`env`, a frozen
 * object that holds no state) and of its own inputs; the orchestrator hands them in and applies what they return
 * (`applyPatch`, the sink of file outcomes while files travel).
 */
export class Salvager {
  readonly manifest: SalvageManifest;
  readonly dir: string;
  /** @internal */
  readonly log: Logger;
  readonly timer: PhaseTimer;
  private bytesDone = 0;
  private bytesTotal = 0;
  private filesDone = 0;
  private filesTotal = 0;
  private lastWrite = 0;
  /** How long the last manifest write took (ms). */
  private lastSaveMs = 0;
  /** Why nothing more can be saved this run (a file's fatal failure, a manifest that cannot be written). */
  private fatal: string | null = null;
  /** The last listing of the node (the plan's, then the final pass's). */
  private listing: SalvageListing | null = null;
  private readonly previous: SalvageManifest | null;
  /** Verified local copies to keep or append to (resume, and files that changed after they were verified). */
  private readonly bases = new Map<string, LocalBase>();
  private servers: SglangServer[] = [];
  private modelDirs: string[] = [];
  /** The probe's servers once it answered (awaited by the plan only when the listing found servers). */
  private probed: Promise<SglangServer[]> = Promise.resolve([]);
  /** The node's own guard, read before the listing: its folders are never listed. */
  private guardSeen: GuardSeen | null = null;
  /** Local names given so far (case- and normalisation-folded), so two remote files never share one. */
  private readonly localNames = new LocalNames();
  private readonly namer: ItemNamer;
  /** Verified files, appended as they verify (the manifest is written whole only at the end and as snapshots). */
  private readonly journal: SalvageJournal;
  /** The writer threads of small-file batches, while files travel. */
  private writers: WriterPool | null = null;
  private early: { snapshot?: Promise<Settled<SnapshotResult>>; s3?: Promise<Settled<S3Inventory>> } = {};
  /** What every phase is handed: the options and services, never the state. */
  private readonly env: PhaseEnv;

  constructor(/** @internal */ readonly o: SalvageOptions) {
    this.log = o.log ?? nullLogger;
    this.timer = o.timer ?? new PhaseTimer();
    const now = o.now ?? new Date();
    const c = chooseRunDir(o.base, o.node, now);
    this.dir = c.dir;
    this.previous = c.previous && Array.isArray(c.previous.items) ? c.previous : null;
    this.namer = new ItemNamer(this.localNames, this.previous);
    this.journal = new SalvageJournal(this.dir, (e) => this.writeFailed(e));
    this.env = Object.freeze({
      o,
      dir: this.dir,
      log: this.log,
      timer: this.timer,
      progress: (step: SalvageProgress['step'], message: string) => this.progress(step, message),
      checkCancel: () => this.checkCancel(),
    });
    this.manifest = {
      ...newManifest({
        node: o.node,
        host: o.transport.describe(),
        startedAt: now.toISOString(),
        dest: this.dir,
        sizeThreshold: o.sizeThreshold ?? 256 * 1024 * 1024,
        stepStatus: 'pending',
        redact: o.redact ?? false,
      }),
      environment: null,
    };
  }

  /** @internal */
  progress(step: SalvageProgress['step'], message: string): void {
    this.o.onProgress?.({
      step,
      message,
      bytesDone: this.bytesDone,
      bytesTotal: this.bytesTotal,
      filesDone: this.filesDone,
      filesTotal: this.filesTotal,
    });
  }

  /**
   * A checkpoint (`force`): the journal's pending lines are written (while files verify, they reach it every 0.5 s
   * anyway); and the manifest as a snapshot, throttled: a manifest of 30,000 files is 15 MB and takes ~100 ms to write, so it is
   * written at most every 5 s (`force`: every 2 s) and never more than a twentieth of the time. A run cut between two
   * snapshots resumes from the last one with the journal laid over it (runDir.ts, journal.ts).
   */
  private save(force = false): void {
    if (force) this.journal.flush();
    const now = Date.now();
    if (now - this.lastWrite < Math.max(force ? 2000 : 5000, 20 * this.lastSaveMs)) return;
    this.writeManifest(false);
  }

  /** The manifest, atomically, now; `compact`: the journal's lines are in it, so the journal starts again empty. */
  private writeManifest(compact = true): void {
    const now = Date.now();
    this.lastWrite = now;
    this.journal.flush();
    try {
      writeAtomic(path.join(this.dir, MANIFEST_FILE), JSON.stringify(this.manifest, null, 2) + '\n');
      this.lastSaveMs = Date.now() - now;
      if (compact) this.journal.compact();
    } catch (e) {
      this.writeFailed(e);
    }
  }

  private writeFailed(e: unknown): void {
    this.log.error(`Could not write the manifest: ${errorMessage(e)}`);
    if (!this.fatal) this.fatal = `cannot write to ${this.dir}: ${errorMessage(e)}`;
  }

  /** @internal */
  checkCancel(): void {
    if (this.o.signal?.aborted) throw new GpuSessionsError('cancelled', 'Salvage cancelled.');
  }

  /** What the listing phase reads of the run now. */
  private listingInput(): ListingInput {
    return { previous: this.previous, modelDirs: this.modelDirs, guardTo: this.guardSeen?.to ?? null };
  }

  /** A listing becomes the run's (its model folders kept). */
  private takeListing(l: SalvageListing): SalvageListing {
    const t = takeListing(this.listingInput(), this.manifest.roots, l);
    this.modelDirs = t.modelDirs;
    (this.manifest as SalvageManifest & { modelDirs?: string[] }).modelDirs = this.modelDirs;
    return (this.listing = t.listing);
  }

  private itemContext(listing: SalvageListing): ItemContext {
    const o = this.o;
    return { listing, namer: this.namer, modelDirs: this.modelDirs, sizeThreshold: this.manifest.sizeThreshold, o, log: this.log };
  }

  /**
   * List the node and build the plan (with preselection). The listing starts first, and the node guard's record and
   * the local folder's first writes happen while it runs (three waits become one). The node's own guard is read
   * first: its folders are never listed (when it names a `--to` copy, the node is listed again without it), and the
   * files it verified in S3 count as saved (not downloaded unless asked).
   */
  async plan(): Promise<SalvageItem[]> {
    return this.timer.time('plan', async () => {
      const g = this.o.guard;
      const seen = g === false ? Promise.resolve(null) : (g ?? ((s) => readGuardSeen(this.o.transport, s)))(this.o.signal);
      this.progress('plan', 'Listing files on the node…');
      const listed = listNode(this.env, this.listingInput());
      // Whether the node can run the single-pass reader is asked beside the listing (cached per connection), not
      // between the plan and the first file (a round trip and a Python start on the way to the transfer).
      void nodeReadsFrames(this.o.transport);
      // handled below (awaited, or dropped for a second listing); never an unhandled rejection meanwhile
      listed.catch(() => undefined);
      seen.catch(() => undefined);
      prepareRunFolder(this.dir, this.manifest, this.o.gitignore !== false);
      this.lastWrite = Date.now();
      await useDestNames(this.env, this.localNames);
      this.guardSeen = await seen;
      const L = this.takeListing(this.guardSeen?.to ? await listNode(this.env, this.listingInput()) : await listed);
      this.manifest.roots = L.roots;
      const p = await planItems(this.env, this.itemContext(L), this.previous);
      this.servers = p.servers;
      this.probed = p.probed;
      this.manifest.items = p.items;
      this.manifest.writers = L.writers.map(writerInfo);
      // The plan's manifest: the base a cut run resumes from with the journal over it (kept until the verdict).
      this.writeManifest(false);
      const gc = await countGuardCopies(this.env, p.items, this.guardSeen);
      this.manifest.guard = gc.record;
      this.applyMarks(gc.counted);
      if (gc.record) this.save(true);
      return p.items;
    });
  }

  /** Run everything after the plan (call plan() first, or run()). */
  async execute(selectedPaths?: string[]): Promise<SalvageManifest> {
    const m = this.manifest;
    this.applySelection(selectedPaths);
    try {
      for (const r of resumeFromPrevious(this.previous, m.items, this.dir)) {
        this.bases.set(r.item.remotePath, r.base);
        if (r.secrets) r.item.secrets = r.secrets;
      }
      const files = m.items.filter((i) => i.selected && i.status === 'pending' && isFileItem(i));
      this.filesTotal = m.items.filter((i) => i.selected).length;
      this.filesDone = m.items.filter((i) => i.selected && i.status === 'verified').length;
      this.bytesTotal = files.reduce((a, b) => a + b.size, 0);
      const started = { ms: Date.now(), bytes: m.stats.bytesTransferred };
      // With a deadline, configs (small, and what reproduces the run) before the logs.
      const order: StepId[] = this.o.deadline ? ['scripts', 'configs', 'logs', 'data'] : ['scripts', 'logs', 'configs', 'data'];
      this.startEarlyWork();
      this.timer.start('transfer');
      const elu = performance.eventLoopUtilization();
      try {
        for (const step of order) {
          this.checkCancel();
          let mine = files.filter((f) => f.step === step);
          if (this.o.deadline) {
            mine = mine.sort(byValuePerByte);
            if (step === 'data') this.planDeadline(this.o.deadline, mine, started);
          }
          await this.runFileStep(step, mine);
        }
      } finally {
        this.timer.note('idle', performance.eventLoopUtilization(elu).idle);
        await this.closeWriters();
        this.timer.stop('transfer');
      }
      this.checkCancel();
      // What restore needs is read while the servers run: beside the final pass when it stops nothing (its listing
      // is the longer wait of the two), before it otherwise.
      if (this.o.stopServers || this.o.stopWriters) {
        await this.recordForRestore();
        await this.timer.time('finalPass', () => this.finalPass());
      } else await Promise.all([this.recordForRestore(), this.timer.time('finalPass', () => this.finalPass())]);
      this.checkCancel();
      // The data-quality check judges the files as the final pass left them; it never throws, and it runs on the
      // node while the S3 steps and the environment snapshot finish (it used to wait for them).
      const data = this.o.dataCheck !== false ? recordDataQuality(this.o.transport, m.node, outputFilesOf(m.items)) : null;
      await this.checkS3(this.early.s3);
      this.checkCancel();
      if (this.o.uploadMissing) await this.timer.time('s3', () => this.uploadMissing());
      this.checkCancel();
      await this.runEnvironmentStep();
      this.checkCancel();
      if (data) m.data = await data;
    } catch (e) {
      const cancelled = e instanceof GpuSessionsError && e.code === 'cancelled';
      for (const it of m.items) {
        if (it.status === 'pending') {
          it.status = 'skipped';
          it.reason = cancelled ? 'cancelled before it was downloaded' : `not done: ${errorMessage(e)}`;
        }
      }
      for (const s of STEPS) {
        const st = m.steps[s.id];
        if (st.status === 'pending' || st.status === 'running')
          m.steps[s.id] = { status: cancelled ? 'skipped' : 'failed', reason: cancelled ? 'cancelled' : errorMessage(e) };
      }
      this.finish();
      if (!cancelled) throw e;
      return m;
    }
    this.finish();
    return m;
  }

  /** The review's choice (`selectedPaths`; none: the plan's preselection) applied to the items. */
  private applySelection(selectedPaths?: string[]): void {
    const m = this.manifest;
    const fixed = (it: SalvageItem) => it.kind === 'symlink' || it.kind === 'cache' || it.leftReason === 'secret-store';
    if (selectedPaths) {
      const sel = new Set(selectedPaths);
      for (const it of m.items) {
        if (fixed(it) || (!it.localPath && it.status !== 'pending')) continue;
        it.selected = sel.has(it.remotePath);
        if (!it.selected) {
          it.status = 'skipped';
          it.leftReason ??= 'deselected';
          it.reason ??= LEFT_REASON_TEXT.deselected;
        } else {
          it.leftReason = null;
          if (it.status === 'skipped') {
            it.status = 'pending';
            it.reason = null;
          }
        }
      }
    } else {
      for (const it of m.items) {
        if (it.selected && it.leftReason === null) continue;
        if (!it.selected && it.status === 'pending') it.status = 'skipped';
      }
    }
    for (const it of m.items) {
      if (it.kind === 'symlink' && it.selected) Object.assign(it, { status: 'verified', syncedAt: new Date().toISOString() });
      if (it.leftReason === 'secret-store') Object.assign(it, { selected: false, status: 'skipped' });
    }
  }

  /**
   * The one salvage flow every face drives: plan → the face's review → execute. Resolves to `null` when the
   * review stops it (the run folder then holds only the plan's manifest; nothing was downloaded).
   */
  async run(): Promise<SalvageManifest | null> {
    const items = await this.plan();
    const chosen = this.o.review ? await this.o.review(items, this.manifest) : undefined;
    if (chosen === null) {
      this.log.info(`Salvage of ${this.o.node} stopped at the review; nothing downloaded.`);
      return null;
    }
    this.checkCancel();
    return this.execute(chosen);
  }

  /** The bulk data against the rental deadline: the plan in the manifest, and said. */
  private planDeadline(at: Date, data: SalvageItem[], started: { ms: number; bytes: number }): void {
    const d = planDeadline(at, data, { ms: started.ms, moved: this.manifest.stats.bytesTransferred - started.bytes });
    this.manifest.deadline = d.plan;
    this.save(true);
    this.log.warn(d.message);
    this.progress('data', d.message);
  }

  /** One step's files (and, in its step, the servers' command lines and the repositories' git state). */
  private async runFileStep(step: StepId, files: SalvageItem[]): Promise<void> {
    const m = this.manifest;
    const gitItems = step === 'configs' ? m.items.filter((i) => i.kind === 'git-state' && i.selected && i.status === 'pending') : [];
    const cmdItems = step === 'scripts' ? m.items.filter((i) => i.kind === 'server-cmdline' && i.selected && i.status === 'pending') : [];
    if (files.length === 0 && gitItems.length === 0 && cmdItems.length === 0) {
      const already = m.items.some((i) => i.step === step && i.status === 'verified');
      m.steps[step] = already
        ? { status: 'done', reason: 'already salvaged by a previous run' }
        : { status: 'skipped', reason: 'nothing of this kind selected on the node' };
      // Throttled, not forced: a manifest of 30,000 files takes ~100 ms to write, and a run cut here resumes
      // the same from 'pending', 'running' or 'skipped' (the step's end, below, is forced).
      this.save();
      return;
    }
    m.steps[step] = { status: 'running' };
    this.save();
    this.progress(step, STEPS.find((s) => s.id === step)!.title);
    for (const it of cmdItems) {
      applyPatch(it, writeServersScript(this.dir, m.node, this.servers, it));
      this.filesDone++;
    }
    await transferItems(this.env, this.transferInput(), this.sink, files, step);
    for (const it of gitItems) {
      this.checkCancel();
      applyPatch(it, await salvageGit(this.env, it));
      this.save();
      this.filesDone++;
    }
    const mine = [...files, ...gitItems, ...cmdItems];
    const failed = mine.filter((i) => i.status === 'failed');
    m.steps[step] = failed.length
      ? { status: 'failed', reason: `${failed.length} of ${mine.length} item(s) failed${this.fatal ? `: ${this.fatal}` : ''}` }
      : { status: 'done' };
    this.save(true);
  }

  /** What a transfer reads of the run, now. */
  private transferInput(): TransferInput {
    return {
      bases: this.bases,
      writers: () => (this.writers ??= startWriterPool(this.dir, !!this.o.s3)),
      folds: this.localNames.folds,
      fatal: () => this.fatal,
    };
  }

  /** Where a transfer's outcomes land: the items, the journal, the counts and the checkpoints. */
  private readonly sink: TransferSink = {
    bytes: (n, step, title) => {
      this.bytesDone += n;
      this.manifest.stats.bytesTransferred += n;
      this.progress(step, title);
    },
    dropBase: (remotePath) => this.bases.delete(remotePath),
    settle: (it, s) => this.settle(it, s),
  };

  private settle(it: SalvageItem, s: FileSettled): void {
    switch (s.kind) {
      case 'kept':
        applyPatch(it, s.patch);
        this.journal.record(it);
        this.filesDone++;
        this.bytesTotal -= it.size;
        return;
      case 'verified':
        applyPatch(it, s.patch);
        this.manifest.stats.filesTransferred++;
        this.journal.record(it);
        break;
      case 'failed':
        it.status = 'failed';
        it.reason = s.reason;
        if (s.fatal && !this.fatal) this.fatal = s.reason;
        break;
      case 'gone':
        applyPatch(it, s.patch);
        this.filesDone++;
        return;
      case 'retry':
        Object.assign(it, { status: 'pending', reason: null });
        this.filesDone--;
        return;
      case 'not-attempted':
        Object.assign(it, { status: 'failed', reason: s.reason });
        return;
      case 'entry-lost':
        applyPatch(it, s.patch);
        return;
    }
    this.filesDone++;
    this.save();
  }

  private async closeWriters(): Promise<void> {
    const pool = this.writers;
    this.writers = null;
    const idle = await pool?.close();
    if (idle !== undefined && idle !== null) this.timer.note('writerIdle', idle);
  }

  /**
   * The final pass: stop servers / writers when asked (the servers' command lines are written first), list again
   * (one exec), fetch only what changed, check the fetched ones once more.
   */
  private async finalPass(): Promise<void> {
    const m = this.manifest;
    const L1 = this.listing;
    if (!L1) return;
    if (this.o.stopServers && L1.writers.some((w) => w.server)) {
      for (const it of m.items)
        if (it.kind === 'server-cmdline' && it.status !== 'verified')
          applyPatch(it, writeServersScript(this.dir, m.node, this.servers, it));
      m.stopped.push(...(await stopServers(this.env, this.servers)));
      this.save(true);
    }
    if (this.o.stopWriters && (await stopWriters(this.env, L1, (s) => m.stopped.push(s)))) this.save(true);
    this.checkCancel();
    try {
      await this.catchUp(L1.roots.map((r) => r.path));
    } catch (e) {
      if (e instanceof GpuSessionsError && e.code === 'cancelled') throw e;
      this.log.warn(`The final listing failed: ${errorMessage(e)}`);
      for (const it of m.items)
        if (it.status === 'verified' && isFileItem(it)) {
          it.changedAfterVerify = true;
          it.reason = `could not be checked again after it was saved: ${errorMessage(e)}`;
        }
    }
    this.save(true);
  }

  /**
   * List again (one exec) and fetch only what changed since it was saved: appended bytes from the verified
   * offset (prefix hash first: a truncated or rotated file is fetched whole), new files, rewritten files;
   * then check the fetched ones once more. Throws when the node cannot be listed.
   */
  private async catchUp(
    extraRoots: string[],
  ): Promise<{ listedAt: string; changedBytes: number; fetchedBytes: number; fetchedFiles: number }> {
    const m = this.manifest;
    const before = { bytes: m.stats.bytesTransferred, files: m.stats.filesTransferred };
    this.progress('final', 'Final pass: listing what changed since it was saved…');
    const L2 = this.takeListing(await listNode(this.env, this.listingInput(), extraRoots));
    const listedAt = new Date().toISOString();
    m.roots = mergeRoots(m.roots, L2.roots);
    const diff = diffListing(this.itemContext(L2), m.items, !!this.fatal);
    for (const c of diff.changes) {
      if (c.uncountGuard) uncountGuardCopy(m, c.item);
      if (c.base) this.bases.set(c.item.remotePath, c.base);
      applyPatch(c.item, c.patch);
    }
    m.items.push(...diff.added);
    m.writers = L2.writers.map(writerInfo);
    const fetch = diff.fetch;
    if (fetch.length) {
      this.filesTotal += fetch.length;
      this.bytesTotal += fetch.reduce((a, b) => a + b.size - (this.bases.get(b.remotePath)?.size ?? 0), 0);
      this.progress('final', `Final pass: ${fetch.length} file(s) changed or new`);
      await transferItems(this.env, this.transferInput(), this.sink, fetch, 'final');
      // Anything that moved again while we fetched it is still changing.
      const again = await recheckFetched(
        this.env,
        fetch.filter((i) => i.status === 'verified'),
      );
      this.applyMarks(again);
    }
    this.save(true);
    return {
      listedAt,
      changedBytes: diff.atRisk,
      fetchedBytes: m.stats.bytesTransferred - before.bytes,
      fetchedFiles: m.stats.filesTransferred - before.files,
    };
  }

  /** Before the final pass (servers still running): what restore needs; never fails the salvage. */
  private async recordForRestore(): Promise<void> {
    const listing = this.listing;
    if (!listing) return;
    // the plan's files and listing, taken now (the final pass beside it lists again and adds items)
    const paths = this.manifest.items.filter((i) => i.selected && isFileItem(i)).map((i) => i.remotePath);
    const { captureForRestore } = await import('../salvage/capture/restoreCapture');
    this.manifest.restore = await captureForRestore(this.o.transport, listing, paths, { signal: this.o.signal, log: this.log });
    this.save(); // the final pass, next, saves forced
  }

  /**
   * One round of "Keep Node Salvaged": the catch-up pass over the folders found so far, then the manifest
   * (atomically) and SALVAGE.md. Throws when the node cannot be reached.
   */
  async sync(): Promise<{ listedAt: string; changedBytes: number; fetchedBytes: number; fetchedFiles: number }> {
    if (!this.listing) throw new GpuSessionsError('usage', 'sync() needs a finished salvage first (run()).');
    this.fatal = null;
    try {
      const r = await this.catchUp(this.manifest.roots.map((x) => x.path));
      this.finish();
      return r;
    } catch (e) {
      this.restorePending(e);
      throw e;
    }
  }

  /** A sync that stopped half-way: what was verified before stays verified (its local copy was not touched). */
  private restorePending(e: unknown): void {
    for (const it of this.manifest.items) {
      if (it.status !== 'pending') continue;
      const b = this.bases.get(it.remotePath);
      if (b) {
        Object.assign(it, {
          status: 'verified',
          nodeSize: it.size,
          size: b.size,
          mtime: b.mtime,
          sha256: b.sha256,
          changedAfterVerify: true,
        });
        it.reason = `changed on the node; the copy verified earlier (${b.size} B) is kept (${errorMessage(e)})`;
        this.bases.delete(it.remotePath);
      } else Object.assign(it, { status: 'skipped', reason: `not fetched: ${errorMessage(e)}` });
    }
    this.writeManifest();
  }

  /** The node is gone: the last synced state becomes final; SALVAGE.md says what was saved, when, and what is at risk. */
  finalizeVanished(info: { lastSyncedAt: string | null; atRiskBytes: number; atRiskFiles: number; error: string }): SalvageManifest {
    const m = this.manifest;
    m.vanished = { at: new Date().toISOString(), ...info };
    this.finish();
    return m;
  }

  /**
   * The environment snapshot and the S3 inventory start now and run while the files travel. The snapshot keeps
   * its place after the final pass when servers or writers are to be stopped (it never overlaps the stopping).
   */
  private startEarlyWork(): void {
    const snap = this.o.snapshot ?? defaultSnapshot;
    if (!this.o.stopServers && !this.o.stopWriters)
      this.early.snapshot = startEarly(this.timer, 'snapshot', () =>
        this.probed.then((servers) => snap(this.o.transport, this.manifest.node, servers)),
      );
    const s3 = this.o.s3;
    if (s3)
      this.early.s3 = startEarly(this.timer, 's3', async () =>
        (await import('../salvage/s3/s3')).inventoryS3(s3, { signal: this.o.signal as AbortSignal | undefined }),
      );
  }

  private async runEnvironmentStep(): Promise<void> {
    const m = this.manifest;
    m.steps.environment = { status: 'running' };
    this.progress('environment', 'Recording the environment…');
    try {
      const snap = this.o.snapshot ?? defaultSnapshot;
      const s = unwrap(
        await (this.early.snapshot ??
          startEarly(this.timer, 'snapshot', () => this.probed.then((servers) => snap(this.o.transport, m.node, servers)))),
      );
      const jsonText = redactText(JSON.stringify(s.json, null, 2)) + '\n';
      writeAtomic(insideDest(this.dir, 'environment.json'), jsonText);
      writeAtomic(insideDest(this.dir, 'environment.md'), redactText(s.markdown));
      m.environment = { json: 'environment.json', md: 'environment.md', summary: s.summary };
      m.steps.environment = { status: 'done' };
    } catch (e) {
      m.steps.environment = { status: 'failed', reason: errorMessage(e) };
    }
    this.save(true);
  }

  /** What S3 holds (`early`: the inventory started with the transfer). */
  private async checkS3(early?: Promise<Settled<S3Inventory>>): Promise<S3Check> {
    const m = this.manifest;
    if (this.o.s3) m.steps.s3 = { status: 'running' };
    const c = await runS3Step(this.env, m.items, early);
    m.steps.s3 = c.step;
    if (c.record) m.s3 = c.record;
    this.applyMarks(c.marks);
    this.save(true);
    return c;
  }

  private applyMarks(marks: readonly { item: SalvageItem; patch: ItemPatch }[]): void {
    for (const k of marks) applyPatch(k.item, k.patch);
  }

  /** Send what S3 is missing from the node, then check S3 again; the uploaded files are present. */
  private async uploadMissing(): Promise<void> {
    const m = this.manifest;
    if (!this.o.s3 || !m.s3 || m.s3.error) return;
    const res = await uploadMissing(this.env, m.items);
    if (!res) return;
    m.uploads = res;
    this.save(true);
    const checked = await this.checkS3();
    const after = afterUploads(m.items, res, checked.step);
    this.applyMarks(after.marks);
    m.steps.s3 = after.step;
    this.save(true);
  }

  /** The verdict, the manifest and SALVAGE.md. @internal */
  finish(): void {
    const m = this.manifest;
    this.timer.start('verdict');
    settleWeightsInS3(m.items);
    Object.assign(m, judge(m, this.listing, this.modelDirs));
    m.finishedAt = new Date().toISOString();
    m.timings = this.timer.result();
    this.writeManifest();
    writeSalvageReport(this.dir, m, this.log);
    this.progress('verdict', m.verdict === 'safe' ? 'Safe to shut down.' : `Not safe: ${m.reasons.join(', ')}.`);
    this.timer.stop('verdict');
    m.timings = this.timer.result();
  }
}
