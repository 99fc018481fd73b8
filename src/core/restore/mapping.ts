/**
 * Folder mapping for restore: `--map OLD=NEW` folders, the old home → the new node's home by default, and every
 * other folder the salvage took from kept as it is (identity). The longest matching folder wins.
 */
import { GpuSessionsError } from '../util/errors';
import { isUnder } from '../salvage/dest/paths';

export interface FolderMap {
  from: string;
  to: string;
}

/** `/a/b/` → `/a/b`; refuses relative paths and `.`/`..` components. */
function normFolder(p: string, what: string): string {
  if (!p.startsWith('/')) throw new GpuSessionsError('usage', `${what}: "${p}" is not an absolute folder (it must start with /).`);
  const parts = p.split('/').filter((x) => x.length > 0);
  if (parts.some((x) => x === '.' || x === '..')) throw new GpuSessionsError('usage', `${what}: "${p}" contains "." or "..".`);
  return '/' + parts.join('/');
}

/** `--map OLD=NEW` → {from, to}. */
export function parseMapOption(arg: string): FolderMap {
  const eq = arg.indexOf('=');
  if (eq <= 0 || eq === arg.length - 1)
    throw new GpuSessionsError('usage', `--map takes OLD=NEW (two absolute folders), got ${JSON.stringify(arg)}.`);
  return { from: normFolder(arg.slice(0, eq), '--map OLD'), to: normFolder(arg.slice(eq + 1), '--map NEW') };
}

/** The path on the new node for a path of the old one (null: no folder maps it). */
export function mapPath(p: string, maps: readonly FolderMap[]): string | null {
  let best: FolderMap | null = null;
  for (const m of maps) if (isUnder(p, m.from) && (!best || m.from.length > best.from.length)) best = m;
  if (!best) return null;
  const rest = p.slice(best.from.length);
  return best.to === '/' ? rest || '/' : best.to + rest;
}

/** The mapping restore uses: the user's maps, then old home → new home, then each root kept as it is. */
export function resolveMaps(user: readonly FolderMap[], oldHome: string | null, newHome: string, roots: readonly string[]): FolderMap[] {
  const out: FolderMap[] = [...user];
  const has = (from: string) => out.some((m) => m.from === from);
  if (oldHome && !has(oldHome)) out.push({ from: oldHome, to: newHome });
  for (const r of roots) if (!mapPath(r, out)) out.push({ from: r, to: r });
  return out;
}

/** A map's folder that a path came from (for "--map FROM=..." hints). */
export function mapOf(p: string, maps: readonly FolderMap[]): FolderMap | null {
  let best: FolderMap | null = null;
  for (const m of maps) if (isUnder(p, m.from) && (!best || m.from.length > best.from.length)) best = m;
  return best;
}
