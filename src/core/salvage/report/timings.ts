/**
 * Where a salvage's time goes, always: each phase's own wall time in ms. Phases may overlap (the environment
 * snapshot and the S3 inventory run while the files travel), so the phases can add up to more than `total`.
 *
 * - connect: until the SSH connection is ready (0 when the face reused a warm pooled connection)
 * - plan: the listing and the plan (from the connection being ready)
 * - transfer: the file steps (scripts, logs, configs, data)
 * - finalPass: stopping servers/writers when asked, the change check and what it fetched
 * - snapshot: the environment snapshot (concurrent with the transfer)
 * - s3: the S3 inventory (concurrent with the transfer), matching and uploads
 * - verdict: the verdict, the manifest and SALVAGE.md
 * - total: the whole command (the CLI: from the process's start)
 *
 * And how busy the transfer's pipeline was (absent when nothing was transferred):
 * - idle: how long, during the transfer, the main thread (decryption, stream parsing, verification) waited for work
 * - writerIdle: how long the writer thread (file creation, writing, local hashing) waited for bytes, from its start
 * - cpu: CPU time of the whole process (all threads), for comparing runs on a loaded machine
 */
const PHASES = ['connect', 'plan', 'transfer', 'finalPass', 'snapshot', 's3', 'verdict', 'total'] as const;
export type Phase = (typeof PHASES)[number];
export type SalvageTimings = Record<Phase, number> & { idle?: number; writerIdle?: number; cpu?: number };

export class PhaseTimer {
  private readonly spent = new Map<Phase, number>();
  private readonly open = new Map<Phase, number>();
  /** Pipeline figures (idle, writerIdle), ms, summed. */
  private readonly extra = new Map<'idle' | 'writerIdle', number>();
  /** `origin`: the moment `total` counts from (default: now). */
  constructor(
    readonly origin = performance.now(),
    private readonly now: () => number = () => performance.now(),
  ) {}

  start(p: Phase): void {
    if (!this.open.has(p)) this.open.set(p, this.now());
  }

  stop(p: Phase): void {
    const t0 = this.open.get(p);
    if (t0 === undefined) return;
    this.open.delete(p);
    this.add(p, this.now() - t0);
  }

  add(p: Phase, ms: number): void {
    this.spent.set(p, (this.spent.get(p) ?? 0) + Math.max(0, ms));
  }

  note(k: 'idle' | 'writerIdle', ms: number): void {
    this.extra.set(k, (this.extra.get(k) ?? 0) + Math.max(0, ms));
  }

  /** Times one phase around `fn` (also when it throws). */
  async time<T>(p: Phase, fn: () => Promise<T>): Promise<T> {
    const t0 = this.now();
    try {
      return await fn();
    } finally {
      this.add(p, this.now() - t0);
    }
  }

  /** Whole milliseconds; a phase still open counts up to now; total is from the origin. */
  result(): SalvageTimings {
    const t = this.now();
    const out = {} as SalvageTimings;
    for (const p of PHASES) {
      const open = this.open.get(p);
      out[p] = Math.round((this.spent.get(p) ?? 0) + (open !== undefined ? t - open : 0));
    }
    out.total = Math.round(t - this.origin);
    for (const [k, v] of this.extra) out[k] = Math.round(v);
    const c = process.cpuUsage();
    out.cpu = Math.round((c.user + c.system) / 1000);
    return out;
  }
}

/** One line for `--verbose` and the bench: `connect 180 · plan 240 · … · total 1830 ms`. */
export function formatTimings(t: SalvageTimings): string {
  const more = (['idle', 'writerIdle', 'cpu'] as const).filter((k) => t[k] !== undefined).map((k) => `${k} ${t[k]}`);
  return [...PHASES.map((p) => `${p} ${t[p]}`), ...more].join(' · ') + ' ms';
}

/** Opens the connection now when the transport can (so `connect` is its own phase); else the first exec does. */
export async function connectNow(t: object): Promise<void> {
  const c = (t as { connect?: () => Promise<unknown> }).connect;
  if (typeof c === 'function') await c.call(t);
}
