/**
 * What a salvage phase (plan, resume, transfer, final pass, git, deadline, S3, verdict) reads and changes
 * of the run: the state `Salvager` (flows/salvage.ts) holds. The phases take this interface, not the class, so
 * the orchestrator imports its phases and no phase imports the orchestrator.
 */
import type { Logger } from '../util/logger';
import type { SglangServer } from '../sglang/serverArgv';
import type { SalvageListing } from './plan/listing';
import type { LocalNames } from './dest/paths';
import type { WriterPool } from './transfer/writerPool';
import type { PhaseTimer } from './report/timings';
import type { SalvageJournal } from './dest/journal';
import type { GuardSeen, SalvageManifest, SalvageOptions, SalvageProgress } from './salvageTypes';
import type { LocalBase } from './salvageUtil';

export interface SalvageRun {
  readonly o: SalvageOptions;
  readonly manifest: SalvageManifest;
  readonly dir: string;
  readonly log: Logger;
  readonly timer: PhaseTimer;
  readonly redact: boolean;
  readonly previous: SalvageManifest | null;
  readonly bases: Map<string, LocalBase>;
  readonly localNames: LocalNames;
  readonly journal: SalvageJournal;
  previousLocal: Map<string, string | null> | null;
  bytesDone: number;
  bytesTotal: number;
  filesDone: number;
  filesTotal: number;
  lastWrite: number;
  /** The writer threads of small-file batches (transfer/writerPool.ts), while files travel. */
  writers: WriterPool | null;
  fatal: string | null;
  listing: SalvageListing | null;
  servers: SglangServer[];
  modelDirs: string[];
  probeServers: SglangServer[];
  /** The probe's servers once it answered (plan.ts: awaited there only when the listing found servers). */
  probed: Promise<SglangServer[]>;
  /** The node's own guard, read before the listing: its folders are never listed. */
  guardSeen: GuardSeen | null;
  /** Tell the face what is happening now. */
  progress(step: SalvageProgress['step'], message: string): void;
  /** A checkpoint: the journal's pending lines, and the manifest as a throttled snapshot. */
  save(force?: boolean): void;
  /** The whole manifest, now, atomically (plan, verdict); `compact` (default): the journal starts again empty. */
  writeManifest(compact?: boolean): void;
  /** Throws `cancelled` once the run's signal is aborted. */
  checkCancel(): void;
}
