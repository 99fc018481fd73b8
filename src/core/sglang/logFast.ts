// A byte-level fast path for `parse-log --summary`: the scheduler stat lines of current SGLang versions in
// their canonical shape ("[YYYY-MM-DD HH:MM:SS DP0 TP0] Decode batch, #running-req: 31, ..., ") are parsed
// straight from the read buffer — no UTF-8 decoding, no line strings, no generic key/value scan. Every other
// line (and any stat line that deviates in the slightest: ANSI colours, wrappers, unknown keys, odd values,
// CR, non-ASCII, KV pressure, very long lines) goes to the full parser (logLines.ts) unchanged, through the
// same LogSummarizer, so the summary is exactly the one the full parser gives (a unit test compares them on
// the fixtures and on generated logs, whole summaries and record by record).
//
// This module must not import `vscode`.
import {
  KNOWN_KEYS,
  LogSummarizer,
  LogSummarizerOptions,
  LogSummary,
  RankAcc,
  STAT_SLOTS,
  StatRecord,
  newStatRecord,
  rankLabel,
} from './logLines';

const { gen: S_GEN, running: S_RUNNING, queue: S_QUEUE, tokenUsage: S_TOKEN_USAGE, acceptLen: S_ACCEPT_LEN, graph: S_GRAPH } = STAT_SLOTS;

/** The keys of the canonical lines (their slots come from the full parser's table). Anything else: full parser. */
const FAST_KEYS = [
  '#running-req',
  '#token',
  'token usage',
  'accept len',
  'accept rate',
  'cuda graph',
  'gen throughput (token/s)',
  '#queue-req',
  '#new-seq',
  '#new-token',
  '#cached-token',
  'input throughput (token/s)',
];
/** Keys of the canonical 2026 lines that the summary does not read: their number is checked and skipped (the
 *  full parser keeps it in `extra`, which no summary field reads). Prefill lines print `#pending-token` since
 *  2026 (metrics_reporter.py). */
const SKIP_KEYS = ['#pending-token'];
/** The field of a skipped key (no slot). */
const SKIPPED = -2;
const SLOT_OF = new Map(KNOWN_KEYS);
const KEYS: Array<[string, number]> = [
  ...FAST_KEYS.map((k): [string, number] => {
    const slot = SLOT_OF.get(k);
    if (slot === undefined) throw new Error(`logFast: ${k} is not a known stat key`);
    return [k, slot];
  }),
  ...SKIP_KEYS.map((k): [string, number] => [k, SKIPPED]),
];
const KEY_BYTES: Uint8Array[] = [];
const KEY_FIELDS: number[] = [];
/** Key indexes by their first byte: a key is matched in place (followed by ": "), never scanned for or sliced. */
const KEYS_BY_FIRST: number[][] = Array.from({ length: 128 }, () => []);
for (const [k, f] of KEYS) {
  KEY_BYTES.push(Uint8Array.from(Buffer.from(k, 'latin1')));
  KEY_FIELDS.push(f);
  KEYS_BY_FIRST[k.charCodeAt(0)].push(KEY_BYTES.length - 1);
}

const DECODE = Uint8Array.from(Buffer.from('Decode batch, ', 'latin1'));
const PREFILL = Uint8Array.from(Buffer.from('Prefill batch, ', 'latin1'));
const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
const TWO_DIGITS = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));
const TAGS: Record<string, string> = { DP: 'dp', TP: 'tp', PP: 'pp', EP: 'ep' };

function digit(c: number): boolean {
  return c >= 48 && c <= 57;
}

/** The little-endian 4-byte word at b[at] (as DataView.getInt32(at, true) reads it). */
function wordAt(b: Uint8Array, at: number): number {
  return b[at] | (b[at + 1] << 8) | (b[at + 2] << 16) | (b[at + 3] << 24);
}

/** Whether b[at, at + 17) is the 4 words and byte of w. */
function eqWords(b: Uint8Array, at: number, w: Int32Array): boolean {
  for (let i = 0; i < 4; i++) if (wordAt(b, at + 4 * i) !== w[i]) return false;
  return b[at + 16] === w[4];
}

function eqBytes(b: Uint8Array, at: number, k: Uint8Array): boolean {
  for (let i = 0; i < k.length; i++) if (b[at + i] !== k[i]) return false;
  return true;
}

/** Whether b[d, d + 19) is "YYYY-MM-DD HH:MM:SS". */
function timeOk(b: Uint8Array, d: number): boolean {
  for (let i = 0; i < 19; i++) {
    const c = b[d + i];
    if (i === 4 || i === 7) {
      if (c !== 45) return false;
    } else if (i === 10) {
      if (c !== 32) return false;
    } else if (i === 13 || i === 16) {
      if (c !== 58) return false;
    } else if (!digit(c)) return false;
  }
  return true;
}

/** The tags of one rank-tag byte string, and that rank's totals in the summarizer the parser serves. */
interface RankEntry {
  bytes: Uint8Array;
  tags: { ranks: Record<string, number>; label: string } | null;
  /** Filled by FastLogSummarizer on the first line it counts for the rank. */
  acc: RankAcc | null;
}

/**
 * The body of a stat line the careful parser took ("Decode batch, #running-req: 31, ..., "), learned as its
 * bytes with a number slot wherever a number stood. A later line whose body has the same bytes, a number
 * (same rule) at each slot and "\n" right after, is the same shape: the careful parser would take it too and
 * read the same fields from the same slots, so it is taken in one pass with no key matching at all.
 */
interface Template {
  /**
   * Per segment: [length, words, slot]: a literal run of `length` bytes, as `words` 4-byte little-endian words
   * (in `words`; the last one ends at the run's end) or, when shorter than 4, as bytes (in `bytes`); then a
   * number read into its slot (slot -1: none, the last segment).
   */
  segs: Int32Array;
  words: Int32Array;
  bytes: Uint8Array;
  decode: boolean;
  /** the slot of each summary field (the last one, as the careful parser keeps the last value), or -1 */
  gen: number;
  acceptLen: number;
  running: number;
  queue: number;
  tokenUsage: number;
}

const MAX_TEMPLATES = 16;
const RANK_CACHE = 256;
const MAX_SLOTS = 64;

/** Caches of the fast path (the rank-tag part, the timestamp and the line shapes repeat from line to line). */
export class FastStatParser {
  /** Longest line taken (its bytes, without the newline); a longer one is left to the full splitter. */
  maxLineBytes = 4096;
  /** Rank-tag bytes (by hash, checked byte for byte) → ranks and label, or null when left to the full parser. */
  private readonly ranks = new Map<number, RankEntry>();
  /** The same entries, direct-mapped by hash (a hit costs no Map lookup). */
  private readonly rankCache: Array<RankEntry | undefined> = new Array(RANK_CACHE).fill(undefined);
  private readonly noTags: RankEntry = { bytes: new Uint8Array(0), tags: { ranks: {}, label: '' }, acc: null };
  /** The last "YYYY-MM-DD HH:MM:" as four little-endian words and a byte. */
  private readonly lastPrefixWords = new Int32Array(5);
  private lastPrefixOk = false;
  private lastPrefix = '';
  /** The "YYYY-MM-DD HH:MM:SS" strings under lastPrefix, by seconds (made once each). */
  private secs: Array<string | undefined> = [];
  private readonly templates: Template[] = [];
  private mru = 0;
  /** Number spans [start, end, field] of the line parse() is reading. */
  private readonly spans: number[] = [];
  /** What match() read from the line it took. */
  /** Each number as its digits (an integer) and its count of decimals: divided only when read (value()). */
  private readonly digitsOf = new Float64Array(MAX_SLOTS);
  private readonly decimalsOf = new Uint8Array(MAX_SLOTS);
  matched: { rank: RankEntry; time: string; template: Template } = { rank: this.noTags, time: '', template: null! };

  /**
   * The summary fields (kind, time, ranks, rank, running/queued requests, token usage, accept length, gen
   * throughput; the others stay null) of the stat line b[a, e) (e = index of its "\n" or the end) when it has the canonical shape,
   * else null. Never throws; bounded (a line longer than 4 KiB is not taken). A line it takes teaches match() its shape.
   */
  parse(b: Buffer, a: number, e: number): StatRecord | null {
    if (e - a > this.maxLineBytes || e - a < 36 || b[a] !== 91 /* [ */) return null;
    // [YYYY-MM-DD HH:MM:SS
    const d = a + 1;
    if (!timeOk(b, d)) return null;
    let j = this.timeEnd(b, d + 19, e);
    if (j < 0) return null;
    const timeEnd = j;
    // rank tags: " DP0 TP0"
    const tagStart = j;
    j = tagsEnd(b, j, e);
    if (j < 0) return null;
    const tagEnd = j;
    j += 2;
    const bodyStart = j;
    let kind: 'decode' | 'prefill';
    if (eqBytes(b, j, DECODE)) {
      kind = 'decode';
      j += DECODE.length;
    } else if (eqBytes(b, j, PREFILL)) {
      kind = 'prefill';
      j += PREFILL.length;
    } else return null;
    const rec = newStatRecord(kind);
    const spans = this.spans;
    spans.length = 0;
    let pairs = 0;
    while (j < e) {
      // a known key followed by ": "
      const c0 = b[j];
      if (c0 >= 128) return null;
      const cands = KEYS_BY_FIRST[c0];
      let field = -1;
      for (let q = 0; q < cands.length; q++) {
        const kb = KEY_BYTES[cands[q]];
        const at = j + kb.length;
        if (at + 1 < e && b[at] === 58 && b[at + 1] === 32 && eqBytes(b, j, kb)) {
          field = KEY_FIELDS[cands[q]];
          j = at + 2;
          break;
        }
      }
      if (field === -1) return null;
      const va = j;
      if (field === S_GRAPH) {
        if (b[j] === 84 && b[j + 1] === 114 && b[j + 2] === 117 && b[j + 3] === 101) j += 4;
        else if (b[j] === 70 && b[j + 1] === 97 && b[j + 2] === 108 && b[j + 3] === 115 && b[j + 4] === 101) j += 5;
        else return null;
      } else {
        j = this.number(b, j, spans.length / 3);
        if (j < 0) return null;
        spans.push(va, j, field);
        const x = this.value(spans.length / 3 - 1);
        // Only what the summary reads is stored (each stored double is an allocation); the other known keys are
        // validated and skipped, and left null in the record.
        switch (field) {
          case S_RUNNING:
            rec.runningReqs = x;
            break;
          case S_TOKEN_USAGE:
            rec.tokenUsage = x;
            break;
          case S_ACCEPT_LEN:
            rec.acceptLen = x;
            break;
          case S_GEN:
            rec.genThroughput = x;
            break;
          case S_QUEUE:
            rec.queueReqs = x;
            break;
        }
      }
      pairs++;
      // ", " then the next pair (or the end: a trailing ", " / ","), or the end of the line
      if (j === e) break;
      if (b[j] !== 44) return null;
      if (j + 1 === e) break;
      if (b[j + 1] !== 32) return null;
      j += 2;
    }
    if (pairs === 0) return null;
    // KV pressure (a pool printed as full) is judged by the full parser.
    if (rec.tokenUsage !== null && rec.tokenUsage >= 0.995) return null;
    const r = this.rankAt(b, tagStart, tagEnd);
    if (r === null || r.tags === null) return null;
    rec.ranks = r.tags.ranks;
    rec.rank = r.tags.label;
    rec.time = this.timeString(b, d, timeEnd);
    this.learn(b, bodyStart, e, kind === 'decode');
    return rec;
  }

  /**
   * The end (index of its "\n") of the stat line starting at b[a] when its body has the shape of a line parse()
   * took before, its header (time, rank tags) is canonical and it is not under KV pressure; else -1 (and
   * nothing changes but caches). What it read is left in `matched` and its numbers' slots (value()). Reads nothing past the line's
   * "\n" (every check stops at the first byte that fails it), so b must hold a "\n" at or after a.
   */
  match(b: Buffer, dv: DataView, a: number, last: number): number {
    if (b[a] !== 91 /* [ */ || this.templates.length === 0 || a + 40 > last) return -1;
    const d = a + 1;
    // the time: "YYYY-MM-DD HH:MM:" as the last one (already checked), else checked in full
    const same = this.samePrefix(dv, d);
    if (same ? !digit(b[d + 17]) || !digit(b[d + 18]) : !timeOk(b, d)) return -1;
    const timeEnd = this.timeEnd(b, d + 19, last);
    if (timeEnd < 0) return -1;
    const tagEnd = tagsEnd(b, timeEnd, last);
    if (tagEnd < 0) return -1;
    const bodyStart = tagEnd + 2;
    const ts = this.templates;
    let k = this.mru;
    for (let n = 0; n < ts.length; n++, k = k + 1 === ts.length ? 0 : k + 1) {
      const t = ts[k];
      const e = this.body(t, b, dv, bodyStart, last);
      if (e < 0 || e - a > this.maxLineBytes || e - a < 36) continue;
      if (t.tokenUsage >= 0 && this.value(t.tokenUsage) >= 0.995) return -1;
      const r = this.rankAt(b, timeEnd, tagEnd);
      if (r === null || r.tags === null) return -1;
      this.mru = k;
      const m = this.matched;
      m.rank = r;
      m.template = t;
      m.time = same && timeEnd === d + 19 ? this.second(b, d) : this.timeString(b, d, timeEnd);
      return e;
    }
    return -1;
  }

  /** The index of the "\n" ending a body of shape t at b[j] (at or before `last`), numbers read into their slots; else -1. */
  private body(t: Template, b: Buffer, dv: DataView, j: number, last: number): number {
    const { segs, words, bytes } = t;
    let w = 0;
    let y = 0;
    for (let s = 0; s < segs.length; s += 3) {
      const len = segs[s];
      const nw = segs[s + 1];
      if (j + len > last) return -1;
      if (nw > 0) {
        // whole words, the last one ending where the run ends (overlapping the one before)
        for (let i = 0; i < nw - 1; i++) if (dv.getInt32(j + 4 * i, true) !== words[w++]) return -1;
        if (dv.getInt32(j + len - 4, true) !== words[w++]) return -1;
      } else {
        for (let i = 0; i < len; i++) if (b[j + i] !== bytes[y++]) return -1;
      }
      j += len;
      const slot = segs[s + 2];
      if (slot >= 0) {
        j = this.number(b, j, slot);
        if (j < 0) return -1;
      }
    }
    return b[j] === 10 ? j : -1;
  }

  /**
   * A number at b[j]: digits with at most one '.', as the full parser reads them (integer ÷ power of ten),
   * stored in its slot; its end, or -1.
   */
  private number(b: Buffer, j: number, slot: number): number {
    let m = 0;
    let digits = 0;
    let frac = -1;
    for (; ; j++) {
      const c = b[j];
      if (c >= 48 && c <= 57) {
        if (++digits > 15) return -1;
        m = m * 10 + (c - 48);
        if (frac >= 0) frac++;
      } else if (c === 46 && frac < 0) frac = 0;
      else break;
    }
    if (digits === 0 || slot >= MAX_SLOTS) return -1;
    this.digitsOf[slot] = m;
    this.decimalsOf[slot] = frac > 0 ? frac : 0;
    return j;
  }

  /** The number read into slot (by match() or parse()), as the full parser reads it: integer ÷ power of ten. */
  value(slot: number): number {
    const f = this.decimalsOf[slot];
    return f > 0 ? this.digitsOf[slot] / POW10[f] : this.digitsOf[slot];
  }

  /** The number at slot, or null for slot -1. */
  field(slot: number): number | null {
    return slot >= 0 ? this.value(slot) : null;
  }

  /** After "YYYY-MM-DD HH:MM:SS" at b[j]: the end of an optional ".123" / ",123", or -1. */
  private timeEnd(b: Buffer, j: number, e: number): number {
    if (b[j] !== 46 && b[j] !== 44) return j;
    const f = ++j;
    while (j < e && digit(b[j])) j++;
    return j === f ? -1 : j;
  }

  /** Whether b[d, d + 17) is the cached "YYYY-MM-DD HH:MM:" (four words and a byte; b holds them). */
  private samePrefix(dv: DataView, d: number): boolean {
    const w = this.lastPrefixWords;
    return (
      this.lastPrefixOk &&
      dv.getInt32(d, true) === w[0] &&
      dv.getInt32(d + 4, true) === w[1] &&
      dv.getInt32(d + 8, true) === w[2] &&
      dv.getInt32(d + 12, true) === w[3] &&
      dv.getUint8(d + 16) === w[4]
    );
  }

  /** The time string of b[d, timeEnd): made once per minute and second, reused after. */
  private timeString(b: Buffer, d: number, timeEnd: number): string {
    if (timeEnd !== d + 19) return b.toString('latin1', d, timeEnd);
    const w = this.lastPrefixWords;
    if (!(this.lastPrefixOk && eqWords(b, d, w))) {
      for (let i = 0; i < 4; i++) w[i] = wordAt(b, d + 4 * i);
      w[4] = b[d + 16];
      this.lastPrefix = b.toString('latin1', d, d + 17);
      this.lastPrefixOk = true;
      this.secs = [];
    }
    return this.second(b, d);
  }

  /** The time string of b[d, d + 19), whose first 17 bytes are the cached prefix. */
  private second(b: Buffer, d: number): string {
    const s = (b[d + 17] - 48) * 10 + (b[d + 18] - 48);
    return (this.secs[s] ??= this.lastPrefix + TWO_DIGITS[s]);
  }

  /** The rank of the tag bytes b[tagStart, tagEnd) (" DP0 TP0"), or null when too long. */
  private rankAt(b: Buffer, tagStart: number, tagEnd: number): RankEntry | null {
    if (tagEnd === tagStart) return this.noTags;
    if (tagEnd - tagStart > 48) return null;
    let h = tagEnd - tagStart;
    for (let i = tagStart; i < tagEnd; i++) h = (Math.imul(h, 31) + b[i]) | 0;
    const slot = h & (RANK_CACHE - 1);
    let r = this.rankCache[slot];
    if (r !== undefined && r.bytes.length === tagEnd - tagStart && eqBytes(b, tagStart, r.bytes)) return r;
    r = this.ranks.get(h);
    if (r === undefined || r.bytes.length !== tagEnd - tagStart || !eqBytes(b, tagStart, r.bytes)) {
      const tags = parseTags(b.toString('latin1', tagStart, tagEnd));
      r = { bytes: Uint8Array.from(b.subarray(tagStart, tagEnd)), tags, acc: null };
      if (this.ranks.size < 4096) this.ranks.set(h, r);
    }
    this.rankCache[slot] = r;
    return r;
  }

  /** Remember the shape of the body b[a, e) parse() just took (its numbers are in spans). */
  private learn(b: Buffer, a: number, e: number, decode: boolean): void {
    const spans = this.spans;
    if (this.templates.length >= MAX_TEMPLATES || spans.length / 3 > MAX_SLOTS) return;
    const t: Template = {
      segs: new Int32Array(0),
      words: new Int32Array(0),
      bytes: new Uint8Array(0),
      decode,
      gen: -1,
      acceptLen: -1,
      running: -1,
      queue: -1,
      tokenUsage: -1,
    };
    const segs: number[] = [];
    const words: number[] = [];
    const bytes: number[] = [];
    let lit = a;
    for (let s = 0; ; s += 3) {
      const end = s < spans.length ? spans[s] : e;
      const len = end - lit;
      // as body() compares: runs of 4 bytes or more as words (the last one ending at the run's end), others bytewise
      const nw = len >= 4 ? (len + 3) >> 2 : 0;
      for (let i = 0; i < nw - 1; i++) words.push(wordAt(b, lit + 4 * i));
      if (nw > 0) words.push(wordAt(b, end - 4));
      else for (let j = lit; j < end; j++) bytes.push(b[j]);
      const slot = s < spans.length ? s / 3 : -1;
      segs.push(len, nw, slot);
      if (slot < 0) break;
      switch (spans[s + 2]) {
        case S_GEN:
          t.gen = slot;
          break;
        case S_ACCEPT_LEN:
          t.acceptLen = slot;
          break;
        case S_RUNNING:
          t.running = slot;
          break;
        case S_QUEUE:
          t.queue = slot;
          break;
        case S_TOKEN_USAGE:
          t.tokenUsage = slot;
          break;
      }
      lit = spans[s + 1];
    }
    const key = `${segs.join(',')}/${words.join(',')}/${bytes.join(',')}`;
    if (this.templates.some((x) => `${x.segs.join(',')}/${x.words.join(',')}/${x.bytes.join(',')}` === key)) return;
    t.segs = Int32Array.from(segs);
    t.words = Int32Array.from(words);
    t.bytes = Uint8Array.from(bytes);
    this.templates.push(t);
  }
}

/** After the time at b[j]: the index of the "]" ending canonical rank tags (" DP0 TP0"), which "] " follows; else -1. */
function tagsEnd(b: Buffer, j: number, e: number): number {
  while (b[j] === 32) {
    j++;
    if (!(b[j] >= 65 && b[j] <= 90 && b[j + 1] >= 65 && b[j + 1] <= 90)) return -1;
    j += 2;
    const f = j;
    while (j < e && digit(b[j])) j++;
    if (j === f || j - f > 6) return -1;
  }
  return b[j] === 93 /* ] */ && b[j + 1] === 32 ? j : -1;
}

/** " DP0 TP0" → ranks and label; null for tags the fast path leaves to the full parser (unknown, repeated). */
function parseTags(s: string): { ranks: Record<string, number>; label: string } | null {
  const ranks: Record<string, number> = {};
  for (const t of s.trim().split(' ')) {
    const k = TAGS[t.slice(0, 2)];
    if (!k || k in ranks) return null;
    const n = t.slice(2);
    if (n.length > 1 && n[0] === '0') return null;
    ranks[k] = Number(n);
  }
  return { ranks, label: rankLabel(ranks) };
}

/**
 * LogSummarizer with the fast path in front: same input (raw chunks), same summary. Lines the fast path does
 * not take are handed, bytes and all, to the full summarizer's own splitter (decoding, CR, truncation).
 */
export class FastLogSummarizer {
  private readonly sum: LogSummarizer;
  private readonly fast = new FastStatParser();
  /** The partial last line, in pieces (joined once, when its newline arrives). */
  private carry: Buffer[] = [];
  private carryBytes = 0;
  /** The full splitter holds a partial line: bytes go to it until the next newline. */
  private slowLine = false;
  /** Lines taken by the fast path (tests and benchmarks). */
  fastLines = 0;

  constructor(opts: LogSummarizerOptions = {}) {
    this.sum = new LogSummarizer(opts);
    this.fast.maxLineBytes = Math.min(this.fast.maxLineBytes, this.sum.maxLineBytes);
  }

  /** Count the line match() just took. */
  private took(): void {
    const m = this.fast.matched;
    const t = m.template;
    const f = this.fast;
    const r = m.rank;
    const tags = r.tags!;
    this.fastLines++;
    this.sum.addStatFields(
      r.acc ?? (r.acc = this.sum.rankAcc(tags.label, tags.ranks)),
      t.decode,
      m.time,
      f.field(t.gen),
      f.field(t.acceptLen),
      f.field(t.running),
      f.field(t.queue),
    );
  }

  private line(b: Buffer, a: number, nl: number): void {
    const st = this.fast.parse(b, a, nl);
    if (st) {
      this.fastLines++;
      this.sum.addClassified({ kind: st.kind, stat: st, message: '' });
    } else this.sum.addChunk(b.subarray(a, nl + 1));
  }

  /**
   * The complete lines of chunk from pos; returns where the partial last line starts. Up to the last newline
   * only, so no read runs past the chunk (which would cost V8's fast element access); a line of a shape seen
   * before is taken in one pass, its end found on the way; any other goes the careful way. (A method of its
   * own, so that this hot loop stays optimised whatever happens around it.)
   */
  private lines(chunk: Buffer, pos: number): number {
    const last = chunk.lastIndexOf(10);
    const dv = new DataView(chunk.buffer, chunk.byteOffset, chunk.length);
    while (pos <= last) {
      const e = this.fast.match(chunk, dv, pos, last);
      if (e >= 0) {
        this.took();
        pos = e + 1;
        continue;
      }
      const nl = chunk.indexOf(10, pos);
      this.line(chunk, pos, nl);
      pos = nl + 1;
    }
    return pos;
  }

  private takeCarry(): Buffer | null {
    if (this.carry.length === 0) return null;
    const b = this.carry.length === 1 ? this.carry[0] : Buffer.concat(this.carry, this.carryBytes);
    this.carry = [];
    this.carryBytes = 0;
    return b;
  }

  /** Feed raw bytes or text. No reference to chunk is kept once this returns: the caller may reuse its buffer. */
  addChunk(chunk: Buffer | string): void {
    if (typeof chunk === 'string') {
      const c = this.takeCarry();
      if (c) this.sum.addChunk(c);
      this.sum.addChunk(chunk);
      this.slowLine = chunk.length > 0 ? !chunk.endsWith('\n') : this.slowLine;
      return;
    }
    let pos = 0;
    if (this.slowLine) {
      const nl = chunk.indexOf(10);
      if (nl < 0) return void this.sum.addChunk(chunk);
      this.sum.addChunk(chunk.subarray(0, nl + 1));
      this.slowLine = false;
      pos = nl + 1;
    }
    if (this.carryBytes > 0) {
      const nl = chunk.indexOf(10, pos);
      if (nl < 0) {
        this.carry.push(Buffer.from(chunk.subarray(pos)));
        this.carryBytes += chunk.length - pos;
        if (this.carryBytes > 65536) {
          this.sum.addChunk(this.takeCarry()!);
          this.slowLine = true;
        }
        return;
      }
      this.carry.push(chunk.subarray(pos, nl + 1));
      this.carryBytes += nl + 1 - pos;
      const joined = this.takeCarry()!;
      this.line(joined, 0, joined.length - 1);
      pos = nl + 1;
    }
    pos = this.lines(chunk, pos);
    if (pos < chunk.length) {
      if (chunk.length - pos > 65536) {
        this.sum.addChunk(chunk.subarray(pos));
        this.slowLine = true;
      } else {
        this.carry.push(Buffer.from(chunk.subarray(pos)));
        this.carryBytes = chunk.length - pos;
      }
    }
  }

  end(): void {
    const c = this.takeCarry();
    if (c) this.sum.addChunk(c);
    this.sum.end();
  }

  summary(): LogSummary {
    return this.sum.summary();
  }
}
