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
import { planNow } from '../salvage/plan/plan';
import { resumeFromPrevious } from '../salvage/plan/resume';
import { catchUp, finalPass } from '../salvage/transfer/finalPass';
import { closeBatchWriter, runFileStep } from '../salvage/transfer/transferPhase';
import { planDeadline } from '../salvage/plan/deadlineStep';
import { runS3Step, runUploadStep } from '../salvage/s3/s3Step';
import { finish } from '../salvage/report/verdict';
import type { SalvageRun } from '../salvage/salvageRun';
import { LocalBase, SnapshotResult, defaultSnapshot, isFileItem } from '../salvage/salvageUtil';
import { countGuardCopies } from '../salvage/plan/guardCopies';
import { readGuardSeen } from '../guard/seen';
import type { GuardSeen } from '../salvage/salvageTypes';

export class Salvager implements SalvageRun {
  readonly manifest: SalvageManifest;
  readonly dir: string;
  /** @internal */
  readonly log: Logger;
  /** @internal */
  bytesDone = 0;
  /** @internal */
  bytesTotal = 0;
  /** @internal */
  filesDone = 0;
  /** @internal */
  filesTotal = 0;
  /** @internal */
  lastWrite = 0;
  /** @internal */
  writers: WriterPool | null = null;
  /** How long the last manifest write took (ms). @internal */
  lastSaveMs = 0;
  /** @internal */
  fatal: string | null = null;
  /** @internal */
  listing: SalvageListing | null = null;
  /** @internal */
  readonly previous: SalvageManifest | null;
  /** @internal */
  readonly bases = new Map<string, LocalBase>();
  /** @internal */
  servers: SglangServer[] = [];
  /** @internal */
  modelDirs: string[] = [];
  /** @internal */
  readonly redact: boolean;
  readonly timer: PhaseTimer;
  /** @internal */
  probeServers: SglangServer[] = [];
  /** @internal */
  probed: Promise<SglangServer[]> = Promise.resolve([]);
  /** Verified files, appended as they verify (the manifest is written whole only at the end and as snapshots). @internal */
  readonly journal: SalvageJournal;
  /** @internal */
  early: { snapshot?: Promise<Settled<SnapshotResult>>; s3?: Promise<Settled<S3Inventory>> } = {};

  constructor(/** @internal */ readonly o: SalvageOptions) {
    this.log = o.log ?? nullLogger;
    this.timer = o.timer ?? new PhaseTimer();
    const now = o.now ?? new Date();
    const c = chooseRunDir(o.base, o.node, now);
    this.dir = c.dir;
    this.previous = c.previous && Array.isArray(c.previous.items) ? c.previous : null;
    this.redact = o.redact ?? false;
    this.journal = new SalvageJournal(this.dir, (e) => this.writeFailed(e));
    this.manifest = {
      ...newManifest({
        node: o.node,
        host: o.transport.describe(),
        startedAt: now.toISOString(),
        dest: this.dir,
        sizeThreshold: o.sizeThreshold ?? 256 * 1024 * 1024,
        stepStatus: 'pending',
        redact: this.redact,
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
  /** @internal */
  save(force = false): void {
    if (force) this.journal.flush();
    const now = Date.now();
    if (now - this.lastWrite < Math.max(force ? 2000 : 5000, 20 * this.lastSaveMs)) return;
    this.writeManifest(false);
  }

  /** The manifest, atomically, now; `compact`: the journal's lines are in it, so the journal starts again empty. @internal */
  writeManifest(compact = true): void {
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

  /** @internal */
  guardSeen: GuardSeen | null = null;

  /**
   * List the node and build the plan (with preselection). The node's own guard is read first: its
   * folders are never listed, and the files it verified in S3 count as saved (not downloaded unless asked).
   */
  async plan(): Promise<SalvageItem[]> {
    return this.timer.time('plan', async () => {
      const g = this.o.guard;
      // read while the node is listed (plan.ts: listed again in the rare case that it names a folder to leave out)
      const seen = g === false ? Promise.resolve(null) : (g ?? ((s) => readGuardSeen(this.o.transport, s)))(this.o.signal);
      const items = await planNow(this, seen);
      await countGuardCopies(this, this.guardSeen);
      return items;
    });
  }

  /** Local names given so far (case- and normalisation-folded), so two remote files never share one. @internal */
  readonly localNames = new LocalNames();

  /** @internal */
  previousLocal: Map<string, string | null> | null = null;

  /** Run everything after the plan (call plan() first, or run()). */
  async execute(selectedPaths?: string[]): Promise<SalvageManifest> {
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
    try {
      resumeFromPrevious(this);
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
            if (step === 'data') planDeadline(this, this.o.deadline, mine, started);
          }
          await runFileStep(this, step, mine);
        }
      } finally {
        this.timer.note('idle', performance.eventLoopUtilization(elu).idle);
        await closeBatchWriter(this);
        this.timer.stop('transfer');
      }
      this.checkCancel();
      // What restore needs is read while the servers run: beside the final pass when it stops nothing (its listing
      // is the longer wait of the two), before it otherwise.
      if (this.o.stopServers || this.o.stopWriters) {
        await this.recordForRestore();
        await this.timer.time('finalPass', () => finalPass(this));
      } else await Promise.all([this.recordForRestore(), this.timer.time('finalPass', () => finalPass(this))]);
      this.checkCancel();
      await runS3Step(this, this.early.s3);
      this.checkCancel();
      if (this.o.uploadMissing) await this.timer.time('s3', () => runUploadStep(this));
      this.checkCancel();
      await this.runEnvironmentStep();
      this.checkCancel();
      if (this.o.dataCheck !== false) m.data = await recordDataQuality(this.o.transport, m.node, outputFilesOf(m.items));
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
      finish(this);
      if (!cancelled) throw e;
      return m;
    }
    finish(this);
    return m;
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

  /** Before the final pass (servers still running): what restore needs; never fails the salvage. @internal */
  async recordForRestore(): Promise<void> {
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
      const r = await catchUp(
        this,
        this.manifest.roots.map((x) => x.path),
      );
      finish(this);
      return r;
    } catch (e) {
      this.restorePending(e);
      throw e;
    }
  }

  /** A sync that stopped half-way: what was verified before stays verified (its local copy was not touched). @internal */
  restorePending(e: unknown): void {
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
    finish(this);
    return m;
  }

  /**
   * The environment snapshot and the S3 inventory start now and run while the files travel. The snapshot keeps
   * its place after the final pass when servers or writers are to be stopped (it never overlaps the stopping).
   */
  /** @internal */
  startEarlyWork(): void {
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

  /** @internal */
  async runEnvironmentStep(): Promise<void> {
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
}
