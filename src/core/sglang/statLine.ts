/**
 * Scheduler stat lines ("Decode batch" / "Prefill batch"): the known-key table and the body parser.
 */
import { StatRecord } from './logTypes';
import {
  boundedIndexOf,
  eqAt,
  isDigit,
  isSpace,
  parseHeaderBefore,
  rankLabel,
  skipWrappers,
  stripAnsi,
  unwrapJsonRecord,
} from './logHeader';

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

/**
 * Keys of per-pool usage figures (hybrid SWA / Mamba models, HiSparse); SGLang's pressure is their maximum.
 * HiSparse's host pool (`cpu token usage`) is not part of it (`get_max_pool_usage` leaves it out: a full host
 * tier only means evictions go to disk or are skipped), so it is kept in `extra` only.
 */
export const POOL_USAGE_KEYS = ['full token usage', 'swa token usage', 'mamba usage', 'gpu token usage'];

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
  if (rec.numTokens === null) {
    // HiSparse: `#gpu token` (source) or `#gpu-token` (a 2026 paste, PR #22331) is the device pool's count
    const g = rec.extra['#gpu token'] ?? rec.extra['#gpu-token'];
    if (typeof g === 'number' && Number.isFinite(g)) rec.numTokens = g;
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

export function parseStatFrom(s: string): { stat: StatRecord; msgStart: number } | null {
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
const HEAD_LIMIT = 1024 * 1024;

function head(line: string): string {
  return line.length > HEAD_LIMIT ? line.slice(0, HEAD_LIMIT) : line;
}

/** A log line as every parser here reads it: its first HEAD_LIMIT characters, ANSI colours removed, and the text of
 *  a JSON log record (`--log-format json`-style wrappers) instead of the record. */
export function cleanLine(line: string): string {
  return unwrapJsonRecord(stripAnsi(head(line)));
}

/** Parse an SGLang scheduler stat line; null when the line is not one. Never throws. */
export function parseStatLine(line: string): StatRecord | null {
  try {
    if (typeof line !== 'string') return null;
    const r = parseStatFrom(cleanLine(line));
    return r ? r.stat : null;
  } catch {
    return null;
  }
}
