/**
 * Money and time of a rented node: spend at a price per hour, output tokens, $ per million output tokens,
 * and the rental deadline against the job's ETA. Pure arithmetic over samples (the caller passes the time),
 * used by `gpu-sessions watch --price-per-hour --deadline` and by the extension.
 * Nothing here imports vscode.
 */
import { formatDuration } from '../util/format';
import type { GuardSample, GuardTransition } from './guard';

export interface SpendOptions {
  /** USD per hour; null: no spend figures. */
  pricePerHour?: number | null;
  /** End of the rental; null: no deadline. */
  deadline?: Date | null;
  /** Warn this long before the deadline. Default 30 min. */
  leadMs?: number;
  now?: () => number;
}

export interface Spend {
  perHour: number;
  /** USD since the node booted (its uptime), or since watching began when the uptime is unknown */
  total: number;
  /** output tokens generated: SGLang's generation_tokens_total counters when every server has them, else the
   *  decode throughput integrated over the time watched */
  outputTokens: number;
  /** USD per million output tokens at the rate observed while watching (null until tokens were generated) */
  perMillionTokens: number | null;
  /** ISO 8601: since when `total` counts */
  since: string;
}

export interface Deadline {
  at: string;
  secondsLeft: number;
  /** seconds until the job ends at the current rate (progress.json), null when unknown */
  jobEta: number | null;
  /** seconds the job would run past the deadline (negative: it ends before), null when unknown */
  jobOverrunS: number | null;
  message: string;
}

/** USD per million tokens from a spend and a token count over the same period. */
export function perMillion(usd: number, tokens: number): number | null {
  return tokens > 0 ? (usd / tokens) * 1e6 : null;
}

/** "the rental ends in 1 h 12 min" / "the rental ended 5 min ago". */
export function rentalPhrase(secondsLeft: number): string {
  return secondsLeft > 0 ? `the rental ends in ${formatDuration(secondsLeft)}` : `the rental ended ${formatDuration(secondsLeft)} ago`;
}

/** "at the current rate the job ends 1 h 20 min after the rental" (or "… before it"); null when the ETA is unknown. */
export function jobPhrase(jobOverrunS: number | null): string | null {
  if (jobOverrunS === null) return null;
  return jobOverrunS > 0
    ? `at the current rate the job ends ${formatDuration(jobOverrunS)} after the rental`
    : `at the current rate the job ends ${formatDuration(-jobOverrunS)} before it`;
}

/** The deadline figures at `now`. */
export function deadlineAt(at: Date, now: number, jobEtaS: number | null): Deadline {
  const secondsLeft = Math.round((at.getTime() - now) / 1000);
  const overrun = jobEtaS === null ? null : Math.round(jobEtaS - secondsLeft);
  const job = jobPhrase(overrun);
  const message = rentalPhrase(secondsLeft) + (job ? `; ${job}` : '');
  return { at: at.toISOString(), secondsLeft, jobEta: jobEtaS === null ? null : Math.round(jobEtaS), jobOverrunS: overrun, message };
}

/** The countdown row under a node: "Rental ends in 1 h 12 min", the job's ETA against it, and whether to warn. */
export function deadlineRow(d: Deadline, leadS: number): { label: string; detail: string | null; state: 'ok' | 'near' | 'ended' } {
  const phrase = rentalPhrase(d.secondsLeft).replace(/^the r/, 'R');
  return {
    label: phrase,
    detail: jobPhrase(d.jobOverrunS),
    state: d.secondsLeft <= 0 ? 'ended' : d.secondsLeft <= leadS ? 'near' : 'ok',
  };
}

/** Follows one node's samples: integrates tokens, computes spend and the deadline, says when it is near. */
export class WatchEconomics {
  private readonly startedAt: number;
  private lastAt: number | null = null;
  private lastGen = 0;
  private integrated = 0;
  private counterStart: number | null = null;
  private warned = false;
  private readonly leadMs: number;
  private readonly now: () => number;

  constructor(private readonly opts: SpendOptions) {
    this.now = opts.now ?? Date.now;
    this.startedAt = this.now();
    this.leadMs = opts.leadMs ?? 30 * 60_000;
  }

  /** Adds `spend` and `deadline` to a sample (only those configured). */
  annotate(s: GuardSample, _guard?: unknown): { spend?: Spend; deadline?: Deadline } {
    const now = Date.parse(s.time) || this.now();
    if (this.lastAt !== null && s.reachable) this.integrated += ((this.lastGen + s.genThroughput) / 2) * ((now - this.lastAt) / 1000);
    if (s.reachable) {
      this.lastAt = now;
      this.lastGen = s.genThroughput;
    }
    const out: { spend?: Spend; deadline?: Deadline } = {};
    const price = this.opts.pricePerHour;
    if (price !== null && price !== undefined) {
      const since = s.uptimeS !== null ? now - s.uptimeS * 1000 : this.startedAt;
      const total = (price * Math.max(0, now - since)) / 3_600_000;
      const counter = s.generationTokensTotal;
      if (counter !== null && this.counterStart === null) this.counterStart = counter;
      const watchedTokens =
        counter !== null && this.counterStart !== null && counter >= this.counterStart ? counter - this.counterStart : this.integrated;
      const watchedUsd = (price * Math.max(0, now - this.startedAt)) / 3_600_000;
      out.spend = {
        perHour: price,
        total: round(total, 4) ?? 0,
        outputTokens: Math.round(counter ?? this.integrated),
        perMillionTokens: round(perMillion(watchedUsd, watchedTokens), 4),
        since: new Date(since).toISOString(),
      };
    }
    if (this.opts.deadline) out.deadline = deadlineAt(this.opts.deadline, now, s.job.state === 'running' ? s.job.etaS : null);
    return out;
  }

  /** `deadline-near` once, when the deadline comes within the lead time. */
  transitions(s: GuardSample, annotated: { deadline?: Deadline }): GuardTransition[] {
    const d = annotated.deadline;
    if (!d || this.warned || d.secondsLeft * 1000 > this.leadMs) return [];
    this.warned = true;
    return [
      {
        type: 'transition',
        node: s.node,
        time: s.time,
        subject: 'node',
        from: 'ok',
        to: 'deadline-near',
        message: d.message,
      },
    ];
  }
}

function round(x: number | null, digits: number): number | null;
function round(x: number, digits: number): number;
function round(x: number | null, digits: number): number | null {
  if (x === null || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
