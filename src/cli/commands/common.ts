/**
 * What several commands' option parsing and node handling share: the rental terms flags (probe, watch), --deadline
 * (watch, salvage), --ready-timeout and --secret (launch, restore), and a pool with Ctrl-C wired to an abort.
 */
import type { NodeSpec } from '../../core/ssh/config';
import type { ConnectionPool } from '../../core/ssh/pool';
import type { OwnTerms } from '../../core/node/rental';
import { type CliIo, type GlobalOpts, makePool, usageError } from '../cliNode';
import { type OptionValues, list, num, str } from '../command';

/** `--deadline ISO-8601` (watch and salvage): the rental's end; null when not given. */
export function deadlineOption(v: OptionValues): Date | null {
  if (v.deadline === undefined) return null;
  const d = String(v.deadline);
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(d) ? new Date(d) : new Date(NaN);
  if (Number.isNaN(at.getTime())) usageError(`--deadline is an ISO-8601 time such as 2026-12-02T06:00:00Z (got "${d}").`);
  return at;
}

/** `--price-per-hour` and `--deadline` (probe, watch): the user's own terms, over the provider's. */
export function ownTerms(v: OptionValues): OwnTerms {
  const price = v['price-per-hour'] !== undefined ? Number(v['price-per-hour']) : null;
  if (price !== null && !(price >= 0 && Number.isFinite(price))) usageError('--price-per-hour is a number of US dollars, e.g. 12.5.');
  const deadline = deadlineOption(v);
  return {
    price: price !== null ? { value: price, source: '--price-per-hour' } : null,
    deadline: deadline ? { at: deadline, source: '--deadline' } : null,
  };
}

/** `--ready-timeout S` (launch, restart, restore): seconds, positive; undefined when not given. */
export function readyTimeoutOption(v: OptionValues): number | undefined {
  const readyS = num(v, 'ready-timeout');
  if (readyS !== undefined && !(readyS > 0)) usageError('--ready-timeout is a positive number of seconds.');
  return readyS;
}

/** `--secret NAME=@FILE`... (launch, restore): secret name → file. */
export async function secretFilesOption(v: OptionValues): Promise<Record<string, string>> {
  const { parseSecretOption } = await import('../cmdLaunch');
  return Object.fromEntries(list(v, 'secret').map((x) => parseSecretOption(x)));
}

/**
 * Runs fn with a pool for `node` and a signal that the given process signals abort; the handlers are removed and
 * the pool closed afterwards.
 */
export async function withPool<T>(
  g: GlobalOpts,
  io: CliIo,
  node: NodeSpec | undefined,
  signals: NodeJS.Signals[],
  fn: (pool: ConnectionPool, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const pool = makePool(g, io, node);
  const ac = new AbortController();
  const onSig = () => ac.abort();
  for (const s of signals) process.once(s, onSig);
  try {
    return await fn(pool, ac.signal);
  } finally {
    for (const s of signals) process.off(s, onSig);
    pool.dispose();
  }
}

/**
 * The checks launch, capture, stop and restart share, in the order they have always run (each checks all of them):
 * one NODE, launch's --profile, capture's --out, stop's and restart's --port, --ready-timeout, --drain-timeout, --secret.
 */
export async function serverCommandOptions(
  cmd: 'launch' | 'capture' | 'stop' | 'restart',
  args: string[],
  v: OptionValues,
): Promise<{ port: number; readyS?: number; drainS?: number; secretFiles: Record<string, string> }> {
  if (args.length !== 1) usageError(`${cmd} takes exactly one NODE.`);
  if (cmd === 'launch' && !str(v, 'profile')) usageError('launch needs --profile FILE (a .gpu-sessions/launch/*.json profile).');
  if (cmd === 'capture' && !str(v, 'out')) usageError('capture needs --out FILE.');
  const port = num(v, 'port') ?? NaN;
  if ((cmd === 'stop' || cmd === 'restart') && !(Number.isInteger(port) && port > 0 && port < 65536))
    usageError(`${cmd} needs --port PORT (1-65535).`);
  const readyS = readyTimeoutOption(v);
  const drainS = num(v, 'drain-timeout');
  if (drainS !== undefined && !(drainS > 0)) usageError('--drain-timeout is a positive number of seconds.');
  return { port, readyS, drainS, secretFiles: await secretFilesOption(v) };
}
