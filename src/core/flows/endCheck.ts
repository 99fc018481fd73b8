/**
 * Whether a rental may be ended now: the latest salvage of the node (as `release` and
 * `salvage` name its folder: DEST/<node>/<timestamp>/) must say `safe`, and a listing taken now must show that
 * nothing of value changed since — no new or grown file under the salvaged folders, no process writing there, the
 * same servers and the same boot. Every refusal is a code and a sentence. Nothing here runs a provider command.
 */
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { ProbeResult } from '../node/probe';
import type { SalvageListing } from '../salvage/plan/listing';
import { chooseRunDir } from '../salvage/dest/runDir';
import type { SalvageItem, SalvageManifest } from '../salvage/salvageTypes';
import type { EnvSnapshot } from '../salvage/snapshot/snapshotTypes';
import { parseEnvironment } from '../salvage/snapshot/environmentSchema';
import { errorMessage } from '../util/errors';
import { type ProviderAction, type ProviderInfo, shutdownCaveat } from '../provider/detect';

type RefusalCode =
  | 'no-safe-verdict'
  | 'verdict-stale'
  | 'unique-weights'
  | 'uploads-incomplete'
  | 'no-provider-action'
  /** --terminate destroys the disk: every item of value must be verified locally or in S3. */
  | 'items-not-verified';

export interface Refusal {
  code: RefusalCode;
  message: string;
}

export interface LatestSalvage {
  dir: string;
  manifest: SalvageManifest;
}

/** The node's latest salvage under `base` (the folder a rerun of salvage would continue), or null. */
export function latestSalvage(base: string, node: string): LatestSalvage | null {
  const { dir, previous } = chooseRunDir(base, node, new Date(0));
  return previous ? { dir, manifest: previous } : null;
}

/** Reasons found in the salvage record itself (no node needed). */
export function verdictRefusals(node: string, base: string, s: LatestSalvage | null, action: ProviderAction): Refusal[] {
  if (!s)
    return [
      {
        code: 'no-safe-verdict',
        message:
          `No salvage of ${node} under ${base}: salvage it first (gpu-sessions salvage ${node} --dest ${base} --stop-servers) ` +
          `and end the rental once its verdict is safe.`,
      },
    ];
  const m = s.manifest;
  const out: Refusal[] = [];
  if (m.verdict !== 'safe' || !m.finishedAt)
    out.push({
      code: 'no-safe-verdict',
      message:
        m.verdict === 'unsafe'
          ? `The latest salvage of ${node} (${s.dir}) says NOT safe (${m.reasons.join(', ') || 'no reason recorded'}); see its SALVAGE.md.`
          : `The latest salvage of ${node} (${s.dir}) did not finish with a verdict; run it again.`,
    });
  const unique = m.reasonDetails?.find((d) => d.code === 'unique-weights');
  if (unique) out.push({ code: 'unique-weights', message: `Weights that exist nowhere else are still on ${node}: ${unique.message}.` });
  const failedUploads = (m.uploads ?? []).filter((u) => !u.ok);
  if (failedUploads.length || m.s3?.error)
    out.push({
      code: 'uploads-incomplete',
      message: failedUploads.length
        ? `${failedUploads.length} upload(s) to S3 did not complete (${failedUploads[0].remotePath}: ${failedUploads[0].reason ?? 'failed'}).`
        : `The S3 check of the salvage failed (${m.s3?.error}): what S3 holds is not known.`,
    });
  if (action === 'terminate') {
    const byPath = new Map(m.items.map((i) => [i.remotePath, i]));
    const unverified = [
      ...m.lost.map((l) => l.remotePath),
      ...m.leftByChoice
        .filter((l) => ['large', 'deselected', 'origin-unknown'].includes(byPath.get(l.remotePath)?.leftReason ?? ''))
        .map((l) => l.remotePath),
    ];
    if (unverified.length)
      out.push({
        code: 'items-not-verified',
        message:
          `--terminate destroys the disk, and ${unverified.length} item(s) of value are verified neither locally nor in S3 ` +
          `(${unverified.slice(0, 3).join(', ')}${unverified.length > 3 ? ', …' : ''}); salvage them (--include-large) or use --stop.`,
      });
  }
  return out;
}

/** The salvaged folders, as the listing's explicit roots. */
export function salvagedRoots(m: SalvageManifest): string[] {
  return (m.roots as Array<string | { path: string }>).map((r) => (typeof r === 'string' ? r : r.path)).filter((r) => r.startsWith('/'));
}

/** Items that stand for a file or folder entry the node listed (not git state, command lines or cache summaries). */
function listedItem(i: SalvageItem): boolean {
  return i.kind !== 'git-state' && i.kind !== 'server-cmdline' && i.kind !== 'cache' && i.kind !== 'symlink';
}

/**
 * The environment snapshot of the salvage (taken after the servers were stopped): servers and boot then; null when
 * there is none; a damaged one is the problem that makes the verdict stale (file and field named).
 */
function snapshotOf(s: LatestSalvage): EnvSnapshot | null | { damaged: string } {
  if (!s.manifest.environment?.json) return null;
  const file = path.join(s.dir, path.basename(s.manifest.environment.json));
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  try {
    return parseEnvironment(text, file);
  } catch (e) {
    return { damaged: errorMessage(e) };
  }
}

const bootMin = (at: string, uptimeS: number | null) => {
  const t = Date.parse(at);
  return uptimeS === null || !Number.isFinite(t) ? null : Math.round((t / 1000 - uptimeS) / 60);
};
const list = (xs: string[]) => `${xs.slice(0, 3).join(', ')}${xs.length > 3 ? ` and ${xs.length - 3} more` : ''}`;

/** What changed on the node since the verdict (the probe and the listing were taken now, before any provider command). */
export function staleness(s: LatestSalvage, probe: ProbeResult, L: SalvageListing): Refusal | null {
  const items = new Map(s.manifest.items.filter(listedItem).map((i) => [i.remotePath, i]));
  const added: string[] = [];
  const grown: string[] = [];
  for (const f of L.files) {
    if (f.kind === 'symlink') continue;
    const it = items.get(f.path);
    if (!it) added.push(f.path);
    else if (f.size !== it.size || f.mtime !== it.mtime) grown.push(f.path);
  }
  const why: string[] = [];
  if (added.length) why.push(`${added.length} new file(s) under the salvaged folders (${list(added)})`);
  if (grown.length) why.push(`${grown.length} file(s) grew or were rewritten (${list(grown)})`);
  if (L.truncated) why.push('the listing hit its bound, so not every file could be compared');
  if (L.writers.length)
    why.push(`${L.writers.length} process(es) write under the folders (pid ${list(L.writers.map((w) => String(w.pid)))})`);
  const read = snapshotOf(s);
  if (read && 'damaged' in read) why.push(read.damaged);
  const snap = read && 'damaged' in read ? null : read;
  const now = probe.servers.map((x) => `:${x.port ?? '?'} (pid ${x.pid})`).sort();
  const then = (snap?.servers ?? [])
    .filter((x) => x.alive)
    .map((x) => `:${x.port} (pid ${x.pid})`)
    .sort();
  if (snap && now.join() !== then.join())
    why.push(`the servers changed (now ${now.join(', ') || 'none'}; at the verdict ${then.join(', ') || 'none'})`);
  else if (!read && now.length) why.push(`${now.length} server(s) run (${list(now)}) and the salvage recorded none`);
  const b0 = snap ? bootMin(snap.takenAt, snap.uptimeS) : null;
  const b1 = bootMin(probe.probedAt, probe.uptimeS);
  if (b0 !== null && b1 !== null && Math.abs(b0 - b1) > 1) why.push('the node rebooted since');
  if (!why.length) return null;
  return {
    code: 'verdict-stale',
    message: `The verdict of ${s.manifest.finishedAt} no longer holds: ${why.join('; ')}. Salvage again, then end the rental.`,
  };
}

/** Whether the node can take the action itself; else what to do instead. */
export function providerRefusal(p: ProviderInfo | undefined, action: ProviderAction): Refusal | null {
  if (p && p.actions.includes(action)) return null;
  const name = p?.name ?? 'unknown';
  const other = (p?.actions ?? []).filter((a) => a !== action);
  const volume = name === 'runpod' && action === 'stop' && p?.actions.includes('terminate');
  const why = volume
    ? 'a pod with a network volume cannot be stopped, only terminated'
    : action === 'shutdown'
      ? '`sudo -n` does not work on it'
      : name === 'unknown'
        ? 'no provider was recognised from its environment'
        : `${name}'s CLI, the instance id or the node's own key is missing there`;
  const instead = other.length
    ? `use --${other[0]}${other[0] === 'shutdown' ? ` (${shutdownCaveat(name)})` : ''}, or end it in the provider's console`
    : "end it in the provider's console";
  return {
    code: 'no-provider-action',
    message: `${name === 'unknown' ? 'The node' : name} cannot ${action} from the node (${why}): ${instead}.`,
  };
}
