/**
 * Launch: preflight, render, upload, run, then wait until every instance is ready.
 */
import { GpuSessionsError, errorMessage } from '../util/errors';
import { RemoteOperation, runOperation } from '../remote/operation';
import { shq } from '../util/quote';
import { AbortLike, Transport } from '../ssh/transport';
import { LaunchProfile, RenderedInstance, SECRETS_DIR, renderProfileScript } from './profile';
import { rememberSecret } from '../util/redact';
import { LAUNCH_DIR } from './launchCommon';
import { PreflightIssue, PreflightResult, preflight } from './preflight';
import { readLastScript, runScript, scriptFileName, uploadScript, writeFailed } from './launchScripts';
import { InstanceState, LaunchProgress, LaunchedInstance, waitForInstances } from './readiness';

// ------------------------------------------------------------------------------------ launch

interface LaunchOptions {
  /** GPUs to use instead of the profile's. */
  gpus?: number[];
  /** Render and preflight only: start nothing. */
  dryRun?: boolean;
  /**
   * The preflight reads only (no venv sourced, no interpreter run); default: the same as dryRun. A preview of a
   * restored run must not run what the old node left.
   */
  preview?: boolean;
  /** How long to wait for readiness. Default 15 min (large models load for minutes). */
  timeoutMs?: number;
  pollMs?: number;
  onProgress?: (p: LaunchProgress) => void;
  signal?: AbortLike;
  /** Launch on GPUs that already have compute processes. */
  override?: boolean;
  /** Name for the script file when the profile has none (e.g. the profile file's base name). */
  fallbackName?: string;
  /** The script the user reviewed: refuse if the node's state now renders another one. */
  expectScript?: string;
  fatalGraceMs?: number;
  /** Values of the secrets the profile refers to (by name); a launch that lacks one is refused. */
  secrets?: SecretSource;
}

type LaunchOutcome = 'dry-run' | 'refused' | 'ready' | 'failed';

export interface LaunchResult {
  outcome: LaunchOutcome;
  script: string;
  instances: LaunchedInstance[];
  preflight: PreflightResult;
  /** Where the script was written on the node (null for a dry run or a refusal). */
  scriptPath: string | null;
  /** The node's previous last.sh (for a diff), or null. */
  previousScript: string | null;
  /** Secrets the script reads, and those no source supplied (a dry run only warns about them). */
  secrets: string[];
  missingSecrets: string[];
  durationMs: number;
}

interface PreparedLaunch {
  preflight: PreflightResult;
  script: string | null;
  instances: RenderedInstance[];
  previousScript: string | null;
  /** Why no script could be rendered (no GPU resolved, tp/dp do not fit). */
  renderError: string | null;
  /** Secrets the script reads on the node (their values are written there before it runs). */
  secrets: string[];
}

/** Preflight + render + the node's last.sh: what a review shows before launching. Starts nothing. */
export async function prepareLaunch(
  t: Transport,
  profile: LaunchProfile | LaunchProfile[],
  opts: { gpus?: number[]; override?: boolean; signal?: AbortLike; preview?: boolean } = {},
): Promise<PreparedLaunch> {
  const groups = Array.isArray(profile) ? profile : [profile];
  const [pfs, previousScript] = await Promise.all([
    Promise.all(
      groups.map((g, i) =>
        preflight(t, g, (groups.length === 1 ? opts.gpus : undefined) ?? g.gpus, {
          override: opts.override,
          signal: opts.signal,
          preview: opts.preview,
        }).then((r) => (groups.length > 1 ? labelGroup(r, i) : r)),
      ),
    ),
    readLastScript(t, opts.signal),
  ]);
  const pf = mergePreflights(pfs);
  let script: string | null = null;
  let instances: RenderedInstance[] = [];
  let secrets: string[] = [];
  let renderError: string | null = null;
  if (pfs.every((x) => x.gpus.length)) {
    try {
      const r = renderProfileScript(
        groups,
        pfs.map((x) => x.gpus),
      );
      script = r.script;
      instances = r.instances;
      secrets = r.secrets;
    } catch (e) {
      renderError = errorMessage(e);
    }
  } else renderError = 'no GPU to launch on';
  return { preflight: pf, script, instances, previousScript, renderError, secrets };
}

function labelGroup(r: PreflightResult, i: number): PreflightResult {
  const tag = (x: PreflightIssue) => ({ ...x, message: `group ${i + 1}: ${x.message}` });
  return { ...r, refusals: r.refusals.map(tag), warnings: r.warnings.map(tag) };
}

/** One preflight result for several groups (ports and GPUs of all of them). */
function mergePreflights(list: PreflightResult[]): PreflightResult {
  if (list.length === 1) return list[0];
  const refusals = list.flatMap((x) => x.refusals);
  return {
    ok: refusals.length === 0,
    refusals,
    warnings: list.flatMap((x) => x.warnings),
    gpus: list.flatMap((x) => x.gpus),
    nodeGpus: list.find((x) => x.nodeGpus)?.nodeGpus ?? null,
    ports: list.flatMap((x) => x.ports),
    sglangVersion: list.find((x) => x.sglangVersion)?.sglangVersion ?? null,
  };
}

/** Supplies a secret's value by name (environment, --secret NAME=@FILE, SecretStorage); undefined when it has none. */
export type SecretSource = (name: string) => string | undefined | Promise<string | undefined>;

/** Stores one secret in `~/.gpu-sessions/secrets/<name>` (directory 0700, file 0600); the value travels on stdin. */
function writeSecretOperation(name: string, value: string, nodeLabel: string): RemoteOperation<void> {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name)) throw new GpuSessionsError('usage', `Bad secret name ${JSON.stringify(name)}.`);
  const body =
    'umask 077; d="$HOME/' +
    SECRETS_DIR +
    '"; mkdir -p "$d" && chmod 700 "$d" && cat > "$d/$1.tmp" && chmod 600 "$d/$1.tmp" && mv -f "$d/$1.tmp" "$d/$1" || exit 3';
  return {
    name: 'write-secret',
    command: `sh -c ${shq(body)} sh ${shq(name)}`,
    stdin: value,
    timeoutMs: 30_000,
    maxOutputBytes: 1024 * 1024,
    parse: (r) => {
      if (r.code !== 0) throw writeFailed(nodeLabel, `store the secret ${name} in ~/${SECRETS_DIR}/`, r);
    },
  };
}

/**
 * Write the secrets a launch script reads into `~/.gpu-sessions/secrets/<name>` (directory 0700, files 0600),
 * each value over stdin: never on a command line, never in the script.
 */
async function writeSecrets(t: Transport, values: Map<string, string>, signal?: AbortLike): Promise<void> {
  for (const [name, value] of values) await runOperation(t, writeSecretOperation(name, value, t.label), signal);
}

/** How to supply a secret, for messages (redactOutput keeps `NAME=…` and `NAME=@FILE`: placeholders, not values). */
export function supplyHint(names: string[]): string {
  return names.map((n) => `export ${n}=… (or --secret ${n}=@FILE)`).join('; ');
}

function toLaunched(r: RenderedInstance[]): LaunchedInstance[] {
  return r.map((i) => ({
    ...i,
    pid: null,
    state: 'starting' as InstanceState,
    ready: false,
    readyVia: null,
    readyAfterMs: null,
    error: null,
    lastLines: [],
  }));
}

/**
 * Launch a profile: preflight (refusals stop here), render, upload the script (kept on the node; last.sh
 * updated), run it, and wait until every instance is ready or failed or the timeout passes. Servers that
 * are slow or failed are left as they are (nothing is killed); the result says what happened.
 */
export async function launch(
  t: Transport,
  profileOrGroups: LaunchProfile | LaunchProfile[],
  opts: LaunchOptions = {},
): Promise<LaunchResult> {
  const started = Date.now();
  const groups = Array.isArray(profileOrGroups) ? profileOrGroups : [profileOrGroups];
  const profile = groups[0];
  const progress = (phase: LaunchProgress['phase'], message: string) => opts.onProgress?.({ phase, message });
  progress('preflight', `checking ${t.label}…`);
  const prep = await prepareLaunch(t, groups, {
    gpus: opts.gpus,
    override: opts.override,
    signal: opts.signal,
    preview: opts.preview ?? Boolean(opts.dryRun),
  });
  const pf = prep.preflight;
  // Secrets: resolved in memory, never written anywhere but the node's 0600 files.
  const secretValues = new Map<string, string>();
  const missingSecrets: string[] = [];
  for (const name of prep.secrets) {
    const v = opts.secrets ? await opts.secrets(name) : undefined;
    if (v === undefined || v === '') missingSecrets.push(name);
    else {
      rememberSecret(v);
      secretValues.set(name, v);
    }
  }
  const base = { preflight: pf, previousScript: prep.previousScript, scriptPath: null, secrets: prep.secrets, missingSecrets };
  if (prep.script === null) {
    const refusals = pf.refusals.length
      ? pf
      : { ...pf, ok: false, refusals: [...pf.refusals, { check: 'gpu' as const, message: prep.renderError ?? 'nothing to launch' }] };
    return { ...base, preflight: refusals, outcome: 'refused', script: '', instances: [], durationMs: Date.now() - started };
  }
  const instances = toLaunched(prep.instances);
  if (opts.dryRun)
    return {
      ...base,
      outcome: 'dry-run',
      script: prep.script,
      instances: instances.map((i) => ({ ...i, state: 'not-started' })),
      durationMs: Date.now() - started,
    };
  if (missingSecrets.length) {
    pf.refusals.push({
      check: 'secret',
      message:
        `The profile refers to secret${missingSecrets.length > 1 ? 's' : ''} ${missingSecrets.join(', ')}, ` +
        `which ${missingSecrets.length > 1 ? 'were' : 'was'} not supplied: ${supplyHint(missingSecrets)}.`,
    });
    pf.ok = false;
  }
  if (opts.expectScript !== undefined && opts.expectScript !== prep.script) {
    pf.refusals.push({
      check: 'gpu',
      message: `The launch script for ${t.label} changed since it was reviewed (the node's GPUs changed?); review it again.`,
    });
    pf.ok = false;
  }
  if (!pf.ok)
    return {
      ...base,
      outcome: 'refused',
      script: prep.script,
      instances: instances.map((i) => ({ ...i, state: 'not-started' })),
      durationMs: Date.now() - started,
    };

  progress('upload', `uploading the launch script to ~/${LAUNCH_DIR}/…`);
  const fileName = scriptFileName(profile, opts.fallbackName);
  const up = await uploadScript(t, fileName, prep.script, opts.signal);
  if (secretValues.size) {
    progress('upload', `storing ${secretValues.size} secret${secretValues.size > 1 ? 's' : ''} in ~/${SECRETS_DIR}/ (mode 0600)…`);
    await writeSecrets(t, secretValues, opts.signal);
  }
  progress('start', `starting ${instances.length} instance${instances.length > 1 ? 's' : ''}…`);
  const run = await runScript(t, fileName, opts.signal);
  for (const inst of instances) {
    const pid = run.started.get(inst.port);
    if (pid !== undefined) inst.pid = pid;
    else
      Object.assign(inst, {
        state: 'not-started',
        error: run.errors.length
          ? run.errors.join('; ')
          : `the script did not start it (exit ${run.code}): ${run.output.split('\n').slice(-3).join(' | ')}`,
      });
  }
  await waitForInstances(t, instances, {
    timeoutMs: opts.timeoutMs ?? 15 * 60_000,
    pollMs: opts.pollMs,
    signal: opts.signal,
    onProgress: opts.onProgress,
    host: profile.host,
    fatalGraceMs: opts.fatalGraceMs,
  });
  const ok = instances.every((i) => i.state === 'ready');
  progress(
    'done',
    ok
      ? `${instances.length}/${instances.length} ready`
      : `${instances.filter((i) => i.state === 'ready').length}/${instances.length} ready`,
  );
  return {
    ...base,
    scriptPath: up.path,
    previousScript: up.previous,
    outcome: ok ? 'ready' : 'failed',
    script: prep.script,
    instances,
    durationMs: Date.now() - started,
  };
}
