/**
 * The one restore flow both faces drive (CLI `gpu-sessions restore`, MCP restore_plan / restore_run, VS Code
 * "Move Job to Another Node…"): read the salvage run, read the new node (home, GPUs, ports), map the folders,
 * restore the files (git diffs first), then, when asked, relaunch the servers from the launch profile salvage
 * captured, adapted to the new node, wait until they are ready, and resume the generation client.
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import * as path from 'node:path';
import { runOperation } from '../remote/operation';
import { shJoin } from '../util/quote';
import type { AbortLike, Transport } from '../ssh/transport';
import type { SalvageManifest } from './salvage';
import { LaunchResult, SecretSource, launch } from '../launch/launch';
import { LaunchProfile, validateProfile } from '../launch/profile';
import { GpuSessionsError, errorMessage } from '../util/errors';
import type { RestoreCapture } from '../salvage/capture/restoreCapture';
import { DAMAGED, MANIFEST_FILE, parseManifest } from '../salvage/manifestSchema';
import { ClientResume, clientResume, startClientOperation } from '../restore/client';
import { FilesResult, LocalPlan, applyFiles, buildLocalPlan, checkWritable } from '../restore/files';
import { adaptProfile } from '../restore/launchAdapt';
import { GuardFetch, fetchGuardCopies } from '../restore/guardCopies';
import { GuardSource, prepareGuardRun } from '../restore/guardIndex';
import { FolderMap } from '../restore/mapping';
import { NodeFacts, nodeFactsOperation } from '../restore/nodeOps';

type RestoreManifest = SalvageManifest & { restore?: RestoreCapture | null };

interface RestoreOptions {
  /** The salvage run; with `fromGuard`, the folder (empty, or this source's earlier run) to write the run into. */
  runDir: string;
  /** `--from-guard`: no local salvage, the run is the node guard's S3 copy (its index), written into runDir. */
  fromGuard?: GuardSource;
  /** The target node's name (for messages and the JSON). */
  node: string;
  maps?: FolderMap[];
  /** Protected paths (dotfiles, ~/.ssh, …) the user names to restore anyway (`--include-dotfiles`). */
  includeDotfiles?: string[];
  force?: boolean;
  launch?: boolean;
  /** Only these groups of the captured profile (indices into profileGroups); all when absent. */
  groups?: number[];
  dryRun?: boolean;
  fill?: boolean;
  resumeClient?: boolean;
  /** Compare only: write nothing, start nothing (restore_plan, the VS Code review). */
  planOnly?: boolean;
  readyTimeoutMs?: number;
  secrets?: SecretSource;
  signal?: AbortLike;
  onProgress?: (message: string) => void;
}

interface RestoreServer {
  port: number;
  gpus: number[];
  modelPath: string | null;
  command: string;
  state?: string;
  error?: string | null;
}

export interface RestoreResult {
  node: string;
  /** guard: the guard's S3 place the run was taken from (`--from-guard`). */
  from: { node: string; run: string; guard?: string };
  mapped: FolderMap[];
  files: FilesResult;
  launch?: {
    script: string;
    servers: RestoreServer[];
    outcome: LaunchResult['outcome'] | 'skipped';
    notes: string[];
    refusals: string[];
    warnings: string[];
    missingSecrets: string[];
  };
  client: (ClientResume & { started: boolean; pid: number | null; error: string | null }) | null;
  /** 0 ok, 9 conflicts (without force), 6 launch refused, 7 not ready, 1 files failed. */
  exitCode: number;
  /** Files taken from the node guard's S3 copy (the salvage counted them there): read now, already here, failed. */
  fromGuard?: GuardFetch;
  messages: string[];
}

/** The run folder: RUN_DIR itself, or the newest run under DIR/<node>/ or DIR. */
export function resolveRunDir(dir: string): string {
  const abs = path.resolve(dir);
  if (existsSync(path.join(abs, 'salvage-manifest.json'))) return abs;
  let best: { p: string; t: number } | null = null;
  const scan = (d: string, depth: number) => {
    if (depth > 2) return;
    let names: string[] = [];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = path.join(d, n);
      const mf = path.join(p, 'salvage-manifest.json');
      if (existsSync(mf)) {
        const t = statSync(mf).mtimeMs;
        if (!best || t > best.t) best = { p, t };
      } else if (depth < 2) {
        try {
          if (statSync(p).isDirectory()) scan(p, depth + 1);
        } catch {
          /* unreadable: skip */
        }
      }
    }
  };
  scan(abs, 1);
  if (!best)
    throw new GpuSessionsError(
      'usage',
      `${abs} is not a salvage run folder (no salvage-manifest.json in it or below): pass the folder salvage printed, DEST/<node>/<timestamp>.`,
    );
  return (best as { p: string }).p;
}

export function readRun(runDir: string): RestoreManifest {
  const f = path.join(runDir, MANIFEST_FILE);
  let text: string;
  try {
    text = readFileSync(f, 'utf8');
  } catch (e) {
    throw new GpuSessionsError('usage', `${f}: cannot read the salvage manifest: ${errorMessage(e)}.`);
  }
  const m: RestoreManifest = parseManifest(text, f, 'usage');
  if (typeof m.node !== 'string') throw new GpuSessionsError('usage', `${f}: node: missing (expected a string) — ${DAMAGED}`);
  return m;
}

/**
 * The captured profile's groups (a profile file's shape too: one group, or {groups: [...]}), validated like a
 * profile file: the run folder is data from the old node, so a `basePort` that is not an integer, a name off its
 * pattern or an unknown field is an error naming it, never a value in a script.
 */
export function profileGroups(p: unknown): LaunchProfile[] {
  if (p === null || p === undefined) return [];
  // Salvage records the groups as a list of single profiles (each with the file's name and description).
  const parts = Array.isArray(p) ? p : [p];
  const groups: LaunchProfile[] = [];
  const errors: string[] = [];
  parts.forEach((g, i) => {
    const v =
      Array.isArray(p) && g && typeof g === 'object' && 'groups' in g
        ? { errors: ['groups: a recorded group holds groups of its own'] }
        : validateProfile(g);
    if (v.errors.length || !v.groups) errors.push(...v.errors.map((e) => (Array.isArray(p) ? `[${i}] ${e}` : e)));
    else groups.push(...v.groups);
  });
  if (errors.length)
    throw new GpuSessionsError(
      'config',
      `The launch profile recorded in the salvage is not valid (${errors.slice(0, 5).join('; ')}${errors.length > 5 ? '; …' : ''}): ` +
        'nothing was launched; launch with `gpu-sessions launch NODE --profile FILE` instead.',
    );
  return groups;
}

function argOf(argv: string[], flag: string): string | null {
  const i = argv.indexOf(flag);
  if (i >= 0 && i + 1 < argv.length) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith(flag + '='));
  return eq ? eq.slice(flag.length + 1) : null;
}

export async function restoreRun(t: Transport, o: RestoreOptions): Promise<RestoreResult> {
  const progress = (m: string) => o.onProgress?.(m);
  const signal = o.signal as AbortSignal | undefined;
  const guardRun = o.fromGuard ? await prepareGuardRun(o.runDir, o.fromGuard, { signal, onProgress: progress }) : null;
  const runDir = guardRun ? guardRun.runDir : resolveRunDir(o.runDir);
  const m = readRun(runDir);
  // files the node's guard verified in S3 (the salvage counted them, not downloaded): read back into the run folder
  const fromGuard = await fetchGuardCopies(runDir, m, { signal, onProgress: progress });
  // index entries refused as they are named (hostile, malformed): failed, never read
  if (guardRun) fromGuard.failed.unshift(...guardRun.refused);
  progress(`Reading ${o.node} (home, GPUs, ports)…`);
  const facts: NodeFacts = await runOperation(t, nodeFactsOperation(o.node), o.signal);
  if (!facts.home.startsWith('/'))
    throw new GpuSessionsError('remote-failed', `${o.node} did not say its home folder ($HOME is "${facts.home}").`);
  const plan: LocalPlan = buildLocalPlan(runDir, m, o.maps ?? [], facts.home, o.includeDotfiles ?? []);
  const messages: string[] = [];
  const planOnly = Boolean(o.planOnly || o.dryRun);
  if (!planOnly) {
    progress('Checking that the folders can be written…');
    await checkWritable(t, plan, o.node, o.signal);
  }
  progress(`Comparing ${plan.entries.length} file(s) with ${o.node}…`);
  const files = await applyFiles(t, plan, {
    node: o.node,
    newHome: facts.home,
    force: Boolean(o.force),
    planOnly,
    signal: o.signal,
    onProgress: (msg, done, total) => progress(`${msg} (${Math.round((done / Math.max(1, total)) * 100)}%)`),
  });
  files.failed.push(...fromGuard.failed);
  const res: RestoreResult = {
    node: o.node,
    from: { node: m.node, run: runDir, ...(guardRun && m.guard?.s3 ? { guard: m.guard.s3 } : {}) },
    mapped: plan.mapped,
    files,
    client: null,
    exitCode: 0,
    messages,
    ...(guardRun || fromGuard.fetched + fromGuard.present + fromGuard.failed.length ? { fromGuard } : {}),
  };
  if (files.failed.length) res.exitCode = 1;
  if (files.conflicts.length && !o.force) res.exitCode = 9;
  const resume = clientResume(m.restore, plan.mapped);
  if (o.launch) {
    const cap = m.restore;
    const all = profileGroups(cap?.profile);
    const groups = o.groups ? all.filter((_, i) => o.groups!.includes(i)) : all;
    if (!all.length)
      throw new GpuSessionsError(
        'config',
        `The salvage ${runDir} recorded no launch profile (no server ran at salvage time, or it was salvaged by an older version): ` +
          'launch with `gpu-sessions launch NODE --profile FILE` instead.',
      );
    if (!groups.length) throw new GpuSessionsError('usage', 'No server group was chosen to relaunch: restore the files only.');
    const adapted = adaptProfile(groups, plan.mapped, facts, o.node, o.fill);
    if (res.exitCode === 9 && !o.dryRun) {
      messages.push(`Not launching: ${files.conflicts.length} conflict(s) left as they are (--force replaces them).`);
      res.launch = { script: '', servers: [], outcome: 'skipped', notes: adapted.notes, refusals: [], warnings: [], missingSecrets: [] };
      res.client = resume ? { ...resume, started: false, pid: null, error: null } : null;
      return res;
    }
    progress(o.dryRun ? 'Rendering the launch script (dry run)…' : `Launching ${adapted.groups.length} group(s) of servers…`);
    const lr = await launch(t, adapted.groups, {
      dryRun: o.dryRun,
      // A preview never runs the node's interpreter or sources its venv (restored from the old node).
      preview: planOnly,
      timeoutMs: o.readyTimeoutMs,
      secrets: o.secrets ?? ((n) => process.env[n]),
      signal: o.signal,
      fallbackName: 'restore',
      onProgress: (p) => progress(p.message),
    });
    res.launch = {
      script: lr.script,
      servers: lr.instances.map((i) => ({
        port: i.port,
        gpus: i.gpus,
        modelPath: argOf(i.argv, '--model-path') ?? argOf(i.argv, '--model'),
        command: `CUDA_VISIBLE_DEVICES=${i.gpus.join(',')} ${shJoin(i.argv)}`,
        state: i.state,
        error: i.error,
      })),
      outcome: lr.outcome,
      notes: adapted.notes,
      refusals: lr.preflight.refusals.map((r) => r.message),
      warnings: lr.preflight.warnings.map((r) => r.message),
      missingSecrets: lr.missingSecrets,
    };
    if (lr.outcome === 'refused') res.exitCode = 6;
    else if (lr.outcome === 'failed') res.exitCode = 7;
  }
  if (resume) {
    res.client = { ...resume, started: false, pid: null, error: null };
    const canStart = !planOnly && (!o.launch || res.launch?.outcome === 'ready');
    if (o.resumeClient && canStart && res.exitCode === 0) {
      if (resume.blocked) res.client.error = resume.blocked;
      else {
        progress('Starting the generation client…');
        const s = await runOperation(t, startClientOperation(resume), o.signal);
        Object.assign(res.client, { started: s.pid !== null, pid: s.pid, log: s.log ?? res.client.log, error: s.error });
        if (s.pid === null) res.exitCode = 1;
      }
    }
  } else if (o.resumeClient) messages.push('The salvage recorded no generation client: nothing to resume.');
  return res;
}
