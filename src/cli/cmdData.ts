/**
 * `gpu-sessions data NODE [PATH...] [--json] [--sample N] [--response-field PTR] [--prompt-field PTR]`
 *
 * Is the generation output any good? Judges each output file ON the node (one exec, python3 over stdin; the
 * files are never downloaded): rows, a bounded sample, shares of empty / thinking-only / truncated / repeated /
 * looping answers, and a verdict. With no PATH it finds the output files under the work's folders.
 * Exit 0, or 7 when any file is degenerate.
 */
import { formatBytes, formatCount } from '../core/util/format';
import { runOperation } from '../core/remote/operation';
import { errorMessage } from '../core/util/errors';
import { DataOptions, checkPointer, dataOperation } from '../core/data/operation';
import { DataFileReport, DataReport, parseThresholds } from '../core/data/verdict';
import type { Transport } from '../core/ssh/transport';
import { EXIT } from './exitCodes';

interface DataCliOptions extends DataOptions {
  json: boolean;
}

function pct(x: number): string {
  const p = x * 100;
  return p === 0 ? '0' : p < 10 ? `${p.toFixed(1)}` : `${Math.round(p)}`;
}

/** The JSON of a report: the contract's fields first (node, files[], verdict), each file's contract fields first. */
export function dataJson(r: DataReport): Record<string, unknown> {
  return {
    node: r.node,
    files: r.files.map((f) => ({
      path: f.path,
      format: f.format,
      rows: f.rows,
      rowsExact: f.rowsExact,
      sampled: f.sampled,
      parseErrors: f.parseErrors,
      shares: f.shares,
      topResponse: f.topResponse,
      answerLength: f.answerLength,
      completionTokens: f.completionTokens,
      verdict: f.verdict,
      reasons: f.reasons,
      judged: f.judged,
      noResponse: f.noResponse,
      sizeBytes: f.sizeBytes,
      mtime: f.mtime,
      error: f.error,
      discovered: f.discovered,
      foundBy: f.foundBy,
    })),
    verdict: r.verdict,
    skipped: r.skipped,
    elapsedMs: r.elapsedMs,
    peakRssKiB: r.peakRssKiB ?? null,
  };
}

function rowsText(f: DataFileReport): string {
  if (f.rows === null) return '-';
  return `${f.rowsExact ? '' : '~'}${formatCount(f.rows)}`;
}

/** The short table a person reads at a glance, then each file's reasons. */
function formatDataReport(r: DataReport): string {
  const L: string[] = [];
  L.push(`${r.node}: ${r.files.length} output file${r.files.length === 1 ? '' : 's'} judged — ${r.verdict.toUpperCase()}`);
  if (!r.files.length) {
    L.push('  No generation output found under the work folders. Name the files: gpu-sessions data NODE PATH...');
  } else {
    const head = ['VERDICT', 'ROWS', 'EMPTY%', 'THINK%', 'CUT%', 'SAME%', 'LOOP%', 'FILE'];
    const rows = r.files.map((f) =>
      f.error
        ? [f.verdict, rowsText(f), '-', '-', '-', '-', '-', f.path]
        : [
            f.verdict,
            rowsText(f),
            pct(f.shares.empty),
            pct(f.shares.thinkingOnly),
            pct(f.shares.truncated),
            pct(f.shares.topResponse),
            pct(f.shares.repetitive),
            f.path,
          ],
    );
    const w = head.map((h, i) => Math.max(h.length, ...rows.map((x) => x[i].length)));
    const line = (cells: string[]) =>
      cells.map((c, i) => (i === cells.length - 1 ? c : i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join('  ');
    L.push('  ' + line(head));
    for (const x of rows) L.push('  ' + line(x));
    for (const f of r.files) {
      if (!f.reasons.length && !f.error) continue;
      L.push(
        `  ${f.path}${f.error ? '' : ` (${f.format}, ${f.sampled} sampled${f.sizeBytes !== null ? `, ${formatBytes(f.sizeBytes)}` : ''})`}:`,
      );
      for (const why of f.reasons) L.push(`    - ${why}`);
    }
  }
  for (const s of r.skipped) L.push(`  not judged: ${s.path}: ${s.why}`);
  return L.join('\n') + '\n';
}

export async function cmdData(
  t: Transport,
  node: string,
  opts: DataCliOptions,
  io: { out(s: string): void; err(s: string): void },
  signal?: AbortSignal,
): Promise<number> {
  const r = await runOperation(t, dataOperation(node, opts), signal);
  io.out(opts.json ? JSON.stringify(dataJson(r), null, 2) + '\n' : formatDataReport(r));
  return r.files.some((f) => f.verdict === 'degenerate') ? EXIT.degenerate : 0;
}

/** The command's flags → options (usage errors in words). */
export function dataCliOptions(
  v: Record<string, unknown>,
  json: boolean,
  paths: string[],
  usageError: (m: string) => never,
): DataCliOptions {
  const sample = v.sample !== undefined ? Number(v.sample) : 1000;
  if (!(Number.isInteger(sample) && sample >= 1 && sample <= 100_000)) usageError('--sample is a whole number of rows from 1 to 100000.');
  const o: DataCliOptions = { json, sample, paths };
  try {
    if (v['response-field'] !== undefined) o.responseField = checkPointer(String(v['response-field']), '--response-field');
    if (v['prompt-field'] !== undefined) o.promptField = checkPointer(String(v['prompt-field']), '--prompt-field');
    if (v.thresholds !== undefined) o.thresholds = parseThresholds(String(v.thresholds));
  } catch (e) {
    usageError(errorMessage(e));
  }
  return o;
}
