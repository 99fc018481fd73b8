/**
 * `gpu-sessions history NODE [--json]`: the samples and transitions that earlier `watch` runs kept for NODE
 * (under the user's cache folder, bounded: 8 MiB and 24 h per node). --json: one object per line, as watch
 * printed them; otherwise a short table.
 */
import { HistoryStore, defaultHistoryDir } from '../core/node/history';
import { formatSample, formatTransition } from './cmdWatch';
import type { GuardSample, GuardTransition } from '../core/node/guard';

export function cmdHistory(
  node: string,
  opts: { json: boolean; dir?: string },
  io: { out(s: string): void; err(s: string): void },
): number {
  const store = new HistoryStore(opts.dir ?? defaultHistoryDir(), node);
  const entries = store.all();
  if (!entries.length) {
    io.err(`No history for "${node}" in ${store.file}: run 'gpu-sessions watch ${node}' first.\n`);
    return opts.json ? 0 : 1;
  }
  let out = '';
  for (const e of entries) {
    if (opts.json) out += JSON.stringify(e) + '\n';
    else if (e.type === 'sample') out += formatSample(e as unknown as GuardSample) + '\n';
    else if (e.type === 'transition') out += formatTransition(e as unknown as GuardTransition) + '\n';
  }
  io.out(out);
  return 0;
}
