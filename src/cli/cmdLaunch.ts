/**
 * `gpu-sessions launch NODE --profile FILE [--dry-run] [--json] [--override] [--ready-timeout SECONDS]`
 * `gpu-sessions capture NODE --out FILE`
 * `gpu-sessions stop NODE --port PORT [--drain] [--json]`
 *
 * Exit codes: 0 ok, 1 other (capture found nothing, stop did not stop), 2 usage / invalid profile (the
 * field is named), 6 preflight refused, 7 an instance failed to become ready.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError, errorMessage } from '../core/util/errors';
import { LaunchResult, launch, stopServer, supplyHint } from '../core/launch/launch';
import { captureCandidates, captureServersAsProfile } from '../core/launch/capture';
import { parseProfileText, validateProfile } from '../core/launch/profile';
import type { AbortLike, Transport } from '../core/ssh/transport';
import { EXIT } from './exitCodes';
import type { CliIo } from './cliNode';

/** What launch and stop write through: the CLI's I/O, terminal or not. */
type LaunchIo = Pick<CliIo, 'out' | 'err'> & Partial<Pick<CliIo, 'isTTY'>>;

interface LaunchCliOptions {
  profileFile: string;
  dryRun: boolean;
  json: boolean;
  override: boolean;
  /** Readiness timeout in seconds (default 900). */
  timeoutS?: number;
  /** `--secret NAME=@FILE`: secret name → file holding its value. */
  secretFiles?: Record<string, string>;
  /** Where `{"env": NAME}` secrets are read (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/** `--secret NAME=@FILE` → [NAME, FILE]; a value given in clear on the command line is refused. */
export function parseSecretOption(arg: string): [string, string] {
  const m = /^([A-Za-z0-9_][A-Za-z0-9_.-]*)=@(.+)$/.exec(arg);
  if (!m)
    throw new GpuSessionsError(
      'usage',
      `--secret takes NAME=@FILE (a file holding the value), got ${JSON.stringify(arg.replace(/=.*/, '=…'))}; a secret is never given on the command line.`,
    );
  return [m[1], m[2]];
}

/** The CLI's secret source: `--secret NAME=@FILE` first, then the environment variable NAME. */
export function cliSecretSource(
  files: Record<string, string> = {},
  env: NodeJS.ProcessEnv = process.env,
): (name: string) => string | undefined {
  return (name) => {
    const f = files[name];
    if (f !== undefined) {
      try {
        return readFileSync(f, 'utf8').replace(/\r?\n$/, '');
      } catch (e) {
        throw new GpuSessionsError('usage', `--secret ${name}=@${f}: cannot read the file: ${errorMessage(e)}`);
      }
    }
    return env[name] || undefined;
  };
}

function launchJson(node: string, file: string, r: LaunchResult): Record<string, unknown> {
  return {
    node,
    profile: file,
    outcome: r.outcome,
    scriptPath: r.scriptPath,
    script: r.script,
    previousScript: r.previousScript,
    secrets: r.secrets,
    missingSecrets: r.missingSecrets,
    durationMs: r.durationMs,
    preflight: {
      ok: r.preflight.ok,
      refusals: r.preflight.refusals,
      warnings: r.preflight.warnings,
      gpus: r.preflight.gpus,
      ports: r.preflight.ports,
      sglangVersion: r.preflight.sglangVersion,
    },
    instances: r.instances.map((i) => ({
      port: i.port,
      gpus: i.gpus,
      pid: i.pid,
      logFile: i.logFile,
      state: i.state,
      ready: i.ready,
      readyVia: i.readyVia,
      readyAfterMs: i.readyAfterMs,
      error: i.error,
      lastLines: i.lastLines,
      argv: i.argv,
    })),
  };
}

/** Read and validate a profile file; errors are printed as `FILE: field: message`. */
function loadProfileFile(file: string, io: LaunchIo): ReturnType<typeof validateProfile> & { text?: string } {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    const msg = `${file}: cannot read the profile: ${errorMessage(e)}`;
    io.err(`error: ${msg}\n`);
    return { errors: [msg] };
  }
  const v = parseProfileText(text);
  if (v.errors.length) {
    io.err(`error: ${file} is not a valid launch profile:\n`);
    for (const e of v.errors) io.err(`  ${file}: ${e}\n`);
  }
  return { ...v, text };
}

export async function cmdLaunch(t: Transport, nodeName: string, opts: LaunchCliOptions, io: LaunchIo, signal?: AbortLike): Promise<number> {
  const v = loadProfileFile(opts.profileFile, io);
  if (!v.profile || !v.groups) return 2;
  const profile = v.profile;
  const fallbackName = path.basename(opts.profileFile).replace(/\.json$/i, '');
  let lastLine = 0;
  const r = await launch(t, v.groups, {
    secrets: cliSecretSource(opts.secretFiles, opts.env),
    dryRun: opts.dryRun,
    override: opts.override,
    timeoutMs: (opts.timeoutS ?? 900) * 1000,
    fallbackName,
    signal,
    onProgress: (p) => {
      if (opts.json) return;
      const now = Date.now();
      if (p.phase === 'wait' && now - lastLine < 2000) return;
      lastLine = now;
      io.err(`[${p.phase}] ${p.message}\n`);
    },
  });
  const pf = r.preflight;
  if (opts.json) {
    io.out(JSON.stringify(launchJson(nodeName, opts.profileFile, r), null, 2) + '\n');
  } else if (r.outcome === 'dry-run') {
    // A dry run shows: the exact script on stdout, and what a real launch would refuse as warnings.
    for (const w of pf.warnings) io.err(`warning: ${w.message}\n`);
    for (const x of pf.refusals) io.err(`warning: a launch would be refused: ${x.message}\n`);
    if (r.missingSecrets.length)
      io.err(
        `warning: secret${r.missingSecrets.length > 1 ? 's' : ''} not supplied: ${r.missingSecrets.join(', ')} (${supplyHint(r.missingSecrets)})\n`,
      );
    io.out(r.script);
    const ports = r.instances.map((i) => i.port).join(', ');
    const refusedNote = pf.ok && !r.missingSecrets.length ? '' : '; a launch now would be refused (see the warnings)';
    io.err(`Dry run: nothing was started on ${nodeName}. ${r.instances.length} instance(s) would start (ports ${ports})${refusedNote}.\n`);
  } else {
    for (const w of pf.warnings) io.err(`warning: ${w.message}\n`);
    for (const x of pf.refusals) io.err(`refused: ${x.message}\n`);
    if (r.outcome === 'refused') {
      io.err(`Launch on ${nodeName} refused by the preflight; nothing was started.\n`);
    } else {
      io.out(`Launched ${profile.name ?? fallbackName} on ${nodeName}: script ${r.scriptPath}\n`);
      for (const i of r.instances) {
        const head = `  port ${i.port}  GPU ${i.gpus.join(',')}  pid ${i.pid ?? '-'}  `;
        if (i.ready)
          io.out(
            `${head}ready in ${((i.readyAfterMs ?? 0) / 1000).toFixed(1)} s (${i.readyVia === 'log' ? 'readiness line' : '/health 200'})  log ${i.logFile}\n`,
          );
        else {
          io.out(`${head}${i.state.toUpperCase()}: ${i.error}\n    log ${i.logFile}\n`);
          for (const l of i.lastLines) io.out(`    | ${l}\n`);
        }
      }
      const ready = r.instances.filter((i) => i.ready).length;
      io.out(`${ready}/${r.instances.length} ready in ${(r.durationMs / 1000).toFixed(1)} s.\n`);
    }
  }
  switch (r.outcome) {
    case 'dry-run':
      // A valid profile that renders: the preflight's findings are warnings, not a failure.
      return 0;
    case 'refused':
      return EXIT.refused;
    case 'ready':
      return 0;
    default:
      return EXIT.notReady;
  }
}

interface CaptureCliOptions {
  out: string;
  /** Only these ports (default: every server of the SSH user). */
  ports?: number[];
}

/** Running servers → profile file. Only the SSH user's own servers are considered (others cannot be relaunched from here). */
export async function cmdCapture(
  t: Transport,
  nodeName: string,
  opts: CaptureCliOptions,
  io: LaunchIo,
  signal?: AbortLike,
): Promise<number> {
  const { servers, others } = await captureCandidates(t, opts.ports, signal);
  if (!servers.length) {
    io.err(
      `error: no SGLang server${opts.ports?.length ? ` on port ${opts.ports.join(', ')}` : ''} of this account ` +
        `is running on ${nodeName}${others > 0 ? ` (${others} of other users or ports are)` : ''}.\n`,
    );
    return 1;
  }
  let res;
  try {
    res = captureServersAsProfile(servers, path.basename(opts.out));
  } catch (e) {
    io.err(`error: ${errorMessage(e)}\n`);
    return 1;
  }
  mkdirSync(path.dirname(path.resolve(opts.out)), { recursive: true });
  writeFileSync(opts.out, res.json);
  for (const w of res.warnings) io.err(`warning: ${w}\n`);
  for (const e of res.errors) io.err(`warning: the captured profile needs an edit: ${e}\n`);
  const ports = res.ports;
  io.out(
    `Captured ${res.captured.length} server${res.captured.length > 1 ? 's' : ''} of ${nodeName} (port${ports.length > 1 ? 's' : ''} ` +
      `${ports.join(', ')}) into ${opts.out}${res.groups.length > 1 ? ` as ${res.groups.length} server groups` : ''}\n`,
  );
  if (res.secrets.length) {
    io.out(
      `The profile refers to ${res.secrets.length} secret${res.secrets.length > 1 ? 's' : ''} instead of holding ${res.secrets.length > 1 ? 'them' : 'it'}:\n`,
    );
    for (const x of res.secrets) io.out(`  ${x.name} (${x.what}, port${x.ports.length > 1 ? 's' : ''} ${x.ports.join(', ')})\n`);
    io.out(`Supply at launch: ${supplyHint(res.secrets.map((x) => x.name))}.\n`);
  }
  return res.errors.length ? 1 : 0;
}

interface StopCliOptions {
  port: number;
  drain: boolean;
  json: boolean;
  /** Seconds to wait for the drain (default 600). */
  drainTimeoutS?: number;
}

export async function cmdStop(t: Transport, nodeName: string, opts: StopCliOptions, io: LaunchIo, signal?: AbortLike): Promise<number> {
  if (!Number.isInteger(opts.port) || opts.port < 1 || opts.port > 65535) {
    io.err(`error: --port must be a port number (got ${opts.port}).\n`);
    return 2;
  }
  let prev = '';
  const r = await stopServer(t, {
    port: opts.port,
    drain: opts.drain,
    drainTimeoutMs: opts.drainTimeoutS !== undefined ? opts.drainTimeoutS * 1000 : undefined,
    signal,
    onProgress: opts.json
      ? undefined
      : (m) => {
          if (m !== prev) io.err(`${m}\n`);
          prev = m;
        },
  });
  if (opts.json) io.out(JSON.stringify({ node: nodeName, ...r }, null, 2) + '\n');
  else io.out(r.message + '\n');
  return r.stopped ? 0 : 1;
}
