/**
 * Deadline order: tar batches, value per byte, and what fits before the rental ends.
 */
import { BATCH_BYTES, BATCH_FILES, BATCH_MIN_FILES, DeadlinePlan, SalvageItem } from '../salvageTypes';

/**
 * Small files (in transfer order) into tar batches: each at most BATCH_FILES files and BATCH_BYTES, as
 * few as that allows but at least one per parallel stream when there are enough files, their number a
 * multiple of the streams and their file counts even, so the streams run side by side and end together.
 */
export function planBatches<T extends { size: number }>(small: T[], streams: number): T[][] {
  if (small.length === 0) return [];
  const bytes = small.reduce((a, b) => a + b.size, 0);
  const s = Math.max(1, Math.min(streams, Math.floor(small.length / BATCH_MIN_FILES)));
  let nb = Math.max(Math.ceil(small.length / BATCH_FILES), Math.ceil(bytes / BATCH_BYTES), s);
  nb = Math.ceil(nb / s) * s;
  const out: T[][] = [];
  let cur: T[] = [];
  let curBytes = 0;
  let part = 0;
  small.forEach((f, i) => {
    // File i belongs to batch floor(i·nb/N) (sizes differ by at most one), cut earlier by the byte bound.
    const p = Math.floor((i * nb) / small.length);
    if (cur.length && (p !== part || curBytes + f.size > BATCH_BYTES)) {
      out.push(cur);
      cur = [];
      curBytes = 0;
    }
    part = p;
    cur.push(f);
    curBytes += f.size;
  });
  if (cur.length) out.push(cur);
  return out;
}

/** Value per byte: scripts, configs, progress before logs, logs before bulk data; smaller first within a class. */
export function byValuePerByte(a: SalvageItem, b: SalvageItem): number {
  const rank = (i: SalvageItem) =>
    i.kind === 'progress' ? 0 : i.step === 'scripts' || i.step === 'configs' ? 1 : i.step === 'logs' ? 2 : 3;
  return rank(a) - rank(b) || a.size - b.size;
}

/**
 * What fits before the deadline at `rateBps`, items in transfer order (`items` already sorted): the first
 * item whose cumulative bytes would finish after `secondsLeft`, and all after it, will not make it.
 */
export function planAgainstDeadline(items: SalvageItem[], at: Date, nowMs: number, rateBps: number | null): DeadlinePlan {
  const secondsLeft = Math.round((at.getTime() - nowMs) / 1000);
  const remainingBytes = items.reduce((a, b) => a + b.size, 0);
  const etaS = rateBps && rateBps > 0 ? remainingBytes / rateBps : null;
  const wontMakeIt: DeadlinePlan['wontMakeIt'] = [];
  if (secondsLeft <= 0) wontMakeIt.push(...items.map((i) => ({ remotePath: i.remotePath, size: i.size })));
  else if (etaS !== null) {
    let cum = 0;
    for (const i of items) {
      cum += i.size;
      if (cum / rateBps! > secondsLeft) wontMakeIt.push({ remotePath: i.remotePath, size: i.size });
    }
  }
  return {
    at: at.toISOString(),
    secondsLeft,
    rateBps: rateBps && rateBps > 0 ? Math.round(rateBps) : null,
    remainingBytes,
    etaS: etaS === null ? null : Math.round(etaS),
    fits: secondsLeft <= 0 ? remainingBytes === 0 : etaS === null ? null : wontMakeIt.length === 0,
    wontMakeIt,
  };
}
