/** The one-line summary of a node's output files (the VS Code Data row, the dashboard): no vscode here. */
import type { DataSampleFile } from './watch';
import type { DataFileReport } from './verdict';

const pct = (x: number) => `${(x * 100).toFixed(x < 0.1 ? 1 : 0)} %`;

/** The Data row's text: rows, empty and cut shares of the largest file, and what is wrong when something is. */
export function dataRowText(files: DataSampleFile[]): { label: string; detail: string; state: 'ok' | 'suspect' | 'degenerate' } {
  const rank = { ok: 0, suspect: 1, degenerate: 2 } as const;
  const worst = files.reduce<'ok' | 'suspect' | 'degenerate'>((w, f) => (rank[f.verdict] > rank[w] ? f.verdict : w), 'ok');
  const rows = files.reduce((a, f) => a + (f.rows ?? 0), 0);
  const judged = files.filter((f) => !f.error);
  const avg = (k: keyof DataSampleFile['shares']) => (judged.length ? judged.reduce((a, f) => a + f.shares[k], 0) / judged.length : 0);
  const parts = [`${rows.toLocaleString('en-US')} rows`, `${pct(avg('empty'))} empty`, `${pct(avg('truncated'))} cut at length`];
  const bad = files.filter((f) => f.verdict === 'degenerate');
  if (bad.length && bad[0].topResponse) parts.push(`${pct(bad[0].topResponse.share)} the same \`${bad[0].topResponse.text}\``);
  return { label: `Data${worst !== 'ok' ? ` ${worst}` : ''}`, detail: parts.join(' · '), state: worst };
}

/**
 * Open Sample's page: the verdict and its reasons, the answers that stood out (the most frequent, empty, looping),
 * then 10–20 rows of the sample as they are (it showed one row).
 */
export function sampleMarkdown(node: string, path: string, f: DataFileReport | undefined): string {
  if (!f) return `No data report for ${path} on ${node} yet.\n`;
  const L = [`# ${path} on ${node}: ${f.verdict}`, '', ...f.reasons.map((r) => `- ${r}`), ''];
  const ex = f.examples;
  for (const [title, rows] of [
    ['The most frequent answer', ex.top],
    ['Empty answers', ex.empty],
    ['Looping answers', ex.repetitive],
    [`Sampled rows (${ex.rows?.length ?? 0} of ${f.judged.toLocaleString('en-US')} judged)`, ex.rows ?? []],
  ] as const) {
    if (!rows.length) continue;
    L.push(`## ${title}`, '');
    for (const r of rows) L.push('```text', `prompt: ${r.prompt}`, `answer: ${r.answer}`, '```', '');
  }
  return L.join('\n');
}
