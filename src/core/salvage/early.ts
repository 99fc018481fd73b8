/**
 * Work a salvage starts early and collects later, so it runs while the files travel (the environment
 * snapshot, the S3 inventory): a settled result that never rejects (no unhandled rejection when the run
 * stops first), with the work's own duration added to its phase.
 */
import type { Phase, PhaseTimer } from './report/timings';

export type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

export function startEarly<T>(timer: PhaseTimer, phase: Phase, fn: () => Promise<T>): Promise<Settled<T>> {
  return timer.time(phase, fn).then(
    (value): Settled<T> => ({ ok: true, value }),
    (error: unknown): Settled<T> => ({ ok: false, error }),
  );
}

/** The value, or the error thrown again (inside the step's own error handling). */
export function unwrap<T>(s: Settled<T>): T {
  if (!s.ok) throw s.error;
  return s.value;
}
