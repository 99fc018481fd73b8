/**
 * The data-quality check as ONE described operation: `python3 -` with the node script (data.py) and its
 * configuration on stdin, its parser next to it. The files stay on the node: only counts come back.
 */
import { randomBytes } from 'node:crypto';
import { RemoteOperation, incomplete, malformed, stderrTail } from '../remote/operation';
import { PRUNE_DIRS, PROBE_VOLUMES } from '../node/probe';
import type { ExecResult } from '../ssh/transport';
import { dataNodeScript } from './nodeScript';
import { DEFAULT_THRESHOLDS, DataReport, DataThresholds, RawDataFile, buildReport } from './verdict';

export interface DataOptions {
  /** Files (or folders of .jsonl files) to judge; absent or empty: discover them under the roots. */
  paths?: string[];
  /** Folders to discover in (`~` is the remote home). Default: the home and the provider volumes. */
  roots?: string[];
  /** Rows from the end, and rows spread through the file. Default 1000. */
  sample?: number;
  /** false: only the newest rows (watch). Default true. */
  spread?: boolean;
  /** false: estimate the rows from the tail's bytes per row instead of counting them (watch). Default true. */
  count?: boolean;
  /** RFC 6901 pointers overriding the detected shape. */
  responseField?: string;
  promptField?: string;
  /** Discovered files judged at most (the newest). Default 24. */
  maxFiles?: number;
  thresholds?: DataThresholds;
  /** Whole run. Default 120 s (the script keeps its own budget 10 s under it). */
  timeoutMs?: number;
}

interface DataOutput {
  files: RawDataFile[];
  skipped: Array<{ path: string; why: string }>;
  elapsedMs: number;
  /** The node script's peak memory (ru_maxrss), when the node says. */
  peakRssKiB: number | null;
}

/** A JSON pointer ("" or "/a/0/b"), else an error in words. */
export function checkPointer(p: string, flag: string): string {
  if (p !== '' && !p.startsWith('/')) throw new Error(`${flag} is a JSON pointer such as /choices/0/message/content (got "${p}")`);
  return p;
}

export function dataScript(opts: DataOptions, nonce: string): string {
  const timeoutMs = opts.timeoutMs ?? 120_000;
  const cfg = {
    nonce,
    paths: opts.paths && opts.paths.length ? opts.paths : null,
    roots: opts.roots && opts.roots.length ? opts.roots : ['~', ...PROBE_VOLUMES],
    sample: opts.sample ?? 1000,
    spread: opts.spread ?? true,
    count: opts.count ?? true,
    responseField: opts.responseField ?? null,
    promptField: opts.promptField ?? null,
    maxFiles: opts.maxFiles ?? 24,
    budgetS: Math.max(5, timeoutMs / 1000 - 10),
    prune: PRUNE_DIRS,
  };
  const b64 = Buffer.from(JSON.stringify(cfg), 'utf8').toString('base64');
  return `CFG_B64 = "${b64}"\n${dataNodeScript()}`;
}

/** Parses the script's output: F lines (files), S lines (left out), the E line (the end). */
export function parseDataOutput(text: string, nonce: string): DataOutput & { complete: boolean } {
  const files: RawDataFile[] = [];
  const skipped: Array<{ path: string; why: string }> = [];
  let complete = false;
  let elapsedMs = 0;
  let peakRssKiB: number | null = null;
  const pre = `@@${nonce}-`;
  for (const line of text.split('\n')) {
    if (!line.startsWith(pre) || line.charAt(pre.length + 1) !== '@') continue;
    const tag = line.charAt(pre.length);
    const body = line.slice(pre.length + 4);
    let o: unknown;
    try {
      o = JSON.parse(body);
    } catch {
      throw malformed(`the data check printed a line that is not JSON: ${body.slice(0, 80)}`);
    }
    if (!o || typeof o !== 'object') throw malformed('the data check printed a record that is not an object');
    const r = o as Record<string, unknown>;
    if (tag === 'F') {
      if (typeof r.path !== 'string') throw malformed('a file record of the data check has no path');
      files.push({ ...(r as unknown as RawDataFile), error: typeof r.error === 'string' ? r.error : null });
    } else if (tag === 'S' && typeof r.path === 'string') skipped.push({ path: r.path, why: String(r.why ?? '') });
    else if (tag === 'E') {
      complete = true;
      elapsedMs = Number(r.elapsedMs) || 0;
      peakRssKiB = typeof r.peakRssKiB === 'number' ? r.peakRssKiB : null;
    }
  }
  return { files, skipped, elapsedMs, peakRssKiB, complete };
}

export function dataOperation(node: string, opts: DataOptions = {}): RemoteOperation<DataReport> {
  const nonce = `GS${randomBytes(8).toString('hex')}`;
  const th = opts.thresholds ?? DEFAULT_THRESHOLDS;
  return {
    name: 'data-quality',
    command: 'python3 -',
    stdin: dataScript(opts, nonce),
    timeoutMs: opts.timeoutMs ?? 120_000,
    maxOutputBytes: 16 * 1024 * 1024,
    idempotent: true,
    parse(r: ExecResult): DataReport {
      const out = parseDataOutput(r.stdout.toString('utf8'), nonce);
      if (!out.complete) {
        const err = stderrTail(r, 3);
        if (r.code === 127 || /python3: (command )?not found/.test(err))
          throw incomplete(`python3 is not on ${node}: the data check runs there with python3 (every SGLang node has it).`, r);
        throw incomplete(`the data check did not complete on ${node} (exit ${r.code}${err ? `: ${err}` : ''}).`, r, {
          operation: 'data-quality',
        });
      }
      return { ...buildReport(node, out.files, out.skipped, th, out.elapsedMs), peakRssKiB: out.peakRssKiB };
    },
  };
}
