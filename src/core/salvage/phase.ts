/**
 * What a salvage phase (plan, resume, transfer, final pass, git, deadline, S3, verdict) may use of its run: the
 * options and a few read-only services, never the run's state. A phase is a function of this and of its own inputs;
 * it returns a result (or, for files as they verify, reports each one to a sink) that the orchestrator
 * (flows/salvage.ts) applies to the manifest, the journal and the counts. No phase writes the run's state.
 */
import type { Logger } from '../util/logger';
import type { PhaseTimer } from './report/timings';
import type { SalvageItem, SalvageOptions, SalvageProgress } from './salvageTypes';

export interface PhaseEnv {
  readonly o: SalvageOptions;
  /** The run folder (every local write stays inside it). */
  readonly dir: string;
  readonly log: Logger;
  readonly timer: PhaseTimer;
  /** Tell the face what is happening now. */
  progress(step: SalvageProgress['step'], message: string): void;
  /** Throws `cancelled` once the run's signal is aborted. */
  checkCancel(): void;
}

/** What a phase found of one item: the fields to set; a field set to `undefined` is removed from the item. */
export type ItemPatch = { [K in keyof SalvageItem]?: SalvageItem[K] | undefined };

/** Apply a phase's patch to an item (the orchestrator's side). */
export function applyPatch(it: SalvageItem, patch: ItemPatch): void {
  const rec = it as unknown as Record<string, unknown>;
  for (const [k, v] of Object.entries(patch)) {
    if (v === undefined) delete rec[k];
    else rec[k] = v;
  }
}
