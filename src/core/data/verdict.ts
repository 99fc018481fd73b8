/**
 * The verdict rules of the data-quality guard: from the counts the node script reports for one file (see
 * nodeScript.ts) to its shares, its verdict (ok | suspect | degenerate) and its reasons in words.
 *
 *   answer        the response with any <think>…</think> block removed, trimmed
 *   empty         the answer is empty
 *   thinkingOnly  empty, while reasoning is present (a think block or reasoning_content)
 *   truncated     finish reason `length`
 *   topResponse   the most frequent non-empty answer (seen at least twice) and its share
 *   repetitive    ≥ 30 % of the answer's words inside 10-word sequences that occur more than once in it
 *
 * Shares are over the parsed sampled rows that carry a response. degenerate: empty, topResponse or
 * repetitive ≥ 20 % with at least 50 rows sampled; suspect: empty, topResponse or repetitive ≥ 5 %,
 * truncated ≥ 50 % or parse errors ≥ 5 % of the sampled lines; else ok. Every threshold is an option.
 */
import { visible } from '../util/terminal';

export type DataVerdict = 'ok' | 'suspect' | 'degenerate';

export interface DataThresholds {
  degenerateEmpty: number;
  degenerateTopResponse: number;
  degenerateRepetitive: number;
  suspectEmpty: number;
  suspectTopResponse: number;
  suspectRepetitive: number;
  suspectTruncated: number;
  suspectParseErrors: number;
  /** Fewer rows sampled than this: at worst suspect (too few to call a file degenerate). */
  minRows: number;
}

export const DEFAULT_THRESHOLDS: DataThresholds = {
  degenerateEmpty: 0.2,
  degenerateTopResponse: 0.2,
  degenerateRepetitive: 0.2,
  suspectEmpty: 0.05,
  suspectTopResponse: 0.05,
  suspectRepetitive: 0.05,
  suspectTruncated: 0.5,
  suspectParseErrors: 0.05,
  minRows: 50,
};

/** "degenerateEmpty=0.3,minRows=100" → thresholds (unknown names and bad numbers are errors, in words). */
export function parseThresholds(spec: string, base: DataThresholds = DEFAULT_THRESHOLDS): DataThresholds {
  const out = { ...base };
  for (const part of spec.split(',').filter((x) => x.trim())) {
    const [k, v] = part.split('=').map((x) => x.trim());
    if (!(k in out)) throw new Error(`unknown threshold "${k}" (one of ${Object.keys(base).join(', ')})`);
    const n = Number(v);
    const isRows = k === 'minRows';
    if (!(Number.isFinite(n) && n >= 0 && (isRows ? Number.isInteger(n) : n <= 1)))
      throw new Error(`threshold ${k} is ${isRows ? 'a whole number of rows' : 'a share from 0 to 1'} (got "${v ?? ''}")`);
    (out as Record<string, number>)[k] = n;
  }
  return out;
}

interface Percentiles {
  p10: number;
  p50: number;
  p90: number;
  max: number;
}

interface DataExample {
  prompt: string;
  answer: string;
}

/** What the node script prints for one file (counts, never shares). */
export interface RawDataFile {
  path: string;
  error: string | null;
  size?: number;
  mtime?: number;
  rows?: number;
  rowsExact?: boolean;
  sampled?: number;
  parsed?: number;
  parseErrors?: number;
  tooLong?: number;
  noResponse?: number;
  judged?: number;
  format?: string;
  formats?: Record<string, number>;
  counts?: { empty: number; thinkingOnly: number; truncated: number; repetitive: number };
  top?: { text: string; count: number } | null;
  answerLength?: Percentiles | null;
  completionTokens?: Percentiles | null;
  examples?: { empty: DataExample[]; top: DataExample[]; repetitive: DataExample[]; rows?: DataExample[] };
  parseErrorExample?: string | null;
  partialLastLine?: boolean;
  deleted?: boolean;
  spreadCut?: boolean;
  discovered?: boolean;
  why?: string | null;
  elapsedMs?: number;
}

interface DataShares {
  empty: number;
  thinkingOnly: number;
  truncated: number;
  topResponse: number;
  repetitive: number;
}

/** One file's report: the contract's fields (path … reasons) and a few more. */
export interface DataFileReport {
  path: string;
  format: string;
  rows: number | null;
  rowsExact: boolean;
  sampled: number;
  parseErrors: number;
  shares: DataShares;
  topResponse: { text: string; share: number } | null;
  answerLength: Percentiles | null;
  completionTokens: Percentiles | null;
  verdict: DataVerdict;
  reasons: string[];
  /** Parsed rows that carry a response (what the shares are over). */
  judged: number;
  /** Parsed rows with no response field this reads (error rows, prompts). */
  noResponse: number;
  sizeBytes: number | null;
  mtime: string | null;
  /** Why the file could not be judged (gone, binary, not JSONL, …); null when it was. */
  error: string | null;
  /** The file was found by discovery (not named), and why. */
  discovered: boolean;
  foundBy: string | null;
  /** `rows`: the first judged rows of the sample (at most 15, spread over the file), for Open Sample. */
  examples: { empty: DataExample[]; top: DataExample[]; repetitive: DataExample[]; rows?: DataExample[] };
}

export interface DataReport {
  node: string;
  files: DataFileReport[];
  verdict: DataVerdict;
  /** Discovered files left out (over the file bound, or no answers in them), with why. */
  skipped: Array<{ path: string; why: string }>;
  elapsedMs: number;
  /** The node script's peak memory in KiB (bounded whatever the file's size), when known. */
  peakRssKiB?: number | null;
}

const RANK: Record<DataVerdict, number> = { ok: 0, suspect: 1, degenerate: 2 };

function worstVerdict(vs: DataVerdict[]): DataVerdict {
  return vs.reduce<DataVerdict>((w, v) => (RANK[v] > RANK[w] ? v : w), 'ok');
}

/** At most max characters, control and invisible characters escaped (\n, \t, \u202e …): safe on one line anywhere. */
export function escapeAnswer(s: string, max = 80): string {
  const parts: string[] = [];
  for (const ch of s) {
    if (ch === '\n') parts.push('\\n');
    else if (ch === '\r') parts.push('\\r');
    else if (ch === '\t') parts.push('\\t');
    else if (ch === '\\') parts.push('\\\\');
    else parts.push(visible(ch));
  }
  const all = parts.join('');
  if (all.length <= max) return all;
  let out = '';
  for (const e of parts) {
    if (out.length + e.length > max - 1) break;
    out += e;
  }
  return out + '…';
}

function pct(x: number): string {
  const p = x * 100;
  return `${p >= 10 || p === 0 ? Math.round(p) : p.toFixed(1)} %`;
}

const NO_SHARES: DataShares = { empty: 0, thinkingOnly: 0, truncated: 0, topResponse: 0, repetitive: 0 };

/** From the node's counts to the file's report (shares, verdict, reasons). */
export function judgeFile(raw: RawDataFile, th: DataThresholds = DEFAULT_THRESHOLDS): DataFileReport {
  const base: DataFileReport = {
    path: raw.path,
    format: raw.format ?? 'unknown',
    rows: raw.rows ?? null,
    rowsExact: raw.rowsExact ?? false,
    sampled: raw.sampled ?? 0,
    parseErrors: raw.parseErrors ?? 0,
    shares: { ...NO_SHARES },
    topResponse: null,
    answerLength: raw.answerLength ?? null,
    completionTokens: raw.completionTokens ?? null,
    verdict: 'ok',
    reasons: [],
    judged: raw.judged ?? 0,
    noResponse: raw.noResponse ?? 0,
    sizeBytes: raw.size ?? null,
    mtime: raw.mtime !== undefined ? new Date(raw.mtime * 1000).toISOString() : null,
    error: null,
    discovered: Boolean(raw.discovered),
    foundBy: raw.why ?? null,
    examples: raw.examples ?? { empty: [], top: [], repetitive: [] },
  };
  if (raw.error) {
    base.error = raw.error;
    base.verdict = 'suspect';
    base.reasons.push(`not judged: ${raw.error}`);
    return base;
  }
  if ((raw.rows ?? 0) === 0 && base.sampled === 0) {
    base.reasons.push('no rows yet (an empty file)');
    return base;
  }
  if ((raw.parsed ?? 0) === 0) {
    base.error = `not JSONL: none of the ${base.sampled} sampled lines is a JSON object${raw.parseErrorExample ? ` (${raw.parseErrorExample})` : ''}`;
    base.verdict = 'suspect';
    base.reasons.push(`not judged: ${base.error}; this reads one JSON object per line`);
    return base;
  }
  const n = base.judged;
  if (n === 0) {
    base.error = `no answers found: none of the ${raw.parsed} parsed rows has a response field this reads (name it with --response-field /json/pointer)`;
    base.verdict = 'suspect';
    base.reasons.push(`not judged: ${base.error}`);
    return base;
  }
  const c = raw.counts ?? { empty: 0, thinkingOnly: 0, truncated: 0, repetitive: 0 };
  const top = raw.top && raw.top.count >= 2 ? raw.top : null;
  base.shares = {
    empty: c.empty / n,
    thinkingOnly: c.thinkingOnly / n,
    truncated: c.truncated / n,
    topResponse: top ? top.count / n : 0,
    repetitive: c.repetitive / n,
  };
  if (top) base.topResponse = { text: escapeAnswer(top.text), share: top.count / n };
  const s = base.shares;
  const errShare = base.sampled ? base.parseErrors / base.sampled : 0;
  const bad: string[] = [];
  const warn: string[] = [];
  const tell = (share: number, degen: number, susp: number, words: string) => {
    if (share >= degen) bad.push(words);
    else if (share >= susp) warn.push(words);
  };
  tell(
    s.empty,
    th.degenerateEmpty,
    th.suspectEmpty,
    `${pct(s.empty)} of the answers are empty` +
      (c.thinkingOnly ? ` (${pct(s.thinkingOnly)} thinking only: reasoning and no answer after it)` : ''),
  );
  if (top)
    tell(
      s.topResponse,
      th.degenerateTopResponse,
      th.suspectTopResponse,
      `${pct(s.topResponse)} of the answers are the same \`${base.topResponse!.text}\` — look before you train on it`,
    );
  tell(s.repetitive, th.degenerateRepetitive, th.suspectRepetitive, `${pct(s.repetitive)} of the answers loop (repeated 10-word runs)`);
  if (s.truncated >= th.suspectTruncated) warn.push(`${pct(s.truncated)} were cut at the length limit (finish_reason "length")`);
  if (errShare >= th.suspectParseErrors)
    warn.push(`${pct(errShare)} of the sampled lines are not valid JSON rows (${base.parseErrors} of ${base.sampled})`);
  if (bad.length && n < th.minRows) {
    warn.push(...bad.map((b) => `${b} (only ${n} rows sampled: too few to call it degenerate)`));
    bad.length = 0;
  }
  base.verdict = bad.length ? 'degenerate' : warn.length ? 'suspect' : 'ok';
  base.reasons = [...bad, ...warn];
  if (raw.noResponse) base.reasons.push(`${raw.noResponse} parsed rows carry no response (errors or prompts): not counted`);
  if (raw.partialLastLine) base.reasons.push('the last line is being written (not counted)');
  if (raw.deleted) base.reasons.push('the file was deleted while it was read (judged from what was read)');
  if (raw.spreadCut) base.reasons.push('the spread sample stopped early (read or time bound): fewer rows than asked');
  return base;
}

export function buildReport(
  node: string,
  raw: RawDataFile[],
  skipped: Array<{ path: string; why: string }>,
  th: DataThresholds,
  elapsedMs: number,
): DataReport {
  const files: DataFileReport[] = [];
  for (const r of raw) {
    const f = judgeFile(r, th);
    // a discovered file with no answers in it (a prompt set, an index) is not generation output: listed apart
    if (f.discovered && f.error?.startsWith('no answers found'))
      skipped.push({ path: f.path, why: 'no answers in it (not generation output?)' });
    else files.push(f);
  }
  return { node, files, verdict: worstVerdict(files.map((f) => f.verdict)), skipped, elapsedMs };
}
