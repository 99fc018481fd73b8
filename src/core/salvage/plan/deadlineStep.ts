/**
 * The bulk data against the rental deadline, planned from the rate measured on the steps before it.
 */
import { formatBytes } from '../../util/format';
import { DeadlinePlan, SalvageItem } from '../salvageTypes';
import { planAgainstDeadline } from './deadline';

/**
 * States, before the bulk data starts, whether it will be saved before the rental ends, and names what will not:
 * the plan (for the manifest) and the sentence that says it. `moved`: bytes transferred since `startedMs`.
 */
export function planDeadline(
  at: Date,
  data: SalvageItem[],
  started: { ms: number; moved: number },
): { plan: DeadlinePlan; message: string } {
  const moved = started.moved;
  const secs = (Date.now() - started.ms) / 1000;
  // Too little has travelled (or too briefly) to tell a rate from it.
  const rate = moved >= 64 * 1024 && secs >= 0.2 ? moved / secs : null;
  const plan = planAgainstDeadline(
    data.filter((i) => i.status === 'pending'),
    at,
    Date.now(),
    rate,
  );
  const names = plan.wontMakeIt
    .slice(0, 3)
    .map((w) => w.remotePath.split('/').pop())
    .join(', ');
  const more = plan.wontMakeIt.length > 3 ? ', …' : '';
  const lateBytes = formatBytes(plan.wontMakeIt.reduce((a, b) => a + b.size, 0));
  const msg =
    plan.fits === true
      ? `The rental ends in ${Math.round(plan.secondsLeft / 60)} min: the remaining ${formatBytes(plan.remainingBytes)} ` +
        `need about ${plan.etaS} s — everything will be saved in time`
      : plan.fits === null
        ? `The rental ends in ${Math.round(plan.secondsLeft / 60)} min; the transfer rate is not known yet (most valuable first)`
        : `The rental ends ${plan.secondsLeft > 0 ? `in ${Math.round(plan.secondsLeft / 60)} min` : '— it is already over'}: ${plan.wontMakeIt.length} ` +
          `file(s), ${lateBytes}, will not make it (${names}${more}); ` +
          `the most valuable go first`;
  return { plan, message: msg };
}
