/**
 * The data verdict a salvage records: each generation output file it lists (JSONL) judged on the node, in the
 * manifest (`data`) and SALVAGE.md ("87 % of the answers are the same `OK.` — look before you train on it").
 * It informs; it never changes "safe to shut down" (that is about the files being saved, not their worth).
 */
import { errorMessage } from '../util/errors';
import { mdCodeCell, mdText } from '../util/terminal';
import { runOperation } from '../remote/operation';
import type { Transport } from '../ssh/transport';
import { dataOperation } from './operation';
import type { DataFileReport, DataVerdict } from './verdict';

export interface SalvageDataRecord {
  checkedAt: string;
  /** The worst verdict of the files judged; null when the check could not run. */
  verdict: DataVerdict | null;
  files: Array<
    Pick<DataFileReport, 'path' | 'format' | 'rows' | 'rowsExact' | 'sampled' | 'shares' | 'topResponse' | 'verdict' | 'reasons'>
  >;
  /** Why the check did not run (python3 missing, timeout), in words. */
  error: string | null;
}

/** The output files among the salvage's items: JSONL files, the newest first, at most max. */
export function outputFilesOf(items: Array<{ remotePath: string; mtime?: string | number; size: number }>, max = 24): string[] {
  const t = (x: { mtime?: string | number }) => (typeof x.mtime === 'number' ? x.mtime : Date.parse(x.mtime ?? '') || 0);
  return items
    .filter((i) => i.remotePath.endsWith('.jsonl') && i.size > 0)
    .sort((a, b) => t(b) - t(a))
    .slice(0, max)
    .map((i) => i.remotePath);
}

/** Judge the files on the node; never throws (the salvage goes on whatever happens here). */
export async function recordDataQuality(t: Transport, node: string, paths: string[]): Promise<SalvageDataRecord | null> {
  if (!paths.length) return null;
  const checkedAt = new Date().toISOString();
  try {
    const r = await runOperation(t, dataOperation(node, { paths, timeoutMs: 90_000 }));
    const files = r.files.map((f) => ({
      path: f.path,
      format: f.format,
      rows: f.rows,
      rowsExact: f.rowsExact,
      sampled: f.sampled,
      shares: f.shares,
      topResponse: f.topResponse,
      verdict: f.verdict,
      reasons: f.reasons,
    }));
    return { checkedAt, verdict: r.verdict, files, error: null };
  } catch (e) {
    return { checkedAt, verdict: null, files: [], error: errorMessage(e) };
  }
}

const ICON: Record<DataVerdict, string> = { ok: '✅', suspect: '⚠️', degenerate: '❌' };

/** SALVAGE.md's "Data quality" section (empty when there is no record). */
export function renderDataSection(rec: SalvageDataRecord | null | undefined): string[] {
  if (!rec) return [];
  const L = ['## Data quality of the generation output', ''];
  if (rec.error) {
    L.push(`- Not checked: ${mdText(rec.error)}`, '');
    return L;
  }
  const bad = rec.files.filter((f) => f.verdict !== 'ok');
  L.push(
    bad.length
      ? `${ICON[rec.verdict ?? 'suspect']} ${bad.length} of ${rec.files.length} output file(s) need a look before ` +
          `you train on them (this does not change whether the node is safe to shut down):`
      : `✅ ${rec.files.length} output file(s) judged: the sampled answers look fine.`,
    '',
  );
  for (const f of bad) {
    L.push(`- ${ICON[f.verdict]} **${f.verdict}** ${mdCodeCell(f.path)} (${f.rows ?? '?'} rows, ${f.sampled} sampled)`);
    for (const why of f.reasons) L.push(`  - ${mdText(why)}`);
  }
  if (bad.length) L.push('');
  L.push('| verdict | file | rows | empty | same answer | cut | looping |', '|---|---|---|---|---|---|---|');
  const p = (x: number) => `${(x * 100).toFixed(1)} %`;
  for (const f of rec.files.slice(0, 200))
    L.push(
      `| ${f.verdict} | ${mdCodeCell(f.path)} | ${f.rows ?? '—'}${f.rowsExact ? '' : ' (est.)'} | ${p(f.shares.empty)} ` +
        `| ${p(f.shares.topResponse)} | ${p(f.shares.truncated)} | ${p(f.shares.repetitive)} |`,
    );
  L.push('');
  return L;
}
