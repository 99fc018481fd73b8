/**
 * `gpu-sessions parse-log [FILE...] [--json | --summary]` — SGLang server logs, streamed (stdin when no FILE
 * or FILE is "-"). Nothing is held per line: a 1,000,000-line log runs in constant memory.
 *
 *   (default)         every line, prefixed by its kind: "decode   [2025-...] Decode batch, ..."
 *   --json            ONE JSON object per scheduler stat line (decode / prefill): logstats' toJsonRecord
 *                     (kind, time, rank, ranks, genThroughput, inputThroughput, runningReqs, queueReqs,
 *                     tokenUsage, acceptLen, acceptRate, cudaGraph, numTokens, newSeq, newTokens,
 *                     cachedTokens, cacheHitRate, extra) plus `file` (null for stdin) and `lineNo` (1-based);
 *                     and ONE object per error line: { kind: "error", time, rank, ranks, errorClass (crash | oom |
 *                     kv-pressure | hang | nccl | gpu | null), message, file, lineNo }
 *   --summary         per input: a table per rank (stat lines, last / mean / max gen throughput, mean accept
 *                     length, last running / queued requests), the error count and whether the server
 *                     became ready
 *   --summary --json  ONE JSON object: { "files": [ { file, totalLines, ready, errors, tracebacks,
 *                     lastError, errorClasses {crash, oom, kv-pressure, hang, nccl, gpu}, kvPressureStatLines,
 *                     kinds, truncatedLines, ranks: [RankSummary...] } ] }
 *
 * Exit status: 0, or 1 when an input could not be read (the others are still processed).
 */
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import {
  LineSplitter,
  LineKind,
  LogSummary,
  StatRecord,
  classifyLine,
  lineHeader,
  parseStatLine,
  stripAnsi,
  toJsonRecord,
} from '../core/sglang/logLines';
import { formatCount } from '../core/util/format';
import { FastLogSummarizer } from '../core/sglang/logFast';
import { summarizeFileParallel } from '../core/sglang/logParallel';
import type { CliIo } from './cliNode';

/** parse-log writes and reads stdin when no FILE is given. */
type ParseLogIo = Pick<CliIo, 'out' | 'err' | 'stdin'>;

interface ParseLogOptions {
  json: boolean;
  summary: boolean;
}

const FLUSH_AT = 64 * 1024;
const KIND_PREFIX: Record<LineKind, string> = {
  decode: 'decode    ',
  prefill: 'prefill   ',
  ready: 'ready     ',
  error: 'error     ',
  traceback: 'traceback ',
  access: 'access    ',
  startup: 'startup   ',
  other: 'other     ',
};

export async function cmdParseLog(files: string[], opts: ParseLogOptions, io: ParseLogIo): Promise<number> {
  const inputs = files.length ? files : ['-'];
  let rc = 0;
  let pending = '';
  const emit = (s: string) => {
    pending += s;
    if (pending.length >= FLUSH_AT) {
      io.out(pending);
      pending = '';
    }
  };
  const summaries: Array<{ file: string | null; summary: LogSummary }> = [];

  for (const input of inputs) {
    const isStdin = input === '-';
    const name = isStdin ? null : input;
    try {
      if (opts.summary) {
        // The byte-level fast path takes the canonical stat lines; the rest goes to the full parser. A file is
        // read into one reused buffer (the summarizer keeps no reference to a chunk), half the cost of a stream.
        // A large file: one piece per core, merged into the same summary (logParallel.ts).
        const whole = isStdin ? null : await summarizeFileParallel(input);
        if (whole) {
          summaries.push({ file: name, summary: whole });
          continue;
        }
        const sum = new FastLogSummarizer();
        const chunks = isStdin ? ((io.stdin ?? process.stdin) as AsyncIterable<Buffer | string>) : fileChunks(input);
        for await (const chunk of chunks) sum.addChunk(chunk);
        sum.end();
        summaries.push({ file: name, summary: sum.summary() });
        continue;
      }
      const src: NodeJS.ReadableStream = isStdin ? (io.stdin ?? process.stdin) : createReadStream(input, { highWaterMark: 1024 * 1024 });
      const splitter = new LineSplitter();
      let lineNo = 0;
      const handle = (lines: string[]) => {
        if (opts.json) {
          for (const line of lines) {
            lineNo++;
            const c = classifyLine(line);
            if (c.stat) emit(statJsonLine(c.stat, name, lineNo) + '\n');
            else if (c.kind === 'error') emit(errorJsonLine(line, c.message, c.errorClass ?? null, name, lineNo) + '\n');
          }
        } else {
          for (const line of lines) {
            lineNo++;
            const c = classifyLine(line);
            emit(KIND_PREFIX[c.kind] + stripAnsi(line) + '\n');
          }
        }
      };
      for await (const chunk of src as AsyncIterable<Buffer | string>) handle(splitter.push(chunk));
      handle(splitter.flush());
    } catch (e) {
      if (pending) {
        io.out(pending);
        pending = '';
      }
      io.err(`parse-log: cannot read ${name ?? 'stdin'}: ${(e as Error).message}\n`);
      rc = 1;
    }
  }
  if (pending) io.out(pending);

  if (opts.summary) {
    if (opts.json) {
      io.out(JSON.stringify({ files: summaries.map(({ file, summary }) => ({ file, ...summary })) }, null, 2) + '\n');
    } else {
      io.out(summaries.map(({ file, summary }) => formatSummary(file ?? '(stdin)', summary)).join('\n'));
    }
  }
  return rc;
}

/** The bytes of a file, 1 MiB at a time, in ONE reused buffer: each chunk is valid until the next is asked for. */
async function* fileChunks(file: string): AsyncGenerator<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(1024 * 1024);
    for (;;) {
      const { bytesRead } = await fh.read(buf, 0, buf.length, null);
      if (bytesRead === 0) return;
      yield buf.subarray(0, bytesRead);
    }
  } finally {
    await fh.close();
  }
}

// --json output: the keys of toJsonRecord (taken from the function itself, so they stay in sync), then
// file and lineNo. Serialised by hand: identical to JSON.stringify({...toJsonRecord(stat), file, lineNo})
// (a unit test checks it) and several times faster for a million records.
const JSON_KEYS = Object.keys(
  toJsonRecord(parseStatLine('[2026-01-01 00:00:00] Decode batch, #running-req: 1, gen throughput (token/s): 1.00, ')!),
);
const JSON_PREFIX = JSON_KEYS.map((k, i) => (i ? ',' : '{') + JSON.stringify(k) + ':');

function jsonValue(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  switch (typeof v) {
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    default:
      return JSON.stringify(v);
  }
}

/** One --json line (without the newline) for a stat record. */
export function statJsonLine(stat: StatRecord, file: string | null, lineNo: number): string {
  const r = toJsonRecord(stat) as unknown as Record<string, unknown>;
  let s = '';
  for (let i = 0; i < JSON_KEYS.length; i++) s += JSON_PREFIX[i] + jsonValue(r[JSON_KEYS[i]]);
  return s + ',"file":' + jsonValue(file) + ',"lineNo":' + lineNo + '}';
}

/** One --json line (without the newline) for an error line. */
function errorJsonLine(line: string, message: string, errorClass: string | null, file: string | null, lineNo: number): string {
  const h = lineHeader(line);
  return JSON.stringify({ kind: 'error', time: h.time, rank: h.rank, ranks: h.ranks, errorClass, message, file, lineNo });
}

const n0 = (x: number | null) => (x === null ? '—' : formatCount(x));
const n1 = (x: number | null) => (x === null ? '—' : x.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 }));
const n2 = (x: number | null) => (x === null ? '—' : x.toFixed(2));

/** Human summary of one log. */
function formatSummary(name: string, s: LogSummary): string {
  const L: string[] = [];
  const kinds = (Object.keys(s.kinds) as LineKind[]).filter((k) => s.kinds[k] > 0).map((k) => `${k} ${n0(s.kinds[k])}`);
  L.push(`${name}: ${n0(s.totalLines)} lines${kinds.length ? ` (${kinds.join(', ')})` : ''}`);
  const tracebacks = s.tracebacks ? ` · tracebacks: ${s.tracebacks}` : '';
  const truncated = s.truncatedLines ? ` · ${s.truncatedLines} over-long lines cut` : '';
  L.push(`  ready: ${s.ready ? 'yes' : 'no'} · errors: ${s.errors}${tracebacks}${truncated}`);
  const classes = Object.entries(s.errorClasses)
    .filter(([, n]) => n > 0)
    .map(([c, n]) => `${c} ${n0(n)}`);
  if (classes.length || s.kvPressureStatLines)
    L.push(
      `  failures: ${classes.join(', ') || 'none'}${s.kvPressureStatLines ? ` · ${n0(s.kvPressureStatLines)} stat lines under KV pressure` : ''}`,
    );
  if (s.lastError) L.push(`  last error: ${s.lastError.length > 200 ? s.lastError.slice(0, 200) + '…' : s.lastError}`);
  if (s.ranks.length === 0) {
    L.push('  no scheduler stat lines');
  } else {
    const rows: string[][] = [
      ['RANK', 'LINES', 'DECODE', 'PREFILL', 'LAST tok/s', 'MEAN tok/s', 'MAX tok/s', 'ACCEPT', 'RUN', 'QUEUE', 'LAST TIME'],
    ];
    for (const r of s.ranks) {
      rows.push([
        r.rank || '(all)',
        n0(r.lines),
        n0(r.decodeLines),
        n0(r.prefillLines),
        n1(r.lastGenThroughput),
        n1(r.meanGenThroughput),
        n1(r.maxGenThroughput),
        n2(r.meanAcceptLen),
        n0(r.lastRunningReqs),
        n0(r.lastQueueReqs),
        r.lastTime ?? '—',
      ]);
    }
    const w = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
    for (const r of rows)
      L.push(
        '  ' +
          r
            .map((cell, c) => (c === 0 || c === r.length - 1 ? cell.padEnd(w[c]) : cell.padStart(w[c])))
            .join('  ')
            .trimEnd(),
      );
  }
  return L.join('\n') + '\n';
}
