/**
 * Reads of a node's files bounded on both sides (#24): on the node, only a regular file is read (a device,
 * FIFO or socket is refused before any read), at most a fixed number of bytes from its end (`tail -c`, which
 * seeks), each line cut at LINE_CUT bytes (`cut -b`, which streams) and the whole output bounded again
 * (`tail -c` of a pipe keeps only that many bytes); here, the cut lines are marked.
 */
import type { ExecResult } from '../ssh/transport';
import type { RemoteOperation } from './operation';
import { shq } from '../util/quote';

/** Bytes kept of one line (follow mode cuts at the same length). */
export const LINE_CUT = 64 * 1024;
/** Exit status of the read when the path is not a regular file. */
const EXIT_NOT_REGULAR = 65;
export const CUT_MARK = ' … [line cut at 64 KiB]';

interface BoundedReadOptions {
  /** The last `lines` lines. */
  lines: number;
  /** At most this many bytes of output (default: lines × (LINE_CUT + 1)). */
  maxBytes?: number;
  /** Print the file's resolved path (readlink -f) on the first line, for a check of where it really is. */
  resolve?: boolean;
}

const MAX_OUTPUT = 64 * 1024 * 1024;

function outputBound(o: BoundedReadOptions): number {
  return Math.max(1, Math.floor(o.maxBytes ?? Math.min(MAX_OUTPUT, Math.max(1, o.lines) * (LINE_CUT + 2))));
}

/** The POSIX sh command of a bounded last-lines read of one file. */
export function boundedTailCommand(file: string, o: BoundedReadOptions): string {
  const lines = Math.max(1, Math.floor(o.lines));
  const perFile = lines * (LINE_CUT + 2); // what the last `lines` cut lines can need, read from the end
  const out = outputBound(o);
  const q = shq(file.startsWith('-') ? `./${file}` : file);
  const L = ['LC_ALL=C; export LC_ALL', `f=${q}`];
  if (o.resolve) L.push('r=$(readlink -f -- "$f" 2>/dev/null) || r=; [ -n "$r" ] && f=$r');
  L.push(
    `if [ -e "$f" ] && [ ! -f "$f" ]; then printf 'gpu-sessions: %s is not a regular file (a device, FIFO or folder ` +
      `is never read)\\n' "$f" >&2; exit ${EXIT_NOT_REGULAR}; fi`,
    // missing or unreadable: tail says so in its own words, with its own status (a pipeline would hide it)
    `if [ ! -f "$f" ] || [ ! -r "$f" ]; then exec tail -c 1 -- "$f" >/dev/null; fi`,
  );
  if (o.resolve) L.push(`printf '%s\\n' "$f"`);
  L.push(`tail -c ${perFile} -- "$f" | tail -n ${lines} | cut -b 1-${LINE_CUT + 1} | tail -c ${out}`);
  return L.join('\n') + '\n';
}

/** Lines longer than LINE_CUT (cut -b kept one byte more to tell) are cut and marked; the count of cut lines. */
export function markCutLines(buf: Buffer): { text: string; cutLines: number } {
  if (buf.length <= LINE_CUT) return { text: buf.toString('utf8'), cutLines: 0 };
  let cutLines = 0;
  const parts: string[] = [];
  let start = 0;
  while (start < buf.length) {
    let nl = buf.indexOf(0x0a, start);
    if (nl < 0) nl = buf.length;
    if (nl - start > LINE_CUT) {
      cutLines++;
      parts.push(buf.subarray(start, start + LINE_CUT).toString('utf8') + CUT_MARK);
    } else parts.push(buf.subarray(start, nl).toString('utf8'));
    start = nl + 1;
  }
  const text = parts.join('\n') + (buf[buf.length - 1] === 0x0a ? '\n' : '');
  return { text, cutLines };
}

/** ExecResult of a bounded read, with lines cut and marked, and how many were cut. */
interface BoundedReadResult extends ExecResult {
  text: string;
  cutLines: number;
  /** The first line when `resolve` was asked: the file's real path on the node. */
  resolved?: string;
}

/** The last lines of one regular file, bounded per line and in total (tail without --follow, Open Log, MCP). */
export function boundedTailOperation(file: string, o: BoundedReadOptions, timeoutMs = 120_000): RemoteOperation<BoundedReadResult> {
  const maxOut = outputBound(o);
  return {
    name: 'tail',
    command: boundedTailCommand(file, o),
    timeoutMs,
    maxOutputBytes: maxOut + 8192,
    acceptTruncated: true,
    parse: (r) => {
      let body = r.stdout;
      let resolved: string | undefined;
      if (o.resolve && r.code === 0) {
        const nl = body.indexOf(0x0a);
        resolved = body.subarray(0, nl < 0 ? body.length : nl).toString('utf8');
        body = nl < 0 ? Buffer.alloc(0) : body.subarray(nl + 1);
      }
      const { text, cutLines } = markCutLines(body);
      return { ...r, stdout: Buffer.from(text, 'utf8'), text, cutLines, resolved, truncated: r.truncated || body.length >= maxOut };
    },
  };
}
