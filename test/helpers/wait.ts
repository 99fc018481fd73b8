/** The one pair of waiting helpers of the test suites (unit, integration, extension host, e2e). */

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Polls `fn` until it returns a truthy value, and returns that value. An exception counts as "not yet" (its
 * message is kept); after `timeoutMs` it throws, naming `what` and the last value or error.
 */
export async function waitFor<T>(what: string, fn: () => T | Promise<T>, timeoutMs = 10_000, everyMs = 200): Promise<NonNullable<T>> {
  const t0 = Date.now();
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as NonNullable<T>;
      last = v;
    } catch (e) {
      last = e instanceof Error ? e.message : e;
    }
    if (Date.now() - t0 > timeoutMs)
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what} (last: ${String(last).slice(0, 300)})`);
    await sleep(everyMs);
  }
}

/** Waits until none of `files` has changed size for `quietMs` (a job that has finished writing its logs). */
export async function waitQuiet(files: string[], quietMs = 2500, timeoutMs = 30_000): Promise<void> {
  const { statSync } = await import('node:fs');
  let last = '';
  let quietSince = Date.now();
  await waitFor(
    `logs quiet for ${quietMs / 1000} s`,
    () => {
      const now = files.map((f) => statSync(f).size).join(',');
      if (now !== last) [last, quietSince] = [now, Date.now()];
      return Date.now() - quietSince >= quietMs;
    },
    timeoutMs,
  );
}
