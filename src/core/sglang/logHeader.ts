/**
 * SGLang log line header grammar: wrappers, ANSI stripping, the "[timestamp ranks] " header and rank labels.
 */
// ---------------------------------------------------------------------------------------------------------
// Small character helpers (no regex on unbounded input)

export function isDigit(c: number): boolean {
  return c >= 48 && c <= 57;
}

export function isSpace(c: number): boolean {
  return c === 32 || c === 9;
}

/** s.startsWith(key, a) without the builtin's generic argument handling (measurably faster in a hot loop). */
export function eqAt(s: string, a: number, key: string): boolean {
  const m = key.length;
  if (a + m > s.length) return false;
  for (let i = 0; i < m; i++) if (s.charCodeAt(a + i) !== key.charCodeAt(i)) return false;
  return true;
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

/** `MM-DD` (sglang-diffusion's `[MM-DD HH:MM:SS]`, vLLM-style `INFO 04-15 17:13:10`) */
function isShortDateToken(s: string, a: number, b: number): boolean {
  return (
    b - a === 5 &&
    isDigit(s.charCodeAt(a)) &&
    isDigit(s.charCodeAt(a + 1)) &&
    s.charCodeAt(a + 2) === 45 &&
    isDigit(s.charCodeAt(a + 3)) &&
    isDigit(s.charCodeAt(a + 4))
  );
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
export const RANK_ORDER = ['dp', 'pp', 'attn_cp', 'moe_dp', 'tp', 'ep'];

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

/** The keys a JSON log formatter (python-json-logger, a dictConfig under SGLANG_LOGGING_CONFIG_PATH) uses. */
const JSON_MESSAGE_KEYS = ['message', 'msg'];
const JSON_TIME_KEYS = ['asctime', 'timestamp', 'time', '@timestamp'];
const JSON_LEVEL_KEYS = ['levelname', 'level'];

/**
 * A line written by a JSON log formatter, `{"asctime": "2026-04-15 17:13:10", "levelname": "INFO", "message":
 * "Decode batch, …"}`, as the plain line SGLang's own formatter would print: `[time] message` (an error level kept
 * before the message, so the line still reads as an error). Any other line is returned as it is; only lines that
 * start with `{` (after spaces) and hold a string message are rewritten.
 */
export function unwrapJsonRecord(s: string): string {
  let i = 0;
  while (i < s.length && i < 8 && isSpace(s.charCodeAt(i))) i++;
  if (s.charCodeAt(i) !== 123 /* { */ || s.length > 256 * 1024) return s;
  let o: unknown;
  try {
    o = JSON.parse(s);
  } catch {
    return s;
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) return s;
  const r = o as Record<string, unknown>;
  const pick = (keys: string[]) => keys.map((k) => r[k]).find((v): v is string => typeof v === 'string') ?? null;
  const message = pick(JSON_MESSAGE_KEYS);
  if (message === null) return s;
  const t = pick(JSON_TIME_KEYS);
  // ISO forms (2026-04-15T17:13:10.123Z) read as SGLang's own "YYYY-MM-DD HH:MM:SS.mmm"
  const time = t && /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d/.test(t) ? t.replace('T', ' ').replace(/(?:Z|[+-]\d\d:?\d\d)$/, '') : null;
  const level = pick(JSON_LEVEL_KEYS);
  const lv = level && /^(error|critical|fatal)$/i.test(level) ? `${level.toUpperCase()} ` : '';
  return `${time ? `[${time}] ` : ''}${lv}${message}`;
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
    if (isDateToken(s, i, j) || isShortDateToken(s, i, j)) {
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
/** "] INFO scheduler.py:640: " right before a message (bounded input: at most 120 characters). */
/** "INFO engine.py:156: server_args=ServerArgs(" (2026): a startup line whatever its values say. */
export const LEVEL_SOURCE_SERVER_ARGS = /^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [A-Za-z0-9_.-]{1,80}:\d{1,6}: server_args=/;
const LEVEL_SOURCE_BEFORE = /\] (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) [A-Za-z0-9_.-]{1,80}:\d{1,6}: *$/;

export function parseHeaderBefore(s: string, end: number): HeaderInfo {
  let time: string | null = null;
  let ranks: Record<string, number> | null = null;
  let label: string | null = null;
  let p = end;
  // 2026 main-process loggers: "[time] INFO file.py:640: message" (a level and source after SGLang's bracket)
  const lv = LEVEL_SOURCE_BEFORE.exec(s.slice(Math.max(0, p - 120), p));
  if (lv) p -= lv[0].length - 1;
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
export function skipWrappers(s: string, from: number, wrappersOnly = false): number {
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

export function boundedIndexOf(s: string, ch: string, from: number, maxDist: number): number {
  const code = ch.charCodeAt(0);
  const end = Math.min(s.length, from + maxDist);
  for (let k = from; k < end; k++) if (s.charCodeAt(k) === code) return k;
  return -1;
}
