/** Keep Node Salvaged's row under a node: "synced 40 s ago · 1.2 MiB at risk" (a live row, re-rendered in place). */
import { atRiskBytes } from '../../../core/flows/keepSalvaged';
import { formatBytes, formatDuration } from '../../../core/util/format';
import type { TreeContext, TreeNode } from '../types';

export function keepSalvagedRows(name: string, ctx: TreeContext, now = Date.now()): TreeNode[] {
  const k = ctx.verdicts.keep(name);
  if (!k) return [];
  const w = k.watch;
  const ago = (iso: string | null) => (iso ? `${formatDuration(Math.max(0, (now - Date.parse(iso)) / 1000))} ago` : 'never');
  const row = (label: string, detail: string, icon: string): TreeNode[] => [
    { type: 'info', node: name, live: 'salvage', label, detail, icon },
  ];
  switch (k.phase) {
    case 'starting':
      return row('Keeping salvaged', k.message ?? 'first full salvage…', 'loading~spin');
    case 'watching':
      return row(
        'Kept salvaged',
        w ? `synced ${ago(w.lastSyncedAt)} · ${formatBytes(atRiskBytes(w, now))} at risk` : 'synced just now · 0 B at risk',
        'sync',
      );
    case 'unreachable':
      return row(
        'Kept salvaged — node not answering',
        `synced ${ago(w?.lastSyncedAt ?? null)} · ${w ? formatBytes(atRiskBytes(w, now)) : '?'} at risk${k.message ? ` · ${k.message}` : ''}`,
        'warning',
      );
    case 'vanished': {
      const synced = w?.lastSyncedAt ? new Date(w.lastSyncedAt).toLocaleTimeString() : 'never';
      return row(
        'Node vanished — last synced state is final',
        `last synced ${synced} · ~${formatBytes(k.lostBytes ?? 0)} lost (est.) · SALVAGE.md`,
        'error',
      );
    }
  }
}
