/**
 * Per-rank summaries of SGLang stat lines and the JSON record of the parse-log CLI contract.
 */
import { FailureClass } from './failureSignatures';
import { ClassifiedLine, LineKind, StatRecord } from './logTypes';
import { RANK_ORDER, rankLabel } from './logHeader';
import { classifyLine, isRestartLine } from './lineClassify';
import { LineSplitter } from './lineSplitter';

// ---------------------------------------------------------------------------------------------------------
// JSON record for the CLI contract

/** A StatRecord as JSON (`parse-log --json`): the same fields, `rank` always present. */
type StatJsonRecord = Omit<StatRecord, 'rank'> & { rank: string };

/** Plain JSON-safe object (no NaN/Infinity, fresh copies) with a fixed key order. */
export function toJsonRecord(stat: StatRecord): StatJsonRecord {
  return {
    kind: stat.kind,
    time: stat.time,
    rank: stat.rank ?? rankLabel(stat.ranks),
    ranks: { ...stat.ranks },
    genThroughput: fin(stat.genThroughput),
    inputThroughput: fin(stat.inputThroughput),
    runningReqs: fin(stat.runningReqs),
    queueReqs: fin(stat.queueReqs),
    tokenUsage: fin(stat.tokenUsage),
    acceptLen: fin(stat.acceptLen),
    acceptRate: fin(stat.acceptRate),
    cudaGraph: stat.cudaGraph,
    numTokens: fin(stat.numTokens),
    newSeq: fin(stat.newSeq),
    newTokens: fin(stat.newTokens),
    cachedTokens: fin(stat.cachedTokens),
    cacheHitRate: fin(stat.cacheHitRate),
    extra: { ...stat.extra },
  };
}

function fin(x: number | null): number | null {
  return x !== null && Number.isFinite(x) ? x : null;
}

// ---------------------------------------------------------------------------------------------------------
// Summaries

export interface RankSummary {
  /** e.g. "DP0 TP0", or "" for a server without rank tags. */
  rank: string;
  /** stat lines (decode + prefill) of this rank */
  lines: number;
  decodeLines: number;
  prefillLines: number;
  lastGenThroughput: number | null;
  /** mean over this rank's decode lines that carry a gen throughput (zeros included) */
  meanGenThroughput: number | null;
  maxGenThroughput: number | null;
  meanAcceptLen: number | null;
  lastTime: string | null;
  lastRunningReqs: number | null;
  lastQueueReqs: number | null;
}

export interface LogSummary {
  /** sorted by rank tags (DP, PP, ATTN_CP, MOE_DP, TP, EP numerically) */
  ranks: RankSummary[];
  errors: number;
  tracebacks: number;
  /** the readiness line was seen and no later "Started server process" (a restart) reset it */
  ready: boolean;
  /** message of the last 'error' (or 'traceback') line */
  lastError: string | null;
  /** error lines per failure class (error lines of no class are counted in `errors` only) */
  errorClasses: Record<FailureClass, number>;
  /** decode/prefill lines showing KV pressure (retractions, a pool at 1.00) */
  kvPressureStatLines: number;
  totalLines: number;
  /** per-kind line counts */
  kinds: Record<LineKind, number>;
  /** lines the LineSplitter had to truncate (addChunk only) */
  truncatedLines: number;
}

/** One rank's running totals in a LogSummarizer (the fast path of logFast.ts holds them by reference). */
export interface RankAcc {
  rank: string;
  order: number[];
  lines: number;
  decodeLines: number;
  prefillLines: number;
  lastGen: number | null;
  genSum: number;
  genCount: number;
  genMax: number | null;
  acceptSum: number;
  acceptCount: number;
  lastTime: string | null;
  lastRunning: number | null;
  lastQueue: number | null;
}

export interface LogSummarizerOptions {
  /** passed to the internal LineSplitter used by addChunk */
  maxLineBytes?: number;
}

export class LogSummarizer {
  private readonly accs = new Map<string, RankAcc>();
  private errors = 0;
  private tracebacks = 0;
  private ready = false;
  private lastError: string | null = null;
  private readonly errorClasses: Record<FailureClass, number> = {
    crash: 0,
    oom: 0,
    'kv-pressure': 0,
    hang: 0,
    nccl: 0,
    gpu: 0,
    'pd-transfer': 0,
  };
  private kvPressureStatLines = 0;
  private total = 0;
  private readonly kinds: Record<LineKind, number> = {
    decode: 0,
    prefill: 0,
    ready: 0,
    error: 0,
    traceback: 0,
    access: 0,
    startup: 0,
    other: 0,
  };
  private readonly splitter: LineSplitter;

  constructor(opts: LogSummarizerOptions = {}) {
    this.splitter = new LineSplitter({ maxLineBytes: opts.maxLineBytes });
  }

  /** The longest line addChunk keeps whole (UTF-8 bytes). */
  get maxLineBytes(): number {
    return this.splitter.maxLineBytes;
  }

  add(line: string): ClassifiedLine {
    const c = classifyLine(line);
    this.addClassified(c);
    return c;
  }

  /** Feed raw text/bytes; complete lines are classified, a partial last line waits for more (or end()). */
  addChunk(chunk: Buffer | string): number {
    const lines = this.splitter.push(chunk);
    for (const l of lines) this.add(l);
    return lines.length;
  }

  /** Classify a pending partial last line, if any. */
  end(): number {
    const lines = this.splitter.flush();
    for (const l of lines) this.add(l);
    return lines.length;
  }

  addClassified(c: ClassifiedLine): void {
    this.total++;
    this.kinds[c.kind]++;
    switch (c.kind) {
      case 'decode':
      case 'prefill':
        if (c.stat) this.addStat(c.stat);
        if (c.errorClass === 'kv-pressure') this.kvPressureStatLines++;
        return;
      case 'error':
        this.errors++;
        this.lastError = c.message;
        if (c.errorClass) this.errorClasses[c.errorClass]++;
        return;
      case 'traceback':
        this.tracebacks++;
        this.lastError = c.message;
        return;
      case 'ready':
        this.ready = true;
        return;
      case 'startup':
        if (isRestartLine(c)) this.ready = false;
        return;
      default:
        return;
    }
  }

  private addStat(st: StatRecord): void {
    this.accumulate(
      this.rankAcc(st.rank ?? rankLabel(st.ranks), st.ranks),
      st.kind === 'decode',
      st.time,
      st.genThroughput,
      st.acceptLen,
      st.runningReqs,
      st.queueReqs,
    );
  }

  /** The totals of the rank labelled `label` (ranks: its tags), created on first use. */
  rankAcc(label: string, ranks: Record<string, number>): RankAcc {
    let a = this.accs.get(label);
    if (!a) {
      a = {
        rank: label,
        order: rankOrderKey(ranks),
        lines: 0,
        decodeLines: 0,
        prefillLines: 0,
        lastGen: null,
        genSum: 0,
        genCount: 0,
        genMax: null,
        acceptSum: 0,
        acceptCount: 0,
        lastTime: null,
        lastRunning: null,
        lastQueue: null,
      };
      this.accs.set(label, a);
    }
    return a;
  }

  /**
   * A decode/prefill stat line (not under KV pressure) already parsed into its summary fields: counted exactly
   * as addClassified counts { kind, stat } (the fast path of logFast.ts, which allocates no record).
   */
  addStatFields(
    a: RankAcc,
    decode: boolean,
    time: string | null,
    gen: number | null,
    acceptLen: number | null,
    running: number | null,
    queue: number | null,
  ): void {
    this.total++;
    if (decode) this.kinds.decode++;
    else this.kinds.prefill++;
    this.accumulate(a, decode, time, gen, acceptLen, running, queue);
  }

  private accumulate(
    a: RankAcc,
    decode: boolean,
    time: string | null,
    g: number | null,
    acceptLen: number | null,
    running: number | null,
    queue: number | null,
  ): void {
    a.lines++;
    if (decode) {
      a.decodeLines++;
      if (g !== null) {
        a.lastGen = g;
        a.genSum += g;
        a.genCount++;
        if (a.genMax === null || g > a.genMax) a.genMax = g;
      }
      if (acceptLen !== null) {
        a.acceptSum += acceptLen;
        a.acceptCount++;
      }
    } else {
      a.prefillLines++;
    }
    if (time !== null) a.lastTime = time;
    if (running !== null) a.lastRunning = running;
    if (queue !== null) a.lastQueue = queue;
  }

  summary(): LogSummary {
    const accs = [...this.accs.values()].sort((x, y) => compareOrder(x.order, y.order) || (x.rank < y.rank ? -1 : x.rank > y.rank ? 1 : 0));
    return {
      ranks: accs.map((a) => ({
        rank: a.rank,
        lines: a.lines,
        decodeLines: a.decodeLines,
        prefillLines: a.prefillLines,
        lastGenThroughput: a.lastGen,
        meanGenThroughput: a.genCount > 0 ? a.genSum / a.genCount : null,
        maxGenThroughput: a.genMax,
        meanAcceptLen: a.acceptCount > 0 ? a.acceptSum / a.acceptCount : null,
        lastTime: a.lastTime,
        lastRunningReqs: a.lastRunning,
        lastQueueReqs: a.lastQueue,
      })),
      errors: this.errors,
      tracebacks: this.tracebacks,
      ready: this.ready,
      lastError: this.lastError,
      errorClasses: { ...this.errorClasses },
      kvPressureStatLines: this.kvPressureStatLines,
      totalLines: this.total,
      kinds: { ...this.kinds },
      truncatedLines: this.splitter.truncatedLines,
    };
  }
}

function rankOrderKey(ranks: Record<string, number>): number[] {
  const out: number[] = [];
  for (const k of RANK_ORDER) out.push(k in ranks ? ranks[k] : -1);
  return out;
}

function compareOrder(a: number[], b: number[]): number {
  for (let i = 0; i < a.length && i < b.length; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}
