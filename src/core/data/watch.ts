/**
 * The live data guard of one node: every interval it judges the newest rows of each output file (one exec,
 * the same node script as `gpu-sessions data`, without the row count and the spread sample) and emits a
 * transition `{subject: "data", path, from, to: data-ok | data-suspect | data-degenerate}` when a file's
 * verdict changes. The first judgement is the baseline (no transition), as in the node guard; a file first
 * seen later that is already bad is a change. A move to suspect or back to ok is told once it held for two
 * judgements (a file degrading fast passes through suspect: that is one transition, to degenerate); a move to
 * degenerate is told at once. Nothing here imports vscode.
 */
import { EventEmitter } from 'node:events';
import { runOperation } from '../remote/operation';
import type { Transport } from '../ssh/transport';
import type { GuardTransition } from '../node/guard';
import { dataOperation } from './operation';
import { DEFAULT_THRESHOLDS, DataFileReport, DataThresholds, DataVerdict } from './verdict';

type DataState = 'data-ok' | 'data-suspect' | 'data-degenerate';

function dataState(v: DataVerdict): DataState {
  return `data-${v}` as DataState;
}

interface DataWatchOptions {
  /** Files to watch; absent or empty: the files discovery finds (found again every rediscoverEvery polls). */
  paths?: string[];
  roots?: string[];
  /** Newest rows judged each time. Default 400. */
  rows?: number;
  thresholds?: DataThresholds;
  rediscoverEvery?: number;
  responseField?: string;
  promptField?: string;
  now?: () => number;
}

/** One line per file for a watch sample (the shares over time). */
export interface DataSampleFile {
  path: string;
  verdict: DataVerdict;
  rows: number | null;
  shares: DataFileReport['shares'];
  topResponse: DataFileReport['topResponse'];
  error: string | null;
}

export class DataWatch {
  private readonly events = new EventEmitter();
  private readonly told = new Map<string, DataState>();
  private readonly pending = new Map<string, DataState>();
  private readonly last = new Map<string, DataFileReport>();
  private paths: string[] | null;
  private polls = 0;
  private judgedOnce = false;
  private inFlight = false;
  /** The last failure of the check itself (python3 missing, timeout), in words; null when it ran. */
  lastError: string | null = null;

  constructor(
    readonly node: string,
    private readonly opts: DataWatchOptions = {},
  ) {
    this.paths = opts.paths && opts.paths.length ? [...opts.paths] : null;
  }

  onTransition(fn: (t: GuardTransition) => void): () => void {
    this.events.on('transition', fn);
    return () => this.events.off('transition', fn);
  }

  /** The latest report of each watched file. */
  files(): DataFileReport[] {
    return [...this.last.values()];
  }

  sample(): DataSampleFile[] {
    return this.files().map((f) => ({
      path: f.path,
      verdict: f.verdict,
      rows: f.rows,
      shares: f.shares,
      topResponse: f.topResponse,
      error: f.error,
    }));
  }

  /** Judge now (skipped while a check is in flight). Returns the transitions (also emitted). */
  async poll(t: Transport, signal?: AbortSignal): Promise<GuardTransition[]> {
    if (this.inFlight) return [];
    this.inFlight = true;
    try {
      const explicit = !!(this.opts.paths && this.opts.paths.length);
      const rediscover = !explicit && (this.paths === null || this.polls % (this.opts.rediscoverEvery ?? 12) === 0);
      this.polls++;
      const report = await runOperation(
        t,
        dataOperation(this.node, {
          paths: rediscover ? undefined : (this.paths ?? undefined),
          roots: this.opts.roots,
          sample: this.opts.rows ?? 400,
          spread: false,
          count: false,
          thresholds: this.opts.thresholds ?? DEFAULT_THRESHOLDS,
          responseField: this.opts.responseField,
          promptField: this.opts.promptField,
          timeoutMs: 60_000,
        }),
        signal,
      );
      this.lastError = null;
      if (rediscover) this.paths = report.files.map((f) => f.path);
      return this.judge(report.files, rediscover);
    } catch (e) {
      this.lastError = e instanceof Error ? e.message : String(e);
      return [];
    } finally {
      this.inFlight = false;
    }
  }

  /**
   * From the files' reports to transitions (exported for tests with no node). `discovered`: the files are the
   * whole set a discovery found (the newest ones of a job that keeps writing new files): the others are forgotten,
   * or every file the job ever wrote would stay in every sample.
   */
  judge(files: DataFileReport[], discovered = false): GuardTransition[] {
    const now = this.opts.now?.() ?? Date.now();
    const out: GuardTransition[] = [];
    if (discovered) {
      const found = new Set(files.map((f) => f.path));
      for (const m of [this.last, this.told, this.pending]) for (const k of [...m.keys()]) if (!found.has(k)) m.delete(k);
    }
    for (const f of files) {
      this.last.set(f.path, f);
      const to = dataState(f.verdict);
      let from = this.told.get(f.path);
      if (from === undefined) {
        this.told.set(f.path, to);
        if (!this.judgedOnce || to === 'data-ok') continue;
        from = 'data-ok'; // a file first seen after the baseline that is already bad: a change
      } else if (from === to) {
        this.pending.delete(f.path);
        continue;
      } else if (to !== 'data-degenerate' && this.pending.get(f.path) !== to) {
        this.pending.set(f.path, to); // held for one more judgement before it is told
        continue;
      }
      this.pending.delete(f.path);
      this.told.set(f.path, to);
      out.push({
        type: 'transition',
        node: this.node,
        time: new Date(now).toISOString(),
        subject: 'data',
        path: f.path,
        from,
        to,
        message: f.reasons.length ? `${f.path}: ${f.reasons[0]}` : `${f.path}: the newest ${f.judged} answers look fine again`,
      });
    }
    this.judgedOnce = true;
    for (const t of out) this.events.emit('transition', t);
    return out;
  }

  /** Current verdict of each file (for --until and the tree). */
  states(): Map<string, DataState> {
    return new Map(this.told);
  }
}
