/**
 * Reading the generation job's progress on the node: progress.json (bounded) and a summary of .done_indices
 * (count, lowest, highest) — as a shell fragment that the probe embeds in its exec or that runs alone
 * (progressOperation in monitor.ts), and its parser.
 */
import { shq } from '../util/quote';
import { ProgressInfo, parseProgressJson } from './jobProgress';

interface DoneIndicesSummary {
  path: string;
  count: number;
  lowest: number | null;
  highest: number | null;
  gaps: number;
}

export interface NodeProgress {
  progressFile: string | null;
  progress: ProgressInfo | null;
  doneIndices: DoneIndicesSummary | null;
  readAt: number;
}

/** The markers of progressScript: the run's nonce, so progress.json cannot forge them. */
function marks(nonce: string): { p: string; d: string; e: string } {
  return { p: `@@${nonce}-P@@`, d: `@@${nonce}-D@@`, e: `@@${nonce}-E@@` };
}

/**
 * POSIX sh printing @@<nonce>-P@@ + progress.json (≤ 1 MiB), @@<nonce>-D@@ + "count lowest highest" of
 * .done_indices, @@<nonce>-E@@. (`-`, not `:`, so it nests inside a sectioned script with the same nonce.)
 */
export function progressScript(progressPath: string | null, donePath: string | null, nonce: string): string {
  const m = marks(nonce);
  const parts: string[] = [];
  if (progressPath) parts.push(`printf '%s\\n' ${shq(m.p)}; head -c 1048576 -- ${shq(progressPath)} 2>&1`);
  if (donePath)
    parts.push(
      `printf '\\n%s\\n' ${shq(m.d)}; awk 'BEGIN{n=0} /^[ \\t]*[0-9]+[ \\t]*$/ {v=$1+0; if(n==0||v<lo)lo=v; if(n==0||v>hi)hi=v; ` +
        `n++} END{printf "%d %s %s\\n", n, (n?lo:"-"), (n?hi:"-")}' < ${shq(donePath)} 2>&1`,
    );
  parts.push(`printf '\\n%s\\n' ${shq(m.e)}`);
  return parts.join('\n') + '\n';
}

/** Whether the output of progressScript is complete (its end marker printed). */
export function progressComplete(text: string, nonce: string): boolean {
  return text.includes(`\n${marks(nonce).e}\n`);
}

/** Parses the output of progressScript. */
export function parseProgressSection(
  text: string,
  paths: { progressPath: string | null; donePath: string | null },
  nonce: string,
): Omit<NodeProgress, 'readAt'> {
  const { progressPath, donePath } = paths;
  const mk = marks(nonce);
  const p = text.indexOf(`${mk.p}\n`);
  const d = text.indexOf(`\n${mk.d}\n`);
  const e = text.lastIndexOf(`\n${mk.e}\n`);
  let progress: ProgressInfo | null = null;
  if (progressPath && p >= 0) progress = parseProgressJson(text.slice(p + mk.p.length + 1, d >= 0 ? d : e >= 0 ? e : undefined));
  let doneIndices: DoneIndicesSummary | null = null;
  if (donePath && d >= 0) {
    const m = /^(\d+) (-?\d+|-) (-?\d+|-)/.exec(text.slice(d + mk.d.length + 2));
    if (m) {
      const count = Number(m[1]);
      const lowest = m[2] === '-' ? null : Number(m[2]);
      const highest = m[3] === '-' ? null : Number(m[3]);
      doneIndices = {
        path: donePath,
        count,
        lowest,
        highest,
        gaps: lowest !== null && highest !== null ? Math.max(0, highest - lowest + 1 - count) : 0,
      };
    }
  }
  return { progressFile: progressPath, progress, doneIndices };
}
