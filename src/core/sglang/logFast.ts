// A byte-level fast path for `parse-log --summary`: the scheduler stat lines of current SGLang versions in
// their canonical shape ("[YYYY-MM-DD HH:MM:SS DP0 TP0] Decode batch, #running-req: 31, ..., ") are parsed
// straight from the read buffer — no UTF-8 decoding, no line strings, no generic key/value scan. Every other
// line (and any stat line that deviates in the slightest: ANSI colours, wrappers, unknown keys, odd values,
// CR, non-ASCII, KV pressure, very long lines) goes to the full parser (logLines.ts) unchanged, through the
// same LogSummarizer, so the summary is exactly the one the full parser gives (a unit test compares them on
// the fixtures and on generated logs, whole summaries and record by record).
//
// This module must not import `vscode`.
import { KNOWN_KEYS, LogSummarizer, LogSummarizerOptions, LogSummary, STAT_SLOTS, StatRecord, newStatRecord, rankLabel } from './logLines';

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
const SLOT_OF = new Map(KNOWN_KEYS);
const KEYS: Array<[string, number]> = FAST_KEYS.map((k) => {
  const slot = SLOT_OF.get(k);
  if (slot === undefined) throw new Error(`logFast: ${k} is not a known stat key`);
  return [k, slot];
});
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

function eqBytes(b: Uint8Array, at: number, k: Uint8Array): boolean {
  for (let i = 0; i < k.length; i++) if (b[at + i] !== k[i]) return false;
  return true;
}

/** Caches of the fast path (the rank-tag part and the last timestamp repeat from line to line). */
export class FastStatParser {
  /** Rank-tag bytes (by hash, checked byte for byte) → ranks and label, or null when left to the full parser. */
  private readonly ranks = new Map<number, { bytes: Uint8Array; tags: { ranks: Record<string, number>; label: string } | null }>();
  private lastTimeBytes = new Uint8Array(32);
  private lastPrefixOk = false;
  private lastPrefix = '';

  /**
   * The summary fields (kind, time, ranks, rank, running/queued requests, token usage, accept length, gen
   * throughput; the others stay null) of the stat line b[a, e) (e = index of its "\n" or the end) when it has the canonical shape,
   * else null. Never throws; bounded (a line longer than 4 KiB is not taken).
   */
  parse(b: Buffer, a: number, e: number): StatRecord | null {
    if (e - a > 4096 || e - a < 36 || b[a] !== 91 /* [ */) return null;
    // [YYYY-MM-DD HH:MM:SS
    const d = a + 1;
    for (let i = 0; i < 19; i++) {
      const c = b[d + i];
      if (i === 4 || i === 7) {
        if (c !== 45) return null;
      } else if (i === 10) {
        if (c !== 32) return null;
      } else if (i === 13 || i === 16) {
        if (c !== 58) return null;
      } else if (!digit(c)) return null;
    }
    let j = d + 19;
    if (b[j] === 46 || b[j] === 44) {
      j++;
      const f = j;
      while (j < e && digit(b[j])) j++;
      if (j === f) return null;
    }
    const timeEnd = j;
    // rank tags: " DP0 TP0"
    const tagStart = j;
    while (b[j] === 32) {
      j++;
      if (!(b[j] >= 65 && b[j] <= 90 && b[j + 1] >= 65 && b[j + 1] <= 90)) return null;
      j += 2;
      const f = j;
      while (j < e && digit(b[j])) j++;
      if (j === f || j - f > 6) return null;
    }
    if (b[j] !== 93 /* ] */ || b[j + 1] !== 32) return null;
    const tagEnd = j;
    j += 2;
    let kind: 'decode' | 'prefill';
    if (eqBytes(b, j, DECODE)) {
      kind = 'decode';
      j += DECODE.length;
    } else if (eqBytes(b, j, PREFILL)) {
      kind = 'prefill';
      j += PREFILL.length;
    } else return null;
    const rec = newStatRecord(kind);
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
      if (field < 0) return null;
      const va = j;
      if (field === S_GRAPH) {
        if (b[j] === 84 && b[j + 1] === 114 && b[j + 2] === 117 && b[j + 3] === 101) j += 4;
        else if (b[j] === 70 && b[j + 1] === 97 && b[j + 2] === 108 && b[j + 3] === 115 && b[j + 4] === 101) j += 5;
        else return null;
      } else {
        // digits with at most one '.', as the full parser reads them (integer ÷ power of ten)
        let m = 0;
        let digits = 0;
        let frac = -1;
        for (; j < e; j++) {
          const c = b[j];
          if (c >= 48 && c <= 57) {
            m = m * 10 + (c - 48);
            digits++;
            if (frac >= 0) frac++;
          } else if (c === 46 && frac < 0) frac = 0;
          else break;
        }
        if (digits === 0 || digits > 15 || j === va) return null;
        const x = frac > 0 ? m / POW10[frac] : m;
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
    // time (reused while it repeats)
    // time: "YYYY-MM-DD HH:MM:" is cached, the seconds come from a table (a cheap cons string, no copy)
    const lt = this.lastTimeBytes;
    let same = this.lastPrefixOk;
    for (let i = 16; same && i >= 0; i--) if (b[d + i] !== lt[i]) same = false;
    if (!same) {
      for (let i = 0; i < 17; i++) lt[i] = b[d + i];
      this.lastPrefix = b.toString('latin1', d, d + 17);
      this.lastPrefixOk = true;
    }
    rec.time =
      timeEnd === d + 19 ? this.lastPrefix + TWO_DIGITS[(b[d + 17] - 48) * 10 + (b[d + 18] - 48)] : b.toString('latin1', d, timeEnd);
    if (tagEnd > tagStart) {
      if (tagEnd - tagStart > 48) return null;
      let h = tagEnd - tagStart;
      for (let i = tagStart; i < tagEnd; i++) h = (Math.imul(h, 31) + b[i]) | 0;
      let r = this.ranks.get(h);
      if (r === undefined || r.bytes.length !== tagEnd - tagStart || !eqBytes(b, tagStart, r.bytes)) {
        const tags = parseTags(b.toString('latin1', tagStart, tagEnd));
        r = { bytes: Uint8Array.from(b.subarray(tagStart, tagEnd)), tags };
        if (this.ranks.size < 4096) this.ranks.set(h, r);
      }
      if (r.tags === null) return null;
      rec.ranks = r.tags.ranks;
      rec.rank = r.tags.label;
    }
    return rec;
  }
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
  }

  private line(b: Buffer, a: number, nl: number): void {
    const st = this.fast.parse(b, a, nl);
    if (st) {
      this.fastLines++;
      this.sum.addClassified({ kind: st.kind, stat: st, message: '' });
    } else this.sum.addChunk(b.subarray(a, nl + 1));
  }

  private takeCarry(): Buffer | null {
    if (this.carry.length === 0) return null;
    const b = this.carry.length === 1 ? this.carry[0] : Buffer.concat(this.carry, this.carryBytes);
    this.carry = [];
    this.carryBytes = 0;
    return b;
  }

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
    for (;;) {
      const nl = chunk.indexOf(10, pos);
      if (nl < 0) break;
      this.line(chunk, pos, nl);
      pos = nl + 1;
    }
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
