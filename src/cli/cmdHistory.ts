/**
 * `gpu-sessions history NODE [--json]`: the samples and transitions that earlier `watch` runs kept for NODE
 * (under the user's cache folder, bounded: 8 MiB and 24 h per node). --json: one object per line, as watch
 * printed them; otherwise a short table. Lines of the file that are not a well-formed entry are skipped (and
 * counted on stderr); a history folder other users can write to is not read (exit 1, saying why).
 */
import { HistoryStore, defaultHistoryDir, isHistoryEntry } from '../core/node/history';
import { formatSample, formatTransition } from './cmdWatch';
import type { GuardSample, GuardTransition } from '../core/node/guard';

export function cmdHistory(
  node: string,
  opts: { json: boolean; dir?: string },
  io: { out(s: string): void; err(s: string): void },
): number {
  const store = new HistoryStore(opts.dir ?? defaultHistoryDir(), node);
  if (store.problem) {
    io.err(`gpu-sessions: not reading history: ${store.problem}\n`);
    return 1;
  }
  // The text lines need every field of a sample or transition; --json prints what the store kept.
  const entries = store.all().filter((e) => opts.json || isHistoryEntry(e, true));
  const skipped = store.skipped + store.all().length - entries.length;
  if (skipped) io.err(`${skipped} malformed line${skipped === 1 ? '' : 's'} of ${store.file} skipped.\n`);
  if (!entries.length) {
    io.err(`No history for "${node}" in ${store.file}: run 'gpu-sessions watch ${node}' first.\n`);
    return opts.json ? 0 : 1;
  }
  let out = '';
  for (const e of entries) {
    if (opts.json) out += JSON.stringify(e) + '\n';
    else if (e.type === 'sample') out += oneLine(formatSample(e as unknown as GuardSample)) + '\n';
    else if (e.type === 'transition') out += oneLine(formatTransition(e as unknown as GuardTransition)) + '\n';
  }
  io.out(out);
  return 0;
}

/** One entry, one line: a message with newlines from the file cannot print lines of its own. */
function oneLine(s: string): string {
  return s.replace(/\r\n|[\r\n\u2028\u2029]/g, ' ');
}
