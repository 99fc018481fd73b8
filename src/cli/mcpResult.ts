/**
 * The shape of every MCP tool result (#24): redacted (util/redact), node text made inert (C0/C1 and bidi
 * controls escaped in structuredContent as in content), and bounded in bytes: the largest arrays and
 * strings are cut until the JSON fits, with `truncated: true` and what was cut.
 */
import { redactAfterCut, redactOutputValue } from '../core/util/redact';
import { visible } from '../core/util/terminal';

/** A tool result's JSON is at most this many bytes. */
export const MCP_RESULT_MAX_BYTES = 1024 * 1024;
/** Any one string in a result is at most this many characters. */
const MAX_STRING = 64 * 1024;

/** Every string with its controls escaped (newlines and tabs kept), cut at MAX_STRING. */
function inert(v: unknown, cut: string[], at: string, depth = 0): unknown {
  if (depth > 64) return null;
  if (typeof v === 'string') {
    const s = visible(v, true);
    if (s.length <= MAX_STRING) return s;
    cut.push(`${at} (string of ${s.length} chars)`);
    return s.slice(0, MAX_STRING) + ' … [cut]';
  }
  if (Array.isArray(v)) return v.map((x, i) => inert(x, cut, `${at}[${i}]`, depth + 1));
  if (v && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) o[visible(k)] = inert(x, cut, at ? `${at}.${k}` : k, depth + 1);
    return o;
  }
  return v;
}

/** Roughly the JSON size of a value (string lengths plus a little per value): cheap, for the first cut. */
function approxSize(v: unknown, depth = 0): number {
  if (typeof v === 'string') return v.length + 3;
  if (depth > 64 || !v || typeof v !== 'object') return 8;
  let n = 2;
  if (Array.isArray(v)) for (const x of v) n += approxSize(x, depth + 1) + 1;
  else for (const [k, x] of Object.entries(v)) n += k.length + 4 + approxSize(x, depth + 1);
  return n;
}

/** Strings cut at MAX_STRING before anything costly runs on them. */
function cutStrings(v: unknown, cut: string[], at: string, depth = 0): unknown {
  if (typeof v === 'string') {
    if (v.length <= MAX_STRING) return v;
    cut.push(`${at} (string of ${v.length} chars)`);
    return v.slice(0, MAX_STRING) + ' … [cut]';
  }
  if (depth > 64 || !v || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map((x, i) => cutStrings(x, cut, `${at}[${i}]`, depth + 1));
  const o: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) o[k] = cutStrings(x, cut, at ? `${at}.${k}` : k, depth + 1);
  return o;
}

interface Found {
  arr: unknown[];
  at: string;
  size: number;
}

/** The largest array in the value (by size), with its path: the first to cut. */
function largestArray(v: unknown, at: string, size: (x: unknown) => number, best: Found | null = null, depth = 0): Found | null {
  if (depth > 64 || !v || typeof v !== 'object') return best;
  if (Array.isArray(v)) {
    const n = size(v);
    if (v.length > 0 && (!best || n > best.size)) best = { arr: v, at, size: n };
    v.forEach((x, i) => {
      if (x && typeof x === 'object') best = largestArray(x, `${at}[${i}]`, size, best, depth + 1);
    });
    return best;
  }
  for (const [k, x] of Object.entries(v)) best = largestArray(x, at ? `${at}.${k}` : k, size, best, depth + 1);
  return best;
}

/** Shortens arrays until size(v) <= max: lines (keepEnd) keep their end, other lists their start. */
function fit(v: unknown, max: number, size: (x: unknown) => number, keepEnd: string[], cut: string[]): void {
  let total = size(v);
  for (let guard = 0; total > max && guard < 200; guard++) {
    const big = largestArray(v, '', size);
    if (!big) break;
    const n = big.arr.length;
    const keep = Math.max(0, Math.min(n - 1, Math.floor(n * Math.min(0.9, (max / total) * 0.95))));
    const removed = n - keep;
    const fromEnd = keepEnd.some((k) => big.at === k || big.at.endsWith(`.${k}`));
    if (fromEnd) {
      const dropped = big.arr.splice(0, removed);
      // A cut inside a private key block must not leave its body lines without their BEGIN line.
      if (dropped.every((x) => typeof x === 'string'))
        big.arr.splice(0, big.arr.length, ...redactAfterCut(dropped as string[], big.arr as string[]));
    } else big.arr.splice(keep, removed);
    cut.push(`${big.at} (${removed} of ${n} ${fromEnd ? 'first' : 'last'} entries dropped)`);
    total = size(v);
  }
}

/**
 * The value, redacted, inert and at most `maxBytes` of JSON: arrays are shortened (lines keep their end,
 * other lists their start) until it fits. Adds `truncated` (always) and `truncatedFields` when something was cut.
 */
export function boundedResult(value: Record<string, unknown>, maxBytes = MCP_RESULT_MAX_BYTES, keepEnd: string[] = ['lines']) {
  const cut: string[] = [];
  // First cut cheaply, so that redaction and escaping run on at most about maxBytes.
  const pre = cutStrings(value, cut, '') as Record<string, unknown>;
  fit(pre, maxBytes, (x) => approxSize(x), keepEnd, cut);
  const v = inert(redactOutputValue(pre), cut, '') as Record<string, unknown>;
  // Escapes can lengthen strings: the exact bound, on JSON as sent (the note fields need a little room).
  fit(v, maxBytes - 4096, (x) => JSON.stringify(x).length, keepEnd, cut);
  const out: Record<string, unknown> = { ...v, truncated: cut.length > 0 || v.truncated === true };
  if (cut.length) out.truncatedFields = [...new Set(cut)].slice(0, 20);
  return out;
}
