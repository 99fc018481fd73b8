// SGLang server-log parsing: line classification, scheduler stat lines ("Decode batch" / "Prefill batch"),
// per-rank summaries and a bounded streaming line splitter.
//
// Format family (see shared/reference/sglang-and-nvidia-smi.md, "SGLang scheduler log lines"):
//   [optional wrappers] "[" timestamp {" " RANKTAG} "] " message
// where wrappers are ANSI colour codes, a log collector's own "[YYYY-MM-DD HH:MM:SS] ", Ray's
// "(ActorName pid=N) ", and message is e.g.
//   "Decode batch[ [iter]](.|,) key: value, key: value, ...[, ]"
// Everything is parsed by *key*, never by position. Also understood: the 2024 "[gpu=N] Decode batch." form,
// the early-2024 bare decode line "#running-req: ..., gen throughput (token/s): ..." and the early-2024
// "new fill batch. #seq: N. #cached_token: N. ..." prefill line.
//
// Performance notes: no regular expression here can backtrack super-linearly; every scan is an indexOf or a
// bounded loop, so any line is handled in linear time, and lines longer than HEAD_LIMIT (1 Mi chars) are judged
// on their head only (a 100 MB line of garbage returns in milliseconds). Non-stat lines are rejected by a cheap
// indexOf(' batch') / indexOf('gen throughput') prefilter. Known keys are matched in place (no slicing), and
// the rank-tag part of the header is cached, so a decode line costs about 1 µs.
//
// This module must not import `vscode`.

import { StringDecoder } from 'node:string_decoder';

export type LineKind = 'decode' | 'prefill' | 'ready' | 'error' | 'traceback' | 'access' | 'startup' | 'other';

export interface StatRecord {
  kind: 'decode' | 'prefill';
  /** Timestamp exactly as printed inside SGLang's brackets ("2025-05-31 18:31:21", "04:40:55",
   *  "2025-05-31 18:31:21.123"); null when the line has none. */
  time: string | null;
  /** Rank tags, lowercase keys: dp, pp, attn_cp, moe_dp, tp, ep (any other `NAMEn` tag is kept the same way,
   *  and the 2024 "[gpu=N]" form gives `gpu`). {} for a single-GPU server. */
  ranks: Record<string, number>;
  /** rankLabel(ranks), e.g. "DP0 TP0"; "" or absent without ranks. Filled by the parser (cached, cheap). */
  rank?: string;
  /** decode: `gen throughput (token/s)`. */
  genThroughput: number | null;
  /** prefill: `input throughput (token/s)`. */
  inputThroughput: number | null;
  /** `#running-req` (early 2024: `#running_req`). */
  runningReqs: number | null;
  /** `#queue-req` (early 2024 prefill: `#remaining_req`). */
  queueReqs: number | null;
  /** `token usage`; for hybrid-memory and HiSparse models (which print no plain `token usage`) the maximum
   *  over their pools (`full token usage`, `swa token usage`, `mamba usage`, `gpu/cpu token usage`), as SGLang
   *  computes its pressure. A fraction 0..1 as printed. */
  tokenUsage: number | null;
  /** Speculative decoding `accept len` (includes the bonus token, >= 1). */
  acceptLen: number | null;
  /** Speculative decoding `accept rate` (fraction as printed). */
  acceptRate: number | null;
  /** `cuda graph` / `npu graph` / `cpu graph` (any `<x> graph: True|False`); null when absent. */
  cudaGraph: boolean | null;
  /** `#token` (hybrid models: `#full token`). */
  numTokens: number | null;
  /** prefill `#new-seq` (early 2024: `#seq`). */
  newSeq: number | null;
  /** prefill `#new-token` (early 2024: `#new_token`). */
  newTokens: number | null;
  /** `#cached-token` (early 2024: `#cached_token`). */
  cachedTokens: number | null;
  /** 2024 prefill `cache hit rate` (early 2024: `tree_cache_hit_rate`). NOTE: the printed PERCENT number
   *  ("cache hit rate: 55.00%" → 55), not a fraction. */
  cacheHitRate: number | null;
  /** Every other key, verbatim (e.g. "#swa token", "swa token usage", "mamba usage", "#pending-token",
   *  "fwd occupancy", "#prealloc-req", "pre-allocated usage", "est. decode TFLOPS/s (per GPU)").
   *  Values typed: numbers → number; "True"/"False" → boolean; a value ending in "%" → the printed percent
   *  number ("fwd occupancy: 87.50%" → 87.5); anything else (e.g. "nan%", "nan") → the verbatim string.
   *  A known key whose value is not a finite number is null above and kept verbatim here. */
  extra: Record<string, string | number | boolean>;
}

/**
 * What went wrong, judged from one log line's message (see shared/reference/sglang-failures.md):
 * crash (scheduler/detokenizer exception, child process failed, a dead rank), oom (CUDA out of memory, not
 * enough memory for the KV pool), kv-pressure (KV pool full, retractions, decode out of memory), hang
 * (watchdog timeouts, detokenizer health-check failures), nccl (NCCL errors, collective timeouts), gpu
 * (illegal memory access, driver/NVML failures, a lost GPU).
 */
export type FailureClass = 'crash' | 'oom' | 'kv-pressure' | 'hang' | 'nccl' | 'gpu';

export const FAILURE_CLASSES: readonly FailureClass[] = ['crash', 'oom', 'kv-pressure', 'hang', 'nccl', 'gpu'];

export interface ClassifiedLine {
  kind: LineKind;
  stat?: StatRecord;
  /** For 'error' lines: the failure class, or null for an error that is none of them (e.g. a request's
   *  ValueError). For stat lines: 'kv-pressure' when the line shows retractions or a pool at 1.00. */
  errorClass?: FailureClass | null;
  /** The line without ANSI codes and without outer wrappers / SGLang's "[timestamp ranks] " header. */
  message: string;
}

// ---------------------------------------------------------------------------------------------------------
// Small character helpers (no regex on unbounded input)

function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

function isSpace(c: number): boolean {
  return c === 32 || c === 9;
}

/** `YYYY-MM-DD` */
function isDateToken(s: string, a: number, b: number): boolean {
  if (b - a !== 10) return false;
  for (let i = 0; i < 10; i++) {
    const c = s.charCodeAt(a + i);
    if (i === 4 || i === 7) {
      if (c !== 45) return false;
    } else if (!isDigit(c)) return false;
  }
  return true;
}

/** `HH:MM:SS` optionally followed by `.mmm` / `,mmm` (any number of fraction digits). */
function isTimeToken(s: string, a: number, b: number): boolean {
  if (b - a < 8) return false;
  for (let i = 0; i < 8; i++) {
    const c = s.charCodeAt(a + i);
    if (i === 2 || i === 5) {
      if (c !== 58) return false;
    } else if (!isDigit(c)) return false;
  }
  if (b - a === 8) return true;
  const sep = s.charCodeAt(a + 8);
  if ((sep !== 46 && sep !== 44) || b - a === 9) return false;
  for (let i = a + 9; i < b; i++) if (!isDigit(s.charCodeAt(i))) return false;
  return true;
}

/** Canonical order used for rank labels and sorting. */
const RANK_ORDER = ['dp', 'pp', 'attn_cp', 'moe_dp', 'tp', 'ep'];

/** "DP0 TP0" for {dp: 0, tp: 0}, "" for {} — canonical order DP PP ATTN_CP MOE_DP TP EP, then others. */
export function rankLabel(ranks: Record<string, number>): string {
  const keys = Object.keys(ranks);
  if (keys.length === 0) return '';
  keys.sort(compareRankKeys);
  let out = '';
  for (const k of keys) {
    if (out) out += ' ';
    out += k.toUpperCase() + String(ranks[k]);
  }
  return out;
}

function compareRankKeys(a: string, b: string): number {
  const ia = RANK_ORDER.indexOf(a);
  const ib = RANK_ORDER.indexOf(b);
  if (ia >= 0 && ib >= 0) return ia - ib;
  if (ia >= 0) return -1;
  if (ib >= 0) return 1;
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------------------
// ANSI stripping

// CSI sequences and two-character escapes. The character classes are disjoint, so a failed attempt costs at
// most the run up to the next ESC: linear overall.
const ANSI_RE = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b[@-Z\\-_]/g;

export function stripAnsi(line: string): string {
  if (line.indexOf('\x1b') < 0) return line;
  return line.replace(ANSI_RE, '');
}

// ---------------------------------------------------------------------------------------------------------
// Header parsing

interface HeaderInfo {
  time: string | null;
  ranks: Record<string, number> | null;
  /** rankLabel(ranks), or null without ranks */
  label: string | null;
}

const MAX_BRACKET = 256; // an SGLang header bracket is far shorter than this

/**
 * Parse the bracket content s[a, b) as "[timestamp] {RANKTAG}" / "gpu=N". Returns null when the bracket is not
 * such a header (e.g. "[123]", "[0m").
 */
function parseHeaderBracket(s: string, a: number, b: number): HeaderInfo | null {
  let time: string | null = null;
  let ranks: Record<string, number> | null = null;
  let label: string | null = null;
  let dateStart = -1;
  let rankStart = -1; // start of the rank-tag part, for the cache
  let rankPartHasTime = false;
  let i = a;
  let ok = true;
  while (i < b) {
    while (i < b && s.charCodeAt(i) === 32) i++;
    if (i >= b) break;
    if (ranks === null) {
      // the rank-tag part repeats on every line of a rank: look it up before parsing it
      const hit = lookupRankCache(s, i, b);
      if (hit !== null) {
        ranks = copyRanks(hit.ranks);
        label = hit.label;
        break;
      }
    }
    let j = i;
    while (j < b && s.charCodeAt(j) !== 32) j++;
    if (isDateToken(s, i, j)) {
      dateStart = i;
      if (rankStart >= 0) rankPartHasTime = true;
    } else if (isTimeToken(s, i, j)) {
      time = s.slice(dateStart >= 0 ? dateStart : i, j);
      dateStart = -1;
      if (rankStart >= 0) rankPartHasTime = true;
    } else {
      if (ranks === null) {
        ranks = {};
        rankStart = i;
      }
      if (!rankTagAt(s, i, j, ranks)) {
        const tok = s.slice(i, j);
        // 2024: "[gpu=0]" / "[gpu_id=0]"
        const eq = tok.indexOf('=');
        const name = eq > 0 ? tok.slice(0, eq) : '';
        const num = eq > 0 ? tok.slice(eq + 1) : '';
        if ((name === 'gpu' || name === 'gpu_id') && num.length > 0 && num.length < 10 && isAllDigits(num)) {
          ranks.gpu = Number(num);
        } else {
          ok = false;
          break;
        }
      }
    }
    i = j;
  }
  if (!ok) return null;
  if (dateStart >= 0 && time === null) time = s.slice(dateStart, dateStart + 10);
  if (ranks !== null && !hasKeys(ranks)) ranks = null;
  if (ranks !== null && label === null) {
    label = rankLabel(ranks);
    if (rankStart >= 0 && !rankPartHasTime) storeRankCache(s.slice(rankStart, b), ranks, label);
  }
  if (time === null && ranks === null) return null;
  return { time, ranks, label };
}

interface RankCacheEntry {
  text: string;
  ranks: Record<string, number>;
  label: string;
}

const RANK_CACHE_SIZE = 64;
const rankCache: RankCacheEntry[] = [];
let rankCacheNext = 0;

function lookupRankCache(s: string, a: number, b: number): RankCacheEntry | null {
  const len = b - a;
  const c0 = s.charCodeAt(a);
  if (!(c0 >= 65 && c0 <= 90)) return null; // rank tags start with an upper-case letter
  for (let k = 0; k < rankCache.length; k++) {
    const e = rankCache[k];
    if (e.text.length === len && e.text.charCodeAt(len - 1) === s.charCodeAt(b - 1) && eqAt(s, a, e.text)) return e;
  }
  return null;
}

function storeRankCache(text: string, ranks: Record<string, number>, label: string): void {
  const e: RankCacheEntry = { text, ranks: copyRanks(ranks), label };
  if (rankCache.length < RANK_CACHE_SIZE) rankCache.push(e);
  else {
    rankCache[rankCacheNext] = e;
    rankCacheNext = (rankCacheNext + 1) % RANK_CACHE_SIZE;
  }
}

function copyRanks(r: Record<string, number>): Record<string, number> {
  return { ...r };
}

function hasKeys(o: Record<string, number>): boolean {
  for (const _k in o) return true;
  return false;
}

const KNOWN_TAGS: Array<[string, string]> = [
  ['DP', 'dp'],
  ['TP', 'tp'],
  ['PP', 'pp'],
  ['EP', 'ep'],
  ['ATTN_CP', 'attn_cp'],
  ['MOE_DP', 'moe_dp'],
];

/** `NAMEn` rank tag in s[a, b) (NAME = [A-Z][A-Z_]*, n = 1..9 digits) → ranks[name lowercase] = n. */
function rankTagAt(s: string, a: number, b: number, ranks: Record<string, number>): boolean {
  const c0 = s.charCodeAt(a);
  if (!(c0 >= 65 && c0 <= 90)) return false;
  let d = a + 1;
  for (; d < b; d++) {
    const c = s.charCodeAt(d);
    if (isDigit(c)) break;
    if (!((c >= 65 && c <= 90) || c === 95)) return false;
  }
  if (d === b || b - d > 9) return false;
  let v = 0;
  for (let k = d; k < b; k++) {
    const c = s.charCodeAt(k);
    if (!isDigit(c)) return false;
    v = v * 10 + (c - 48);
  }
  const len = d - a;
  for (let k = 0; k < KNOWN_TAGS.length; k++) {
    const t = KNOWN_TAGS[k];
    if (t[0].length === len && eqAt(s, a, t[0])) {
      ranks[t[1]] = v;
      return true;
    }
  }
  ranks[s.slice(a, d).toLowerCase()] = v;
  return true;
}

function isAllDigits(t: string): boolean {
  if (t.length === 0) return false;
  for (let i = 0; i < t.length; i++) if (!isDigit(t.charCodeAt(i))) return false;
  return true;
}

/**
 * Walk backwards from `end` (the start of the message) over the bracket groups that precede it and pick the
 * timestamp and rank tags from the nearest groups having them (the innermost = SGLang's own; a collector's
 * outer timestamp is further left). Bounded work.
 */
function parseHeaderBefore(s: string, end: number): HeaderInfo {
  let time: string | null = null;
  let ranks: Record<string, number> | null = null;
  let label: string | null = null;
  let p = end;
  for (let group = 0; group < 6; group++) {
    while (p > 0 && isSpace(s.charCodeAt(p - 1))) p--;
    // custom logging config (SGLANG_LOGGING_CONFIG_PATH): "[time][file.py:424][INFO]: message"
    if (group === 0 && p > 1 && s.charCodeAt(p - 1) === 58 /* : */ && s.charCodeAt(p - 2) === 93) p--;
    if (p === 0 || s.charCodeAt(p - 1) !== 93 /* ] */) break;
    const close = p - 1;
    // nearest "[" (at most 6 backward scans per line, so linear even on hostile input)
    const open = close > 0 ? s.lastIndexOf('[', close - 1) : -1;
    if (open < 0 || close - open > MAX_BRACKET) break;
    const h = parseHeaderBracket(s, open + 1, close);
    if (h) {
      if (time === null && h.time !== null) time = h.time;
      if (ranks === null && h.ranks !== null) {
        ranks = h.ranks;
        label = h.label;
      }
      if (time !== null && ranks !== null) break;
    }
    p = open;
  }
  if (time === null) time = unbracketedTimeBefore(s, end);
  return { time, ranks, label };
}

/** Fallback for custom logging formats: "2025-05-31 18:31:21,123 ..." at the start of the line. */
function unbracketedTimeBefore(s: string, end: number): string | null {
  const a = skipWrappers(s, 0, true);
  if (a + 19 > end) return null;
  let j = a;
  while (j < end && s.charCodeAt(j) !== 32) j++;
  if (!isDateToken(s, a, j)) return null;
  let k = j + 1;
  while (k < end && s.charCodeAt(k) !== 32) k++;
  if (!isTimeToken(s, j + 1, k)) return null;
  return s.slice(a, k);
}

/**
 * Index of the first message character after leading wrappers: whitespace, Ray's "(Actor pid=N[, ip=...]) ",
 * leftover colour codes without ESC ("[36m"), docker's ISO timestamp, a collector's "[timestamp] " and
 * SGLang's "[timestamp RANKS] " / "[gpu=N] ". With `wrappersOnly`, SGLang/collector brackets are not skipped.
 */
function skipWrappers(s: string, from: number, wrappersOnly = false): number {
  let i = from;
  const n = s.length;
  for (let iter = 0; iter < 8; iter++) {
    while (i < n && isSpace(s.charCodeAt(i))) i++;
    if (i >= n) return i;
    const c = s.charCodeAt(i);
    if (c === 40 /* ( */) {
      const close = boundedIndexOf(s, ')', i + 1, 200);
      if (close < 0) return i;
      if (s.slice(i + 1, close).indexOf('pid=') < 0) return i;
      i = close + 1;
      continue;
    }
    if (c === 91 /* [ */) {
      const close = boundedIndexOf(s, ']', i + 1, MAX_BRACKET);
      if (close < 0) return i;
      if (isColourResidue(s, i + 1, close)) {
        i = close + 1;
        continue;
      }
      if (wrappersOnly) return i;
      if (parseHeaderBracket(s, i + 1, close) === null) {
        // custom logging config: "[time][file.py:424][INFO]: " — the source location and a non-error level go
        // (an "[ERROR]"/"[CRITICAL]" level stays: it marks the line as an error)
        if (iter === 0 || !isSourceOrLevel(s, i + 1, close)) return i;
        i = close + 1;
        if (s.charCodeAt(i) === 58 /* : */ && s.charCodeAt(i + 1) === 32) i++;
        continue;
      }
      i = close + 1;
      continue;
    }
    if (isDigit(c)) {
      // docker --timestamps: 2025-05-31T18:31:21.123456789Z
      let j = i;
      while (j < n && j - i < 40 && s.charCodeAt(j) !== 32) j++;
      if (j - i >= 19 && isDateToken(s, i, i + 10) && s.charCodeAt(i + 10) === 84 /* T */ && isIsoTail(s, i + 11, j)) {
        i = j;
        continue;
      }
    }
    return i;
  }
  return i;
}

const SKIPPED_LEVELS = ['DEBUG', 'INFO', 'WARNING', 'WARN', 'NOTSET'];

/** "file.py:424" / "scheduler.py:1012" or a non-error log level, inside the bracket s[a, b). */
function isSourceOrLevel(s: string, a: number, b: number): boolean {
  if (b - a < 2 || b - a > 128) return false;
  const inner = s.slice(a, b);
  if (SKIPPED_LEVELS.includes(inner)) return true;
  const colon = inner.lastIndexOf(':');
  if (colon <= 0 || !isAllDigits(inner.slice(colon + 1))) return false;
  const file = inner.slice(0, colon);
  if (file.indexOf(' ') >= 0) return false;
  return file.endsWith('.py') || file.indexOf('.') > 0;
}

function isIsoTail(s: string, a: number, b: number): boolean {
  if (!isTimeToken(s, a, a + 8)) return false;
  for (let k = a + 8; k < b; k++) {
    const c = s.charCodeAt(k);
    if (!(isDigit(c) || c === 46 || c === 44 || c === 90 || c === 43 || c === 45 || c === 58)) return false;
  }
  return true;
}

function isColourResidue(s: string, a: number, b: number): boolean {
  if (b - a < 1 || b - a > 16 || s.charCodeAt(b - 1) !== 109 /* m */) return false;
  for (let k = a; k < b - 1; k++) {
    const c = s.charCodeAt(k);
    if (!isDigit(c) && c !== 59) return false;
  }
  return true;
}

function boundedIndexOf(s: string, ch: string, from: number, maxDist: number): number {
  const code = ch.charCodeAt(0);
  const end = Math.min(s.length, from + maxDist);
  for (let k = from; k < end; k++) if (s.charCodeAt(k) === code) return k;
  return -1;
}

// ---------------------------------------------------------------------------------------------------------
// Stat line body

/**
 * Known key → slot (numeric, so assignment is a switch over direct property stores). The one table of stat
 * keys: the byte-level fast path (logFast.ts) takes the canonical subset of it.
 */
const S_GEN = 0,
  S_INPUT = 1,
  S_RUNNING = 2,
  S_QUEUE = 3,
  S_TOKEN_USAGE = 4,
  S_FULL_TOKEN_USAGE = 5,
  S_ACCEPT_LEN = 6,
  S_ACCEPT_RATE = 7,
  S_NUM_TOKENS = 8,
  S_FULL_NUM_TOKENS = 9,
  S_NEW_SEQ = 10,
  S_NEW_TOKENS = 11,
  S_CACHED_TOKENS = 12,
  S_CACHE_HIT_RATE = 13,
  S_GRAPH = 14;

/** The slots the fast path stores or checks (it reads them once into local constants). */
export const STAT_SLOTS = {
  gen: S_GEN,
  running: S_RUNNING,
  queue: S_QUEUE,
  tokenUsage: S_TOKEN_USAGE,
  acceptLen: S_ACCEPT_LEN,
  graph: S_GRAPH,
} as const;

export const KNOWN_KEYS: ReadonlyArray<readonly [string, number]> = [
  ['gen throughput (token/s)', S_GEN],
  ['input throughput (token/s)', S_INPUT],
  ['#running-req', S_RUNNING],
  ['#running_req', S_RUNNING],
  ['#queue-req', S_QUEUE],
  ['#remaining_req', S_QUEUE],
  ['token usage', S_TOKEN_USAGE],
  ['full token usage', S_FULL_TOKEN_USAGE],
  ['accept len', S_ACCEPT_LEN],
  ['accept rate', S_ACCEPT_RATE],
  ['#token', S_NUM_TOKENS],
  ['#full token', S_FULL_NUM_TOKENS],
  ['#new-seq', S_NEW_SEQ],
  ['#seq', S_NEW_SEQ],
  ['#new-token', S_NEW_TOKENS],
  ['#new_token', S_NEW_TOKENS],
  ['#cached-token', S_CACHED_TOKENS],
  ['#cached_token', S_CACHED_TOKENS],
  ['cache hit rate', S_CACHE_HIT_RATE],
  ['tree_cache_hit_rate', S_CACHE_HIT_RATE],
  ['cuda graph', S_GRAPH],
  ['npu graph', S_GRAPH],
  ['cpu graph', S_GRAPH],
];

interface KnownKey {
  slot: number;
  /** the key's character codes (all keys are ASCII) — typed-array loads keep the compare loop monomorphic */
  codes: Uint8Array;
}

/** KNOWN_KEYS bucketed by key length, so a key is matched in place without slicing it out. */
const KEYS_BY_LEN: Array<KnownKey[]> = [];
for (const [k, slot] of KNOWN_KEYS) {
  const codes = new Uint8Array(k.length);
  for (let i = 0; i < k.length; i++) codes[i] = k.charCodeAt(i);
  (KEYS_BY_LEN[k.length] ??= []).push({ slot, codes });
}

function matchKnownKey(s: string, a: number, b: number): number {
  const bucket = KEYS_BY_LEN[b - a];
  if (bucket === undefined) return -1;
  const len = b - a;
  const c0 = s.charCodeAt(a);
  const cl = s.charCodeAt(b - 1);
  outer: for (let k = 0; k < bucket.length; k++) {
    const codes = bucket[k].codes;
    if (codes[0] !== c0 || codes[len - 1] !== cl) continue;
    for (let i = 1; i < len - 1; i++) if (s.charCodeAt(a + i) !== codes[i]) continue outer;
    return bucket[k].slot;
  }
  return -1;
}

/** s.startsWith(key, a) without the builtin's generic argument handling (measurably faster in a hot loop). */
function eqAt(s: string, a: number, key: string): boolean {
  const m = key.length;
  if (a + m > s.length) return false;
  for (let i = 0; i < m; i++) if (s.charCodeAt(a + i) !== key.charCodeAt(i)) return false;
  return true;
}

/** Store x in the field of `slot`; the hybrid fallbacks go to `hybrid` ([fullTokenUsage, fullNumTokens]). */
function storeSlot(rec: StatRecord, slot: number, x: number | null, hybrid: Array<number | null>): void {
  switch (slot) {
    case S_GEN:
      rec.genThroughput = x;
      return;
    case S_INPUT:
      rec.inputThroughput = x;
      return;
    case S_RUNNING:
      rec.runningReqs = x;
      return;
    case S_QUEUE:
      rec.queueReqs = x;
      return;
    case S_TOKEN_USAGE:
      rec.tokenUsage = x;
      return;
    case S_FULL_TOKEN_USAGE:
      hybrid[0] = x;
      return;
    case S_ACCEPT_LEN:
      rec.acceptLen = x;
      return;
    case S_ACCEPT_RATE:
      rec.acceptRate = x;
      return;
    case S_NUM_TOKENS:
      rec.numTokens = x;
      return;
    case S_FULL_NUM_TOKENS:
      hybrid[1] = x;
      return;
    case S_NEW_SEQ:
      rec.newSeq = x;
      return;
    case S_NEW_TOKENS:
      rec.newTokens = x;
      return;
    case S_CACHED_TOKENS:
      rec.cachedTokens = x;
      return;
    case S_CACHE_HIT_RATE:
      rec.cacheHitRate = x;
      return;
  }
}

/** An empty stat record (every field null), the start of every parsed stat line. */
export function newStatRecord(kind: 'decode' | 'prefill'): StatRecord {
  return {
    kind,
    time: null,
    ranks: {},
    rank: '',
    genThroughput: null,
    inputThroughput: null,
    runningReqs: null,
    queueReqs: null,
    tokenUsage: null,
    acceptLen: null,
    acceptRate: null,
    cudaGraph: null,
    numTokens: null,
    newSeq: null,
    newTokens: null,
    cachedTokens: null,
    cacheHitRate: null,
    extra: {},
  };
}

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

/**
 * A finite number from the printed value s[a, b) ("12", "0.13", "-1", "55.00%" → 55), else null ("nan",
 * "inf", "", "abc"). Plain decimals are parsed in place: all digits as one integer (< 2^53) divided by a power
 * of ten, which IEEE division rounds exactly like Number(). Anything else falls back to Number().
 */
function numberAt(s: string, a: number, b: number): number | null {
  if (b > a && s.charCodeAt(b - 1) === 37 /* % */) b--;
  if (b <= a || b - a > 64) return null;
  let i = a;
  let neg = false;
  const c0 = s.charCodeAt(i);
  if (c0 === 45 /* - */) {
    neg = true;
    i++;
  }
  let m = 0;
  let digits = 0;
  let frac = -1;
  for (; i < b; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      m = m * 10 + (c - 48);
      digits++;
      if (frac >= 0) frac++;
    } else if (c === 46 /* . */ && frac < 0) {
      frac = 0;
    } else {
      break;
    }
  }
  if (i === b && digits > 0 && digits <= 15) {
    const x = frac > 0 ? m / POW10[frac] : m;
    return neg ? -x : x;
  }
  // slow path: exponents, '+', very long mantissas
  if (!(isDigit(c0) || c0 === 45 || c0 === 46 || c0 === 43)) return null;
  const x = Number(s.slice(a, b));
  return Number.isFinite(x) ? x : null;
}

function numberOf(v: string): number | null {
  return numberAt(v, 0, v.length);
}

function typedValue(v: string): string | number | boolean {
  if (v === 'True') return true;
  if (v === 'False') return false;
  const x = numberOf(v);
  return x === null ? v : x;
}

/**
 * Parse "key: value<sep>key: value..." from s[from..] into rec. Returns the number of pairs seen.
 * sep is ", " (all versions since mid-2024) or ". " (early-2024 "new fill batch" lines).
 * Scanning uses indexOf (vectorised in V8); the next ": " is cached so a hostile line stays linear. Known keys
 * are matched in place, only unknown keys/values are sliced out.
 */
function parseBody(s: string, from: number, sep: string, rec: StatRecord): number {
  const n = s.length;
  const legacy = sep === '. ';
  let pos = from;
  let pairs = 0;
  let hybrid: Array<number | null> | null = null;
  let colon = -2; // cached position of the next ": " at/after pos; -1 = none left
  while (pos < n) {
    while (pos < n && isSpace(s.charCodeAt(pos))) pos++;
    if (pos >= n) break;
    if (colon < pos) {
      colon = s.indexOf(': ', pos);
      if (colon < 0) break; // no further pair on this line
    }
    let next = s.indexOf(sep, pos);
    if (next >= 0 && next < colon) {
      pos = next + 2; // fragment without ": " (e.g. garbage): skip it
      continue;
    }
    let va = colon + 2;
    while (va < n && isSpace(s.charCodeAt(va))) va++;
    if (s.charCodeAt(va) === 91 /* [ */) {
      // list value such as "#running-req per DP: [3, 4, 5]": the list's ", " are not separators
      const close = boundedIndexOf(s, ']', va + 1, 4096);
      if (close > 0) next = s.indexOf(sep, close);
    } else if (next >= 0 && next < va) {
      next = s.indexOf(sep, va);
    }
    if (next < 0) next = n;
    let vb = next;
    while (vb > va && isSpace(s.charCodeAt(vb - 1))) vb--;
    if (next === n && vb > va) {
      // trailing "," (a trailing ", " minus its space) or "." (early 2024 "...69.16%.")
      const last = s.charCodeAt(vb - 1);
      if (last === 44 || (legacy && last === 46)) vb--;
    }
    let ke = colon;
    while (ke > pos && isSpace(s.charCodeAt(ke - 1))) ke--;
    if (ke > pos) {
      pairs++;
      const slot = matchKnownKey(s, pos, ke);
      if (slot < 0) {
        assignUnknown(rec, s.slice(pos, ke), s.slice(va, vb));
      } else if (slot === S_GRAPH) {
        const b = boolAt(s, va, vb);
        if (b === null) rec.extra[s.slice(pos, ke)] = s.slice(va, vb);
        else rec.cudaGraph = b;
      } else {
        const x = numberAt(s, va, vb);
        if (slot === S_FULL_TOKEN_USAGE || slot === S_FULL_NUM_TOKENS) hybrid ??= [null, null];
        storeSlot(rec, slot, x, hybrid as Array<number | null>);
        if (x === null) rec.extra[s.slice(pos, ke)] = s.slice(va, vb); // unparseable: keep verbatim
      }
    }
    pos = next + 2;
  }
  if (hybrid !== null) {
    if (rec.numTokens === null && hybrid[1] !== null) rec.numTokens = hybrid[1];
  }
  if (rec.tokenUsage === null) {
    // hybrid (full / SWA / Mamba pools) and HiSparse (GPU / CPU pools) servers print no plain `token usage`:
    // SGLang's own pressure figure is the maximum over the pools
    let m: number | null = hybrid !== null ? hybrid[0] : null;
    for (const k of POOL_USAGE_KEYS) {
      const v = rec.extra[k];
      if (typeof v === 'number' && Number.isFinite(v) && (m === null || v > m)) m = v;
    }
    rec.tokenUsage = m;
  }
  return pairs;
}

function boolAt(s: string, a: number, b: number): boolean | null {
  if (b - a === 4 && eqAt(s, a, 'True')) return true;
  if (b - a === 5 && eqAt(s, a, 'False')) return false;
  return null;
}

function assignUnknown(rec: StatRecord, key: string, val: string): void {
  // any other `<backend> graph: True|False`
  if (key.endsWith(' graph') && (val === 'True' || val === 'False')) {
    rec.cudaGraph = val === 'True';
    return;
  }
  if (key.startsWith('gen throughput') || key.startsWith('input throughput')) {
    const x = numberOf(val);
    if (x !== null) {
      if (key.startsWith('gen')) rec.genThroughput = x;
      else rec.inputThroughput = x;
      return;
    }
  }
  rec.extra[key] = typedValue(val);
}

interface StatKeyword {
  kind: 'decode' | 'prefill';
  /** index of the first character of "Decode"/"Prefill"/"new fill" */
  msgStart: number;
  /** index of the first body character (after "." / ",") */
  bodyStart: number;
  sep: string;
  /** bounds of the "(mixed #running-req: N)" text after "batch", or -1 */
  mixedFrom: number;
  mixedTo: number;
}

/** Locate "Decode batch" / "Prefill batch" (optional " [iter]") followed by "." or ",". */
function findStatKeyword(s: string): StatKeyword | null {
  let i = s.indexOf(' batch');
  let guard = 0;
  while (i >= 0 && guard++ < 64) {
    let kind: 'decode' | 'prefill' | null = null;
    let msgStart = -1;
    let legacy = false;
    if (i >= 6 && eqAt(s, i - 6, 'Decode')) {
      kind = 'decode';
      msgStart = i - 6;
    } else if (i >= 7 && eqAt(s, i - 7, 'Prefill')) {
      kind = 'prefill';
      msgStart = i - 7;
    } else if (i >= 8 && eqAt(s, i - 8, 'new fill')) {
      kind = 'prefill';
      msgStart = i - 8;
      legacy = true;
    }
    if (kind !== null) {
      let j = i + 6;
      let mixedFrom = -1;
      let mixedTo = -1;
      // optional " [iter]"
      if (s.charCodeAt(j) === 32 && s.charCodeAt(j + 1) === 91) {
        const close = boundedIndexOf(s, ']', j + 2, 64);
        if (close > 0) j = close + 1;
      }
      // 2024 mixed chunked prefill: "Prefill batch(mixed #running-req: 3). #new-seq: ..."
      if (s.charCodeAt(j) === 40 /* ( */) {
        const close = boundedIndexOf(s, ')', j + 1, 128);
        if (close > 0) {
          mixedFrom = j + 1;
          mixedTo = close;
          j = close + 1;
        }
      }
      const c = s.charCodeAt(j);
      if (c === 46 /* . */ || c === 44 /* , */) {
        return { kind, msgStart, bodyStart: j + 1, sep: legacy ? '. ' : ', ', mixedFrom, mixedTo };
      }
    }
    i = s.indexOf(' batch', i + 6);
  }
  return null;
}

function parseStatFrom(s: string): { stat: StatRecord; msgStart: number } | null {
  // findStatKeyword is an indexOf(' batch') scan: the cheap prefilter that rejects most non-stat lines
  const kw = findStatKeyword(s);
  if (kw) {
    const rec = newStatRecord(kw.kind);
    if (kw.mixedFrom >= 0) {
      // "mixed #running-req: 3" → the decode requests mixed into this prefill batch
      const inner = s.slice(kw.mixedFrom, kw.mixedTo).trim();
      parseBody(inner, inner.startsWith('mixed ') ? 6 : 0, ', ', rec);
    }
    if (parseBody(s, kw.bodyStart, kw.sep, rec) > 0) {
      const h = parseHeaderBefore(s, kw.msgStart);
      rec.time = h.time;
      if (h.ranks) {
        rec.ranks = h.ranks;
        rec.rank = h.label ?? rankLabel(h.ranks);
      }
      return { stat: rec, msgStart: kw.msgStart };
    }
  }
  if (s.indexOf('gen throughput') >= 0) {
    // early 2024: "#running-req: 1, #token: 90, token usage: 0.00, gen throughput (token/s): 40.65, #queue-req: 0"
    const m = skipWrappers(s, 0);
    if (s.startsWith('#running-req: ', m)) {
      const rec = newStatRecord('decode');
      if (parseBody(s, m, ', ', rec) > 0 && rec.genThroughput !== null) {
        const h = parseHeaderBefore(s, m);
        rec.time = h.time;
        if (h.ranks) {
          rec.ranks = h.ranks;
          rec.rank = h.label ?? rankLabel(h.ranks);
        }
        return { stat: rec, msgStart: m };
      }
    }
  }
  return null;
}

/** Lines longer than this are judged on their first HEAD_LIMIT characters only (a real log line is a few KB;
 *  this bounds the work on a runaway line, e.g. 100 MB of binary garbage, to a few linear scans of 1 Mi chars). */
export const HEAD_LIMIT = 1024 * 1024;

function head(line: string): string {
  return line.length > HEAD_LIMIT ? line.slice(0, HEAD_LIMIT) : line;
}

/** Parse an SGLang scheduler stat line; null when the line is not one. Never throws. */
export function parseStatLine(line: string): StatRecord | null {
  try {
    if (typeof line !== 'string') return null;
    const r = parseStatFrom(stripAnsi(head(line)));
    return r ? r.stat : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------------------
// Classification of the other lines

const READY_MARK = 'The server is fired up and ready to roll';

const STARTUP_MARKS = [
  'Load weight',
  'KV Cache is allocated',
  'Capture cuda graph',
  'Capture npu graph',
  'Capture cpu graph',
  'max_total_num_tokens=',
  'Started server process',
  'Waiting for application startup',
  'Application startup complete',
  'Uvicorn running on',
  'Init torch distributed',
  'Memory pool end',
  'server_args=ServerArgs(',
  'Loading safetensors checkpoint shards',
];

/** Error markers that contain "rror" (checked only when the message does). */
const ERROR_MARKS_RROR = [
  'OutOfMemoryError',
  'RuntimeError',
  'CUDA error',
  'NCCL error',
  'ncclInternalError',
  'ncclSystemError',
  'ncclUnhandledCudaError',
  'ncclRemoteError',
  'Fatal Python error',
];

/** Other error markers. */
const ERROR_MARKS_OTHER = ['CUDA out of memory', 'NCCL WARN', '[ERROR]', ' ERROR ', 'Segmentation fault', 'Received sigquit'];

/** uvicorn access line: `INFO:     127.0.0.1:40052 - "POST /v1/chat/completions HTTP/1.1" 200 OK` */
function isAccessMessage(m: string): boolean {
  if (!m.startsWith('INFO:')) return false;
  const q = m.indexOf(' - "');
  if (q < 0 || q > 200) return false;
  const h = m.indexOf(' HTTP/', q);
  return h > 0 && h - q < 8192;
}

/** Message starts with an exception class name: "ValueError: ...", "torch.OutOfMemoryError: ...", "AssertionError". */
function startsWithExceptionName(m: string): boolean {
  const n = Math.min(m.length, 160);
  let j = 0;
  for (; j < n; j++) {
    const c = m.charCodeAt(j);
    const word = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || isDigit(c) || c === 95 || c === 46;
    if (!word) break;
  }
  if (j === 0) return false;
  if (j < m.length) {
    const c = m.charCodeAt(j);
    // "ValueError: x", "AssertionError", "Exception in thread ..."
    if (c !== 58 /* : */ && c !== 32) return false;
  }
  const name = m.slice(0, j);
  return name.endsWith('Error') || name.endsWith('Exception') || name === 'KeyboardInterrupt';
}

/**
 * "...: ValueError: x" / "[rank0]: KeyError: 'y'" — an exception class name followed by ": " anywhere in the
 * message (the name must start with an upper-case letter, so "import error: " does not count).
 */
function containsExceptionName(m: string): boolean {
  for (const suffix of ['Error: ', 'Exception: ']) {
    let i = m.indexOf(suffix);
    let guard = 0;
    while (i > 0 && guard++ < 16) {
      // walk back over the identifier (letters, digits, '_', '.') to its first letter
      let k = i;
      while (k > 0 && k > i - 80) {
        const c = m.charCodeAt(k - 1);
        if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || isDigit(c) || c === 95 || c === 46) k--;
        else break;
      }
      // module path "torch.distributed.DistBackendError": judge the last component
      let first = k;
      for (let d = i - 1; d >= k; d--) {
        if (m.charCodeAt(d) === 46) {
          first = d + 1;
          break;
        }
      }
      const c0 = m.charCodeAt(first);
      if (first < i && c0 >= 65 && c0 <= 90) return true;
      i = m.indexOf(suffix, i + suffix.length);
    }
  }
  return false;
}

function isErrorMessage(m: string): boolean {
  if (startsWithExceptionName(m)) return true;
  if (m.startsWith('ERROR') || m.startsWith('CRITICAL') || m === 'Killed') return true;
  for (const mark of ERROR_MARKS_OTHER) if (m.indexOf(mark) >= 0) return true;
  const hasRror = m.indexOf('rror') >= 0;
  if (hasRror) for (const mark of ERROR_MARKS_RROR) if (m.indexOf(mark) >= 0) return true;
  return (hasRror || m.indexOf('Exception: ') >= 0) && containsExceptionName(m);
}

/**
 * The one restart detector: a classified line that starts a new server process ("Started server process
 * [pid]"); the figures and readiness of the previous process no longer count.
 */
export function isRestartLine(c: ClassifiedLine): boolean {
  return c.kind === 'startup' && c.message.indexOf('Started server process') >= 0;
}

/** Classify one log line. Never throws. */
export function classifyLine(line: string): ClassifiedLine {
  try {
    if (typeof line !== 'string') return { kind: 'other', message: '' };
    const s = stripAnsi(head(line));
    const st = parseStatFrom(s);
    if (st) {
      const c: ClassifiedLine = { kind: st.stat.kind, stat: st.stat, message: s.slice(st.msgStart) };
      if (isKvPressureStat(st.stat)) c.errorClass = 'kv-pressure';
      return c;
    }
    const message = s.slice(skipWrappers(s, 0));
    const kind = classifyMessage(message);
    if (kind === 'error') return { kind, message, errorClass: classifyFailure(message) };
    return { kind, message };
  } catch {
    return { kind: 'other', message: typeof line === 'string' ? line : '' };
  }
}

function classifyMessage(m: string): LineKind {
  if (m.length === 0) return 'other';
  if (isAccessMessage(m)) return 'access';
  if (m.startsWith('server_args=')) return 'startup';
  if (classifyFailure(m) !== null) return 'error';
  if (m.indexOf('Traceback (most recent call last)') >= 0) return 'traceback';
  if (m.indexOf(READY_MARK) >= 0) return 'ready';
  if (isErrorMessage(m)) return 'error';
  for (const mark of STARTUP_MARKS) if (m.indexOf(mark) >= 0) return 'startup';
  return 'other';
}

// ---------------------------------------------------------------------------------------------------------
// Failure classes

/** Signatures per class, checked in this order (the most specific first: an OOM inside a scheduler exception
 *  is an oom; a c10::DistBackendError after "terminate called" is nccl). Substrings, as SGLang prints them. */
const FAILURE_SIGNATURES: Array<[FailureClass, string[]]> = [
  [
    'oom',
    [
      'CUDA out of memory',
      'OutOfMemoryError',
      'CUDA error: out of memory',
      'Not enough memory. Please try to increase --mem-fraction-static',
      'Not enough memory',
    ],
  ],
  ['kv-pressure', ['KV cache pool is full', 'Decode out of memory happened', 'No space left for only one request']],
  [
    'nccl',
    [
      'NCCL error',
      'ProcessGroupNCCL',
      'Watchdog caught collective operation timeout',
      'DistBackendError',
      'NCCL WARN',
      'ncclInternalError',
      'ncclSystemError',
      'ncclUnhandledCudaError',
      'ncclRemoteError',
    ],
  ],
  [
    'gpu',
    [
      'illegal memory access',
      'Found no NVIDIA driver',
      'Unable to determine the device handle',
      'GPU is lost',
      'Failed to initialize NVML',
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
      'uncorrectable ECC error',
      'CUDA error: unspecified launch failure',
    ],
  ],
  ['hang', ['Watchdog timeout', 'Pyspy failed to dump', 'Health check failed', "couldn't get a response from detokenizer"]],
  [
    'crash',
    [
      'hit an exception',
      'Received sigquit from a child proces',
      'Child process unexpectedly failed',
      'scheduler is dead',
      'Fatal Python error',
      'Segmentation fault',
      'terminate called after throwing',
    ],
  ],
];

/** The failure class of a log message (a line without its header), or null. Never throws; linear. */
export function classifyFailure(message: string): FailureClass | null {
  if (typeof message !== 'string' || message.length === 0) return null;
  const m = message.length > 8192 ? message.slice(0, 8192) : message;
  for (const [cls, marks] of FAILURE_SIGNATURES) for (const mark of marks) if (m.indexOf(mark) >= 0) return cls;
  return null;
}

/** Keys of per-pool usage figures (hybrid SWA / Mamba models, HiSparse); SGLang's pressure is their maximum. */
const POOL_USAGE_KEYS = ['full token usage', 'swa token usage', 'mamba usage', 'gpu token usage', 'cpu token usage'];

/** The highest KV pool usage a stat line reports (plain `token usage` and every pool), or null. */
export function maxPoolUsage(st: StatRecord): number | null {
  let m = st.tokenUsage;
  for (const k of POOL_USAGE_KEYS) {
    const v = st.extra[k];
    if (typeof v === 'number' && Number.isFinite(v) && (m === null || v > m)) m = v;
  }
  return m;
}

/** Retracted requests (`#retracted-req`) on a stat line, 0 when absent. */
export function retractedReqs(st: StatRecord): number {
  const v = st.extra['#retracted-req'] ?? st.extra['#retracted_req'];
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/** A stat line showing KV pressure: requests retracted, or a pool printed as full (1.00). */
export function isKvPressureStat(st: StatRecord): boolean {
  if (retractedReqs(st) > 0) return true;
  const u = maxPoolUsage(st);
  return u !== null && u >= 0.995;
}

/** Timestamp and rank tags of any log line (stat or not), e.g. for an error line. Never throws. */
export function lineHeader(line: string): { time: string | null; ranks: Record<string, number>; rank: string } {
  try {
    const s = stripAnsi(head(line));
    const h = parseHeaderBefore(s, skipWrappers(s, 0));
    return { time: h.time, ranks: h.ranks ?? {}, rank: h.label ?? '' };
  } catch {
    return { time: null, ranks: {}, rank: '' };
  }
}

// ---------------------------------------------------------------------------------------------------------
// JSON record for the CLI contract

/** A StatRecord as JSON (`parse-log --json`): the same fields, `rank` always present. */
export type StatJsonRecord = Omit<StatRecord, 'rank'> & { rank: string };

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
  private readonly errorClasses: Record<FailureClass, number> = { crash: 0, oom: 0, 'kv-pressure': 0, hang: 0, nccl: 0, gpu: 0 };
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

// ---------------------------------------------------------------------------------------------------------
// Streaming line splitter

export interface LineSplitterOptions {
  /** Longest line kept, in UTF-8 bytes. Default 1 MiB. A longer line keeps its first maxLineBytes (cut on a
   *  character boundary) and gets TRUNCATED_MARKER + "<n> more bytes]" appended. */
  maxLineBytes?: number;
}

/** Appended (followed by "<n> more bytes]") to a line that exceeded maxLineBytes. */
export const TRUNCATED_MARKER = ' …[truncated ';

export function isTruncatedLine(line: string): boolean {
  const i = line.lastIndexOf(TRUNCATED_MARKER);
  return i >= 0 && line.endsWith(' more bytes]');
}

/**
 * Splits a byte/text stream on "\n" (a trailing "\r" is removed, so "\r\n" works too). Memory is bounded:
 * a runaway line never buffers more than maxLineBytes; the rest of it is counted and dropped.
 * Buffer chunks are decoded with a streaming UTF-8 decoder (a character split across chunks is reassembled);
 * each chunk is decoded once and split with indexOf, so short lines cost one slice each.
 */
export class LineSplitter {
  readonly maxLineBytes: number;
  /** number of lines truncated so far */
  truncatedLines = 0;
  private readonly decoder = new StringDecoder('utf8');
  private parts: string[] = [];
  private pendingBytes = 0;
  /** bytes dropped from the current line (>0 means the current line is being truncated) */
  private dropped = 0;

  constructor(opts: LineSplitterOptions = {}) {
    const m = opts.maxLineBytes;
    this.maxLineBytes = typeof m === 'number' && Number.isFinite(m) && m >= 1 ? Math.floor(m) : 1024 * 1024;
  }

  push(chunk: Buffer | string): string[] {
    const out: string[] = [];
    let text: string;
    if (typeof chunk === 'string') {
      // a string after a Buffer that ended mid-character: emit what the decoder holds first
      const held = this.decoder.end();
      text = held ? held + chunk : chunk;
    } else if (chunk && chunk.length) {
      text = this.decoder.write(chunk);
    } else {
      return out;
    }
    this.pushText(text, out);
    return out;
  }

  flush(): string[] {
    const out: string[] = [];
    const rest = this.decoder.end();
    if (rest) this.pushText(rest, out);
    if (this.parts.length === 0 && this.dropped === 0) return out;
    const truncated = this.dropped > 0;
    const line = this.finishPending();
    if (line.length > 0 || truncated) out.push(line);
    return out;
  }

  // -- internals ------------------------------------------------------------------------------------------

  private pushText(t: string, out: string[]): void {
    let pos = 0;
    const n = t.length;
    while (pos < n) {
      const nl = t.indexOf('\n', pos);
      if (nl < 0) {
        this.appendPartial(t, pos, n);
        return;
      }
      if (this.parts.length === 0 && this.dropped === 0) out.push(this.finishLine(t.slice(pos, nl)));
      else {
        this.appendPartial(t, pos, nl);
        out.push(this.finishPending());
      }
      pos = nl + 1;
    }
  }

  /** A complete line that was not buffered: strip "\r", enforce the limit. */
  private finishLine(line: string): string {
    let l = line;
    if (l.length > 0 && l.charCodeAt(l.length - 1) === 13) l = l.slice(0, -1);
    const max = this.maxLineBytes;
    if (l.length * 3 <= max) return l; // a UTF-16 unit is at most 3 UTF-8 bytes: surely short enough
    const bytes = Buffer.byteLength(l, 'utf8');
    if (bytes <= max) return l;
    const keep = prefixWithinBytes(l, max);
    this.truncatedLines++;
    return keep + TRUNCATED_MARKER + (bytes - Buffer.byteLength(keep, 'utf8')) + ' more bytes]';
  }

  private appendPartial(t: string, a: number, b: number): void {
    if (b <= a) return;
    const piece = t.slice(a, b);
    const bytes = Buffer.byteLength(piece, 'utf8');
    if (this.dropped > 0) {
      this.dropped += bytes;
      return;
    }
    const room = this.maxLineBytes - this.pendingBytes;
    if (bytes <= room) {
      this.parts.push(piece);
      this.pendingBytes += bytes;
      return;
    }
    const keep = room > 0 ? prefixWithinBytes(piece, room) : '';
    if (keep) this.parts.push(keep);
    const kept = keep ? Buffer.byteLength(keep, 'utf8') : 0;
    this.pendingBytes = this.maxLineBytes; // the line is full now
    this.dropped += bytes - kept;
  }

  private finishPending(): string {
    let line = this.parts.length === 1 ? this.parts[0] : this.parts.join('');
    this.parts = [];
    this.pendingBytes = 0;
    if (this.dropped > 0) {
      const d = this.dropped;
      this.dropped = 0;
      this.truncatedLines++;
      return line + TRUNCATED_MARKER + d + ' more bytes]';
    }
    if (line.length > 0 && line.charCodeAt(line.length - 1) === 13) line = line.slice(0, -1);
    return line;
  }
}

/** The longest prefix of str whose UTF-8 encoding fits in maxBytes, cut on a character boundary. */
function prefixWithinBytes(str: string, maxBytes: number): string {
  // maxBytes UTF-16 units encode to >= maxBytes bytes, so the answer lies within this slice
  const head = str.length > maxBytes ? str.slice(0, maxBytes) : str;
  const buf = Buffer.from(head, 'utf8');
  if (buf.length <= maxBytes) return head;
  let cut = maxBytes;
  while (cut > 0 && (buf[cut] & 0xc0) === 0x80) cut--; // do not split a UTF-8 sequence
  return buf.subarray(0, cut).toString('utf8');
}
