/**
 * Money and time of a rented node: spend at a price per hour, output tokens, $ per million output tokens,
 * and the rental deadline against the job's ETA. Pure arithmetic over samples (the caller passes the time),
 * used by `gpu-sessions watch --price-per-hour --deadline` and by the extension.
 * Nothing here imports vscode.
 */
import { formatDuration } from '../util/format';
import { type GuardSample, type GuardTransition, nodeThroughput } from './guard';

interface SpendOptions {
  /** USD per hour; null: no spend figures. */
  pricePerHour?: number | null;
  /** End of the rental; null: no deadline. */
  deadline?: Date | null;
  /** Warn this long before the deadline. Default 30 min. */
  leadMs?: number;
  now?: () => number;
  /** Where the price came from ("runpodctl", "settings", "--price-per-hour"; core/node/rental.ts). */
  priceSource?: string | null;
  /** Where the deadline came from ("vastai", "settings", "--deadline"). */
  deadlineSource?: string | null;
}

export interface Spend {
  perHour: number;
  /** USD since the node booted (its uptime), or since watching began when the uptime is unknown */
  total: number;
  /** output tokens of every server over the same period as `total`: a server's generation_tokens_total counter
   *  where it has one (--enable-metrics), its decode throughput integrated over the samples for the others */
  outputTokens: number;
  /** `total / outputTokens × 1e6`: USD per million output tokens over the rental so far (null before any token) */
  perMillionTokens: number | null;
  /** USD per million output tokens at the current rate (price per hour over the node's throughput now) */
  perMillionTokensNow: number | null;
  /**
   * USD per million output tokens over the last `windowS` seconds (the tokens counted in it; at least a minute of
   * samples, else null): the one money figure people read — stable at a constant rate, whenever the rental began
   */
  perMillionTokensWindow?: number | null;
  /** Seconds the window figure covers (up to MONEY_WINDOW_S). */
  windowS?: number | null;
  /** ISO 8601: since when `total` counts */
  since: string;
  /** Where `perHour` came from ("runpodctl", "settings", "--price-per-hour"), when known. */
  priceSource?: string;
}

export interface Deadline {
  at: string;
  secondsLeft: number;
  /** seconds until the job ends at the current rate (progress.json), null when unknown */
  jobEta: number | null;
  /** seconds the job would run past the deadline (negative: it ends before), null when unknown */
  jobOverrunS: number | null;
  message: string;
  /** Where the deadline came from ("vastai", "settings", "--deadline"), when known. */
  source?: string;
}

/** USD per million tokens from a spend and a token count over the same period. */
export function perMillion(usd: number, tokens: number): number | null {
  return tokens > 0 ? (usd / tokens) * 1e6 : null;
}

/**
 * One money figure in words: "$0.84 per million output tokens over the last 10 min" when the window figure is known
 * (the stable one, whenever the rental began), else "$27.20 per million output tokens so far, $0.84 at the current
 * rate" (the CLI, the dashboard, the tree).
 */
export function perMillionPhrase(sp: {
  perMillionTokens: number | null;
  perMillionTokensNow?: number | null;
  perMillionTokensWindow?: number | null;
  windowS?: number | null;
}): string | null {
  if (sp.perMillionTokensWindow != null)
    return `$${sp.perMillionTokensWindow.toFixed(2)} per million output tokens over the last ${formatDuration(sp.windowS ?? MONEY_WINDOW_S)}`;
  const parts = [
    sp.perMillionTokens !== null ? `$${sp.perMillionTokens.toFixed(2)} per million output tokens so far` : null,
    sp.perMillionTokensNow != null ? `$${sp.perMillionTokensNow.toFixed(2)} at the current rate` : null,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : null;
}

/** "the rental ends in 1 h 12 min" / "the rental ended 5 min ago". */
function rentalPhrase(secondsLeft: number): string {
  return secondsLeft > 0 ? `the rental ends in ${formatDuration(secondsLeft)}` : `the rental ended ${formatDuration(secondsLeft)} ago`;
}

/** "at the current rate the job ends 1 h 20 min after the rental" (or "… before it"); null when the ETA is unknown. */
function jobPhrase(jobOverrunS: number | null): string | null {
  if (jobOverrunS === null) return null;
  return jobOverrunS > 0
    ? `at the current rate the job ends ${formatDuration(jobOverrunS)} after the rental`
    : `at the current rate the job ends ${formatDuration(-jobOverrunS)} before it`;
}

/** The deadline figures at `now`. */
export function deadlineAt(at: Date, now: number, jobEtaS: number | null, source?: string | null): Deadline {
  const secondsLeft = Math.round((at.getTime() - now) / 1000);
  const overrun = jobEtaS === null ? null : Math.round(jobEtaS - secondsLeft);
  const job = jobPhrase(overrun);
  const message = rentalPhrase(secondsLeft) + (job ? `; ${job}` : '');
  const d: Deadline = {
    at: at.toISOString(),
    secondsLeft,
    jobEta: jobEtaS === null ? null : Math.round(jobEtaS),
    jobOverrunS: overrun,
    message,
  };
  return source ? { ...d, source } : d;
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

/** One server's output tokens across samples: its counter (restarts carried over), or its throughput integrated. */
interface ServerTokens {
  /** Counter value that counts as zero (the first one seen when the period starts at the first sample). */
  offset: number;
  lastCounter: number | null;
  /** Tokens of earlier lives of the counter (before a restart reset it). */
  carried: number;
  /** This server ever had a counter: throughput is not integrated (the counter covers the gaps). */
  hasCounter: boolean;
  integrated: number;
  lastGen: number;
  lastAt: number | null;
}

/** The window of the money figure people read (perMillionTokensWindow): 10 minutes. */
const MONEY_WINDOW_S = 600;
/** Shorter than this, the window figure is not given (a few samples are noise). */
const MONEY_WINDOW_MIN_S = 60;

/** Follows one node's samples: counts every server's tokens, computes spend and the deadline, says when it is near. */
export class WatchEconomics {
  private readonly startedAt: number;
  private readonly servers = new Map<number, ServerTokens>();
  private warned = false;
  private warnedEnd = false;
  private warnedOverrun = false;
  /** (time, output tokens so far) of the samples of the last MONEY_WINDOW_S, oldest first */
  private readonly window: Array<{ at: number; tokens: number }> = [];
  private readonly leadMs: number;
  private readonly now: () => number;

  constructor(private opts: SpendOptions) {
    this.now = opts.now ?? Date.now;
    this.startedAt = this.now();
    this.leadMs = opts.leadMs ?? 30 * 60_000;
  }

  /**
   * New price or deadline terms (the provider's answer came, or a setting changed): the tokens counted so far and
   * the warnings already given stay; a new deadline may warn again.
   */
  setTerms(t: Pick<SpendOptions, 'pricePerHour' | 'deadline' | 'priceSource' | 'deadlineSource'>): void {
    const before = this.opts.deadline?.getTime() ?? null;
    this.opts = { ...this.opts, ...t };
    if ((this.opts.deadline?.getTime() ?? null) !== before) this.warned = this.warnedEnd = this.warnedOverrun = false;
  }

  /** True when this follows a price or a deadline (else it adds nothing to a sample). */
  get active(): boolean {
    return (this.opts.pricePerHour !== null && this.opts.pricePerHour !== undefined) || !!this.opts.deadline;
  }

  /** Adds `spend` and `deadline` to a sample (only those configured). */
  annotate(s: GuardSample, _guard?: unknown): { spend?: Spend; deadline?: Deadline } {
    const now = Date.parse(s.time) || this.now();
    if (s.reachable) this.countTokens(s, now);
    const out: { spend?: Spend; deadline?: Deadline } = {};
    const price = this.opts.pricePerHour;
    if (price !== null && price !== undefined) {
      const since = s.uptimeS !== null ? now - s.uptimeS * 1000 : this.startedAt;
      const total = round((price * Math.max(0, now - since)) / 3_600_000, 4) ?? 0;
      const outputTokens = Math.round([...this.servers.values()].reduce((a, t) => a + tokensOf(t), 0));
      const rate = s.reachable ? nodeThroughput(s.servers) : 0;
      if (s.reachable) {
        this.window.push({ at: now, tokens: outputTokens });
        while (this.window.length > 2 && now - this.window[1].at >= MONEY_WINDOW_S * 1000) this.window.shift();
      }
      const w0 = this.window[0];
      const spanS = w0 ? (now - w0.at) / 1000 : 0;
      const windowed = w0 && spanS >= MONEY_WINDOW_MIN_S ? perMillion((price * spanS) / 3600, outputTokens - w0.tokens) : null;
      out.spend = {
        perHour: price,
        total,
        outputTokens,
        // the rounded figures, so that total / outputTokens × 1e6 is what a reader of the JSON computes
        perMillionTokens: round(perMillion(total, outputTokens), 4),
        perMillionTokensNow: round(perMillion(price, rate * 3600), 4),
        perMillionTokensWindow: round(windowed, 4),
        windowS: windowed === null ? null : Math.round(spanS),
        since: new Date(since).toISOString(),
        ...(this.opts.priceSource ? { priceSource: this.opts.priceSource } : {}),
      };
    }
    if (this.opts.deadline)
      out.deadline = deadlineAt(this.opts.deadline, now, s.job.state === 'running' ? s.job.etaS : null, this.opts.deadlineSource);
    return out;
  }

  /** Every server's tokens up to this sample; the period starts with the node (uptime) or at the first sample. */
  private countTokens(s: GuardSample, now: number): void {
    for (const x of s.servers) {
      const counter = x.generationTokensTotal ?? null;
      let t = this.servers.get(x.port);
      if (!t) {
        // a counter counts since its server started: within the rental when the uptime is known, else from here
        const offset = counter !== null && s.uptimeS === null ? counter : 0;
        t = { offset, lastCounter: null, carried: 0, hasCounter: false, integrated: 0, lastGen: 0, lastAt: null };
        this.servers.set(x.port, t);
      }
      const gen = x.state === 'crashed' ? 0 : x.genThroughput;
      if (counter !== null) {
        if (t.lastCounter !== null && counter < t.lastCounter) {
          // the server restarted: its earlier tokens stay counted, the new counter starts at zero
          t.carried += Math.max(0, t.lastCounter - t.offset);
          t.offset = 0;
        }
        t.lastCounter = counter;
        t.hasCounter = true;
      } else if (!t.hasCounter && t.lastAt !== null) t.integrated += ((t.lastGen + gen) / 2) * ((now - t.lastAt) / 1000);
      t.lastGen = gen;
      t.lastAt = now;
    }
  }

  /**
   * Money transitions, each once: `job-overrun` when the job's ETA runs past the rental end (known as soon as the
   * deadline and the job's rate are), `deadline-near` when the deadline comes within the lead time, and
   * `rental-ended` when it has passed (nothing was said when the rental ended).
   */
  transitions(s: GuardSample, annotated: { deadline?: Deadline }): GuardTransition[] {
    const d = annotated.deadline;
    if (!d) return [];
    const out: GuardTransition[] = [];
    const tr = (to: string, message: string): GuardTransition => ({
      type: 'transition',
      node: s.node,
      time: s.time,
      subject: 'node',
      from: 'ok',
      to,
      message,
    });
    if (!this.warnedOverrun && d.secondsLeft > 0 && d.jobOverrunS !== null && d.jobOverrunS > 0) {
      this.warnedOverrun = true;
      out.push(tr('job-overrun', d.message));
    }
    if (!this.warned && d.secondsLeft * 1000 <= this.leadMs) {
      this.warned = true;
      if (d.secondsLeft > 0) out.push(tr('deadline-near', d.message));
    }
    if (!this.warnedEnd && d.secondsLeft <= 0) {
      this.warnedEnd = true;
      out.push(tr('rental-ended', d.message));
    }
    return out;
  }
}

function tokensOf(t: ServerTokens): number {
  return t.carried + (t.lastCounter !== null ? Math.max(0, t.lastCounter - t.offset) : 0) + t.integrated;
}

function round(x: number | null, digits: number): number | null;
function round(x: number, digits: number): number;
function round(x: number | null, digits: number): number | null {
  if (x === null || !Number.isFinite(x)) return null;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}
