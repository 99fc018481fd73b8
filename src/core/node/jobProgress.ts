// Generation-progress files written by batch generation jobs next to their outputs:
//   progress.json   — counters (completed / failed / total / output tokens / elapsed / status), any spelling
//   done_indices    — indices of finished prompts: one integer per line, or comma/space separated, or a JSON array
// Both parsers never throw and never guess: a half-written progress.json yields ok=false with a reason.
//
// This module must not import `vscode`.

export interface ProgressInfo {
  ok: boolean;
  /** why ok is false, e.g. "progress.json is incomplete (truncated at byte 812 — the writer may be mid-write);
   *  showing nothing rather than guessing" */
  error?: string;
  completed: number | null;
  failed: number | null;
  total: number | null;
  outputTokens: number | null;
  /** seconds (converted from elapsed_ms / elapsed_min / elapsed_hours / "H:MM:SS" when needed) */
  elapsedS: number | null;
  status: string | null;
  /** (completed + failed) / total × 100, clamped to 0..100; null without a positive total */
  percent: number | null;
  /** completed / elapsedS (prompts per second) */
  ratePerS: number | null;
  /** (total − completed − failed) / ratePerS; 0 when nothing remains; null when unknown */
  etaS: number | null;
  /** every field not recognised above, as parsed */
  extra: Record<string, unknown>;
}

function emptyInfo(ok: boolean, error?: string): ProgressInfo {
  const p: ProgressInfo = {
    ok,
    completed: null,
    failed: null,
    total: null,
    outputTokens: null,
    elapsedS: null,
    status: null,
    percent: null,
    ratePerS: null,
    etaS: null,
    extra: {},
  };
  if (error !== undefined) p.error = error;
  return p;
}

/** Normalised key (lowercase, '-' and ' ' → '_') → field. */
const COMPLETED_KEYS = [
  'completed',
  'done',
  'num_completed',
  'n_completed',
  'completed_count',
  'num_done',
  'n_done',
  'finished',
  'num_finished',
  'succeeded',
  'successful',
  'success',
];
const FAILED_KEYS = ['failed', 'failures', 'errors', 'num_failed', 'n_failed', 'failed_count', 'error_count', 'num_errors', 'n_errors'];
const TOTAL_KEYS = [
  'total',
  'num_prompts',
  'total_prompts',
  'n_prompts',
  'num_total',
  'n_total',
  'total_count',
  'num_requests',
  'total_requests',
];
const OUTPUT_TOKEN_KEYS = [
  'output_tokens',
  'total_output_tokens',
  'num_output_tokens',
  'n_output_tokens',
  'generated_tokens',
  'total_generated_tokens',
];
const STATUS_KEYS = ['status', 'state', 'phase'];
/** elapsed spellings with their unit factor to seconds */
const ELAPSED_KEYS: Array<[string, number]> = [
  ['elapsed', 1],
  ['elapsed_s', 1],
  ['elapsed_sec', 1],
  ['elapsed_secs', 1],
  ['elapsed_seconds', 1],
  ['elapsed_time', 1],
  ['elapsed_time_s', 1],
  ['duration_s', 1],
  ['elapsed_ms', 0.001],
  ['elapsed_min', 60],
  ['elapsed_mins', 60],
  ['elapsed_minutes', 60],
  ['elapsed_h', 3600],
  ['elapsed_hr', 3600],
  ['elapsed_hrs', 3600],
  ['elapsed_hours', 3600],
];
/** nested objects that some writers use to hold the counters */
const NESTED_KEYS = ['progress', 'stats', 'counts', 'counters', 'summary'];

function normKey(k: string): string {
  return k
    .trim()
    .toLowerCase()
    .replace(/[-\s]+/g, '_');
}

/** A non-negative finite count from a number or numeric string; arrays count their elements (e.g. "errors": [...]). */
function countOf(v: unknown, allowArray: boolean): number | null {
  if (typeof v === 'number') return Number.isFinite(v) && v >= 0 ? v : null;
  if (typeof v === 'string') {
    const t = v.trim();
    if (t === '' || !/^[+]?\d+(\.\d+)?([eE][+-]?\d+)?$/.test(t)) return null;
    const x = Number(t);
    return Number.isFinite(x) && x >= 0 ? x : null;
  }
  if (allowArray && Array.isArray(v)) return v.length;
  return null;
}

/** Seconds from a number (times unit factor) or a "[[D-]H:]MM:SS[.f]" / numeric string. */
function secondsOf(v: unknown, factor: number): number | null {
  if (typeof v === 'number') return Number.isFinite(v) && v >= 0 ? v * factor : null;
  if (typeof v !== 'string') return null;
  const t = v.trim();
  const n = countOf(t, false);
  if (n !== null) return n * factor;
  const m = /^(?:(\d{1,4})-)?(\d{1,6}):([0-5]?\d)(?::([0-5]?\d(?:\.\d{1,9})?))?$/.exec(t);
  if (!m) return null;
  const days = m[1] ? Number(m[1]) : 0;
  let h: number, mi: number, s: number;
  if (m[4] !== undefined) {
    h = Number(m[2]);
    mi = Number(m[3]);
    s = Number(m[4]);
  } else {
    // "MM:SS"
    h = 0;
    mi = Number(m[2]);
    s = Number(m[3]);
  }
  return days * 86400 + h * 3600 + mi * 60 + s;
}

/**
 * Visits every character of a JSON text outside its strings (an opening quote included); `visit` returns how
 * many of the following characters to skip. Returns whether a string is still open at the end.
 */
function scanOutsideJsonStrings(text: string, visit: (i: number, c: number) => number | void): boolean {
  let inStr = false;
  let esc = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inStr) {
      if (esc) esc = false;
      else if (c === 92) esc = true;
      else if (c === 34) inStr = false;
      continue;
    }
    i += visit(i, c) || 0;
    if (c === 34) inStr = true;
  }
  return inStr;
}

/**
 * Is `text` a JSON document cut short? Walks strings/escapes and bracket depth; a document whose brackets or
 * string are still open at the end (or that ends right after ':' / ',') is truncated.
 */
function truncatedJson(text: string): boolean {
  let depth = 0;
  let last = 0;
  const openString = scanOutsideJsonStrings(text, (_i, c) => {
    if (c === 123 || c === 91) depth++;
    else if (c === 125 || c === 93) depth--;
    if (c > 32) last = c;
  });
  return openString || depth > 0 || last === 58 || last === 44;
}

/** Python's json.dump writes NaN / Infinity / -Infinity; turn them (outside strings) into null. */
function pythonJsonToStrict(text: string): string {
  let out = '';
  let from = 0;
  scanOutsideJsonStrings(text, (i) => {
    const word = text.startsWith('NaN', i)
      ? 'NaN'
      : text.startsWith('-Infinity', i)
        ? '-Infinity'
        : text.startsWith('Infinity', i)
          ? 'Infinity'
          : '';
    if (!word) return 0;
    out += text.slice(from, i) + 'null';
    from = i + word.length;
    return word.length - 1;
  });
  return from === 0 ? text : out + text.slice(from);
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** Parse a progress.json text. Tolerates key spellings and Python's NaN; never throws. */
export function parseProgressJson(text: string): ProgressInfo {
  try {
    return parseProgressInner(text);
  } catch (e) {
    return emptyInfo(false, `progress.json could not be read (${e instanceof Error ? e.message : String(e)})`);
  }
}

function parseProgressInner(text: string): ProgressInfo {
  if (typeof text !== 'string') return emptyInfo(false, 'progress.json is not text');
  let body = text;
  if (body.charCodeAt(0) === 0xfeff) body = body.slice(1);
  if (body.trim() === '')
    return emptyInfo(false, 'progress.json is empty (the writer may be mid-write); showing nothing rather than guessing');
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (e1) {
    if (truncatedJson(body)) {
      return emptyInfo(
        false,
        `progress.json is incomplete (truncated at byte ${byteLength(text)} — the writer may be mid-write); showing nothing rather than guessing`,
      );
    }
    try {
      doc = JSON.parse(pythonJsonToStrict(body));
    } catch {
      const msg = e1 instanceof Error ? e1.message : String(e1);
      return emptyInfo(false, `progress.json is not valid JSON (${msg}); showing nothing rather than guessing`);
    }
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return emptyInfo(
      false,
      `progress.json holds ${Array.isArray(doc) ? 'an array' : doc === null ? 'null' : 'a ' + typeof doc}, not an object`,
    );
  }

  const info = emptyInfo(true);
  const top = doc as Record<string, unknown>;
  // index: normalised key → [original key, value, container]
  const index = new Map<string, { key: string; value: unknown; nested: string | null }>();
  for (const [k, v] of Object.entries(top)) {
    const nk = normKey(k);
    if (!index.has(nk)) index.set(nk, { key: k, value: v, nested: null });
  }
  for (const nest of NESTED_KEYS) {
    const e = index.get(nest);
    if (!e || e.value === null || typeof e.value !== 'object' || Array.isArray(e.value)) continue;
    for (const [k, v] of Object.entries(e.value as Record<string, unknown>)) {
      const nk = normKey(k);
      if (!index.has(nk)) index.set(nk, { key: k, value: v, nested: e.key });
    }
  }

  const used = new Set<string>(); // original top-level keys consumed (or nested containers fully consumed)
  const usedNested = new Map<string, Set<string>>();
  const consume = (nk: string): unknown => {
    const e = index.get(nk);
    if (!e) return undefined;
    if (e.nested === null) used.add(e.key);
    else {
      let s = usedNested.get(e.nested);
      if (!s) usedNested.set(e.nested, (s = new Set()));
      s.add(e.key);
    }
    return e.value;
  };
  const pick = (keys: string[], allowArray: boolean): number | null => {
    for (const k of keys) {
      if (!index.has(k)) continue;
      const x = countOf(index.get(k)!.value, allowArray);
      if (x !== null) {
        consume(k);
        return x;
      }
    }
    return null;
  };

  info.completed = pick(COMPLETED_KEYS, false);
  info.failed = pick(FAILED_KEYS, true);
  info.total = pick(TOTAL_KEYS, false);
  info.outputTokens = pick(OUTPUT_TOKEN_KEYS, false);
  for (const [k, factor] of ELAPSED_KEYS) {
    if (!index.has(k)) continue;
    const s = secondsOf(index.get(k)!.value, factor);
    if (s !== null) {
      consume(k);
      info.elapsedS = s;
      break;
    }
  }
  for (const k of STATUS_KEYS) {
    const e = index.get(k);
    if (e && typeof e.value === 'string') {
      consume(k);
      info.status = e.value;
      break;
    }
  }

  // extra: everything not consumed (nested containers keep only their unconsumed members)
  for (const [k, v] of Object.entries(top)) {
    if (used.has(k)) continue;
    const consumedInside = usedNested.get(k);
    if (consumedInside && v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const rest: Record<string, unknown> = {};
      let any = false;
      for (const [k2, v2] of Object.entries(v as Record<string, unknown>)) {
        if (!consumedInside.has(k2)) {
          rest[k2] = v2;
          any = true;
        }
      }
      if (any) info.extra[k] = rest;
      continue;
    }
    info.extra[k] = v;
  }

  // derived values
  const done = info.completed;
  const processed = done === null ? null : done + (info.failed ?? 0);
  if (processed !== null && info.total !== null && info.total > 0) {
    info.percent = Math.max(0, Math.min(100, (processed / info.total) * 100));
  }
  if (done !== null && info.elapsedS !== null && info.elapsedS > 0) info.ratePerS = done / info.elapsedS;
  if (processed !== null && info.total !== null) {
    const remaining = Math.max(0, info.total - processed);
    if (remaining === 0) info.etaS = 0;
    else if (info.ratePerS !== null && info.ratePerS > 0) info.etaS = remaining / info.ratePerS;
  }
  return info;
}

// ---------------------------------------------------------------------------------------------------------

interface DoneIndicesInfo {
  /** distinct valid indices */
  count: number;
  highest: number | null;
  lowest: number | null;
  /** indices missing between lowest and highest */
  gaps: number;
  /** the first (lowest) missing ranges, inclusive, at most 10 */
  firstGaps: Array<[number, number]>;
  /** entries that are not non-negative integers (a truncated last entry counts here too) */
  invalidLines: number;
  /** valid entries that repeated an index already seen */
  duplicates: number;
}

const MAX_FIRST_GAPS = 10;

/**
 * Parse a done-indices file: integers separated by newlines, commas, spaces/tabs, optionally wrapped as a
 * JSON array (quotes around numbers are tolerated). Blank entries are ignored; anything else that is not a
 * non-negative integer is counted in invalidLines. Linear tokenising into a Float64Array, then a numeric
 * typed-array sort: 1,000,000 entries take well under a second.
 */
export function parseDoneIndices(text: string): DoneIndicesInfo {
  const out: DoneIndicesInfo = { count: 0, highest: null, lowest: null, gaps: 0, firstGaps: [], invalidLines: 0, duplicates: 0 };
  if (typeof text !== 'string' || text.length === 0) return out;
  let vals = new Float64Array(1024);
  let n = 0;
  let invalid = 0;
  const len = text.length;
  let i = 0;
  while (i < len) {
    // skip separators
    let c = text.charCodeAt(i);
    while (i < len && isSep(c)) c = text.charCodeAt(++i);
    if (i >= len) break;
    // token
    let v = 0;
    let digits = 0;
    let bad = false;
    while (i < len && !isSep(c)) {
      if (c >= 48 && c <= 57 && !bad) {
        v = v * 10 + (c - 48);
        digits++;
      } else bad = true;
      c = text.charCodeAt(++i);
    }
    if (bad || digits === 0 || digits > 15) {
      invalid++;
      continue;
    }
    if (n === vals.length) {
      const bigger = new Float64Array(vals.length * 2);
      bigger.set(vals);
      vals = bigger;
    }
    vals[n++] = v;
  }
  out.invalidLines = invalid;
  if (n === 0) return out;
  const sorted = vals.subarray(0, n).sort();
  let count = 0;
  let dups = 0;
  let gaps = 0;
  let prev = -1;
  for (let k = 0; k < n; k++) {
    const x = sorted[k];
    if (k > 0 && x === prev) {
      dups++;
      continue;
    }
    if (k > 0 && x > prev + 1) {
      gaps += x - prev - 1;
      if (out.firstGaps.length < MAX_FIRST_GAPS) out.firstGaps.push([prev + 1, x - 1]);
    }
    count++;
    prev = x;
  }
  out.count = count;
  out.duplicates = dups;
  out.gaps = gaps;
  out.lowest = sorted[0];
  out.highest = sorted[n - 1];
  return out;
}

function isSep(c: number): boolean {
  // whitespace (incl. \r \n \t), ',', '[', ']', '"', ';'
  return c === 32 || c === 10 || c === 13 || c === 9 || c === 44 || c === 91 || c === 93 || c === 34 || c === 59 || c === 0xfeff;
}
