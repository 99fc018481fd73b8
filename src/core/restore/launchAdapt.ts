/**
 * The captured launch profile, adapted to the new node: each server keeps its flags, its paths are mapped,
 * its port is kept when free, and its GPUs are re-assigned so that every server has its own (same count as
 * before, no GPU shared). `fill` adds instances of the first group until every free GPU serves.
 */
import type { LaunchProfile } from '../launch/profile';
import { gpusPerServer } from '../launch/profile';
import { GpuSessionsError } from '../util/errors';
import { FolderMap, mapPath } from './mapping';
import type { NodeFacts } from './nodeOps';

interface AdaptResult {
  groups: LaunchProfile[];
  notes: string[];
}

function mapP(p: string | undefined, maps: readonly FolderMap[]): string | undefined {
  if (p === undefined || !p.startsWith('/')) return p;
  return mapPath(p, maps) ?? p;
}

/** Paths of a group mapped to the new node (model, draft model, workDir, logDir, venv, python, logFile, path-valued env). */
function mapProfilePaths(g: LaunchProfile, maps: readonly FolderMap[]): LaunchProfile {
  const out: LaunchProfile = JSON.parse(JSON.stringify(g));
  out.modelPath = mapP(out.modelPath, maps)!;
  if (out.speculative?.draftModelPath) out.speculative.draftModelPath = mapP(out.speculative.draftModelPath, maps);
  out.workDir = mapP(out.workDir, maps);
  out.logDir = mapP(out.logDir, maps);
  out.venv = mapP(out.venv, maps);
  out.python = mapP(out.python, maps);
  out.logFile = mapP(out.logFile, maps);
  for (const [k, v] of Object.entries(out.env ?? {})) if (typeof v === 'string') out.env[k] = mapP(v, maps)!;
  out.extraArgs = (out.extraArgs ?? []).map((a) => (typeof a === 'string' ? (mapP(a, maps) ?? a) : a));
  return out;
}

/** GPUs one server of the group uses. */
function perServer(g: LaunchProfile): number {
  return g.layout === 'per-gpu'
    ? 1
    : gpusPerServer({ tp: g.tp, dp: g.dp, pp: g.pp, nnodes: g.nnodes, enableDpAttention: g.enableDpAttention });
}

export function adaptProfile(
  groups: LaunchProfile[],
  maps: readonly FolderMap[],
  facts: NodeFacts,
  node: string,
  fill = false,
): AdaptResult {
  if (!facts.gpus) throw new GpuSessionsError('config', `nvidia-smi on ${node} lists no GPU: the run's servers cannot be placed there.`);
  const busy = new Set(facts.busyGpus);
  const free = facts.gpus.filter((g) => !busy.has(g));
  const taken = new Set(facts.listening);
  const notes: string[] = [];
  const out: LaunchProfile[] = [];
  const need = groups.reduce((a, g) => a + (Array.isArray(g.gpus) ? g.gpus.length : perServer(g)), 0);
  if (need > free.length) {
    const inUse = busy.size ? `; in use: ${[...busy].join(',')}` : '';
    throw new GpuSessionsError(
      'config',
      `The run's servers used ${need} GPU(s); ${node} has ${free.length} free (${free.join(',') || 'none'}${inUse}). ` +
        'Free GPUs there, or launch fewer servers with `gpu-sessions launch` and an edited profile.',
    );
  }
  const ports = (g: LaunchProfile, base: number, n: number) =>
    g.layout === 'per-gpu' ? Array.from({ length: n }, (_, k) => base + k) : [base];
  const placePorts = (g: LaunchProfile, n: number): number => {
    const want = g.basePort;
    const ok = (b: number) => b > 0 && ports(g, b, n).every((p) => p < 65536 && !taken.has(p));
    let base = want;
    if (!ok(base)) {
      base = want + 1;
      while (!ok(base) && base < 65000) base++;
      notes.push(`port ${want} is in use on ${node} (or by another server of this restore): the server(s) listen on ${base} instead`);
    }
    for (const p of ports(g, base, n)) taken.add(p);
    return base;
  };
  for (const g0 of groups) {
    const g = mapProfilePaths(g0, maps);
    const n = Array.isArray(g.gpus) ? g.gpus.length : perServer(g);
    const mine = free.splice(0, n);
    if (Array.isArray(g0.gpus) && g0.gpus.join(',') !== mine.join(','))
      notes.push(`GPU${n > 1 ? 's' : ''} ${g0.gpus.join(',')} → ${mine.join(',')} (port ${g0.basePort})`);
    g.gpus = mine;
    g.basePort = placePorts(g, n);
    out.push(g);
  }
  if (fill && out.length) {
    const tpl = out[0];
    const per = perServer(tpl);
    let k = 0;
    while (free.length >= per) {
      const g: LaunchProfile = JSON.parse(JSON.stringify(tpl));
      const n = tpl.layout === 'per-gpu' ? free.length : per;
      g.gpus = free.splice(0, n);
      g.name = `${tpl.name ?? 'restore'}-fill${++k}`;
      g.basePort = placePorts(g, n);
      const instances = tpl.layout === 'per-gpu' ? `${n} instance(s)` : 'one more instance';
      notes.push(`--fill: ${n} more GPU(s) (${g.gpus.join(',')}) serve as ${instances} from port ${g.basePort}`);
      out.push(g);
    }
  }
  return { groups: out, notes };
}
