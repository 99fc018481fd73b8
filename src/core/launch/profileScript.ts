/**
 * Launch profile rendering: the deterministic POSIX sh launch script (one server per GPU, or one server
 * with TP/DP), secrets read from files on the node.
 */
import { shComment, shq } from '../util/quote';
import { canonicalFlag } from '../sglang/flags';
import {
  ArgValue,
  DEFAULT_LOG_DIR,
  DEFAULT_PYTHON,
  DEFAULT_WORK_DIR,
  FLAG_BY_NAME,
  FLAG_SPECS,
  FlagSpec,
  LaunchProfile,
  SecretRef,
  isSecretRef,
  secretName,
} from './profileModel';
import { getField, gpusPerServer, profileName } from './profileValidate';

// ------------------------------------------------------------------------------------ rendering

/**
 * A path for the remote shell: `~` → "$HOME", `~/x` → "$HOME"/'x', anything else shq-quoted literally.
 */
export function remotePathExpr(p: string): string {
  if (p === '~') return '"$HOME"';
  if (p.startsWith('~/')) return p.length === 2 ? '"$HOME"/' : `"$HOME"/${shq(p.slice(2))}`;
  return shq(p);
}

/** Join a directory (as given in the profile) and a plain file name. */
function joinRemote(dir: string, file: string): string {
  return dir.endsWith('/') ? dir + file : `${dir}/${file}`;
}

export interface RenderedInstance {
  /** CUDA_VISIBLE_DEVICES of this instance. */
  gpus: number[];
  port: number;
  /** As in the profile: `~/...` means the remote home. */
  logFile: string;
  /** The argv the instance is started with (port included; `~/` in paths expands on the node; a secret shows as `<secret:NAME>`). */
  argv: string[];
  /** --host of its group (for /health), when set. */
  host?: string;
}

interface RenderedScript {
  script: string;
  instances: RenderedInstance[];
  /** Names of the secrets the script reads from `~/.gpu-sessions/secrets/` (supplied before it runs). */
  secrets: string[];
}

/** Where a secret lives on the node (mode 0600 in a 0700 directory), relative to the home. */
export const SECRETS_DIR = '.gpu-sessions/secrets';

/** In an argv as data, a secret reference is this marker + its name (NUL cannot be in a profile value). */
export const SECRET_MARK = '\0secret:';
const secretToken = (r: SecretRef) => SECRET_MARK + secretName(r);
const shownToken = (a: string) => (a.startsWith(SECRET_MARK) ? `<secret:${a.slice(SECRET_MARK.length)}>` : a);

/** The shell expression that reads a secret on the node at run time: `"$(cat "$HOME"/'.gpu-sessions/secrets/NAME')"`. */
function secretExpr(name: string): string {
  return `"$(cat "$HOME"/${shq(`${SECRETS_DIR}/${name}`)})"`;
}

/** Every secret a group refers to (names, in order of appearance). */
function profileSecrets(p: LaunchProfile): string[] {
  const out: string[] = [];
  const add = (v: ArgValue | undefined) => {
    if (v !== undefined && isSecretRef(v) && !out.includes(secretName(v))) out.push(secretName(v));
  };
  add(p.apiKey);
  p.extraArgs.forEach(add);
  Object.values(p.env).forEach(add);
  return out;
}

function fmtValue(v: unknown): string {
  return String(v);
}

/** extraArgs split into chunks, each a flag with the values after it (leading values form a chunk of their own). */
function chunksOf(extra: ArgValue[]): Array<{ flag: string | null; tokens: string[] }> {
  const out: Array<{ flag: string | null; tokens: string[] }> = [];
  for (const a of extra) {
    const tok = typeof a === 'string' ? a : secretToken(a);
    if (typeof a === 'string' && a.startsWith('--'))
      out.push({ flag: a.includes('=') ? a.slice(0, a.indexOf('=') + 1) : a, tokens: [tok] });
    else if (out.length) out[out.length - 1].tokens.push(tok);
    else out.push({ flag: null, tokens: [tok] });
  }
  return out;
}

/**
 * The launcher and flags of one instance, as data: `[python, -m, sglang.launch_server, --model-path, X, ...]`
 * (port included). Typed flags in the default order (or `argOrder`'s, with its spellings), then extraArgs.
 */
export function instanceArgv(p: LaunchProfile, port: number, single: { tp?: number; dp?: number } = {}): string[] {
  const argv = [p.python ?? DEFAULT_PYTHON, '-m', 'sglang.launch_server'];
  const rec = p as unknown as Record<string, unknown>;
  // Each typed flag as its tokens, by its canonical flag.
  const typedTokens = new Map<string, { spec: FlagSpec; value: unknown }>();
  for (const spec of FLAG_SPECS) {
    const v =
      spec.field === 'tp' || spec.field === 'dp' ? (p.layout === 'single' ? single[spec.field] : p[spec.field]) : getField(rec, spec.field);
    if (v !== undefined && v !== null && v !== false) typedTokens.set(spec.flag, { spec, value: v });
  }
  const emitTyped = (flag: string, spelled = flag, attached = false) => {
    const t = typedTokens.get(flag)!;
    typedTokens.delete(flag);
    if (t.spec.kind === 'bool') return argv.push(spelled);
    const s = fmtValue(t.value);
    // A string value that starts with "-" would be taken for a flag by argparse: keep it attached.
    if (attached || (t.spec.kind === 'string' && s.startsWith('-'))) argv.push(`${spelled}=${s}`);
    else argv.push(spelled, s);
  };
  let portDone = false;
  let keyDone = !p.apiKey;
  const emitPort = (spelled = '--port', attached = false) => {
    portDone = true;
    if (attached) argv.push(`${spelled}=${port}`);
    else argv.push(spelled, String(port));
  };
  const emitKey = (spelled = '--api-key', attached = false) => {
    keyDone = true;
    if (attached) argv.push(`${spelled}=${secretToken(p.apiKey!)}`);
    else argv.push(spelled, secretToken(p.apiKey!));
  };
  const chunks = chunksOf(p.extraArgs);
  for (const entry of p.argOrder ?? []) {
    const attached = entry.endsWith('=');
    const spelled = attached ? entry.slice(0, -1) : entry;
    const canon = canonicalFlag(spelled);
    if (canon === '--port' && !portDone) emitPort(spelled, attached);
    else if (canon === '--api-key' && !keyDone) emitKey(spelled, attached);
    else if (typedTokens.has(FLAG_BY_NAME.get(canon)?.flag ?? FLAG_BY_NAME.get(spelled)?.flag ?? '\0')) {
      emitTyped((FLAG_BY_NAME.get(canon) ?? FLAG_BY_NAME.get(spelled))!.flag, spelled, attached);
    } else {
      const k = chunks.findIndex((c) => c.flag === entry);
      if (k >= 0) argv.push(...chunks.splice(k, 1)[0].tokens);
    }
  }
  for (const spec of FLAG_SPECS) {
    if (typedTokens.has(spec.flag)) emitTyped(spec.flag);
    if (spec.field === 'host' && !portDone) emitPort();
  }
  if (!portDone) emitPort();
  if (!keyDone) emitKey();
  for (const c of chunks) argv.push(...c.tokens);
  return argv;
}

/** Fields whose values are paths and expand `~/` on the node. */
const PATH_FLAGS = new Set(['--model-path', '--speculative-draft-model-path']);

/** An argv element for the script: flag values that are `~/` paths expand to the remote home; secrets are read from their file. */
function argExpr(argv: string[], i: number): string {
  const a = argv[i];
  if (a.startsWith(SECRET_MARK)) return secretExpr(a.slice(SECRET_MARK.length));
  const eq = a.indexOf('=' + SECRET_MARK);
  if (a.startsWith('--') && eq > 0) return shq(a.slice(0, eq + 1)) + secretExpr(a.slice(eq + 1 + SECRET_MARK.length));
  if (i > 0 && PATH_FLAGS.has(canonicalFlag(argv[i - 1])) && (a === '~' || a.startsWith('~/'))) return remotePathExpr(a);
  if (i === 0 && a.startsWith('~/')) return remotePathExpr(a);
  return shq(a);
}

export interface InstancePlan {
  gpus: number[];
  port: number;
  logName: string;
  tp?: number;
  dp?: number;
}

/** How the GPUs are split into instances (throws a 'config'-style Error when tp/dp do not fit). */
export function planInstances(p: LaunchProfile, gpuIndices: number[]): InstancePlan[] {
  if (!gpuIndices.length) throw new Error('gpus: no GPU to launch on');
  if (p.layout === 'per-gpu') {
    return gpuIndices.map((g, k) => ({ gpus: [g], port: p.basePort + k, logName: `sglang_gpu${g}.log` }));
  }
  const n = gpuIndices.length;
  // GPUs of the whole server (every node) that are not tp or dp: pp; nnodes shares them out.
  const scale = (p.pp ?? 1) / (p.nnodes ?? 1);
  const whole = (x: number) => (Number.isInteger(x) ? x : NaN);
  let tp = p.tp;
  let dp = p.dp;
  if (tp === undefined && dp === undefined) {
    const t = whole(n / scale);
    tp = t > 1 ? t : undefined;
  } else if (tp === undefined) {
    const t = p.enableDpAttention ? whole(n / scale) : whole(n / scale / dp!);
    if (!Number.isFinite(t) || t < 1) throw new Error(`dp: ${dp} does not divide the ${n} GPUs`);
    tp = t > 1 ? t : undefined;
  } else if (dp === undefined && !p.enableDpAttention) {
    const d = whole(n / scale / tp);
    if (!Number.isFinite(d) || d < 1) throw new Error(`tp: ${tp} does not divide the ${n} GPUs`);
    dp = d > 1 ? d : undefined;
  }
  const need = gpusPerServer({ tp, dp, pp: p.pp, nnodes: p.nnodes, enableDpAttention: p.enableDpAttention });
  if (need !== n)
    throw new Error(
      `tp ${tp ?? 1}${p.enableDpAttention ? '' : ` × dp ${dp ?? 1}`}${p.pp ? ` × pp ${p.pp}` : ''}${p.nnodes ? ` / nnodes ${p.nnodes}` : ''} ` +
        `= ${need} GPUs, but ${n} GPU(s) are selected (${gpuIndices.join(',')})`,
    );
  return [{ gpus: [...gpuIndices], port: p.basePort, logName: `sglang_port${p.basePort}.log`, tp, dp }];
}

/**
 * The lines that prepare the environment (cd, venv, env); shared by the launch script and preflight.
 * Secret variables are exported from their files on the node (`secrets: false` leaves them out: preflight).
 */
export function renderPreamble(p: LaunchProfile, failPrefix = 'GS-ERROR', opts: { secrets?: boolean } = {}): string[] {
  const L: string[] = [];
  const work = p.workDir ?? DEFAULT_WORK_DIR;
  L.push(`cd ${remotePathExpr(work)} || { echo ${shq(`${failPrefix} cannot cd to workDir ${work}`)} >&2; exit 3; }`);
  if (p.venv !== undefined) {
    const act = remotePathExpr(joinRemote(p.venv, 'bin/activate'));
    L.push(`[ -f ${act} ] || { echo ${shq(`${failPrefix} venv: ${joinRemote(p.venv, 'bin/activate')} does not exist`)} >&2; exit 3; }`);
    L.push(`. ${act} || { echo ${shq(`${failPrefix} venv: sourcing ${joinRemote(p.venv, 'bin/activate')} failed`)} >&2; exit 3; }`);
  }
  for (const [k, v] of Object.entries(p.env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k)) throw new Error(`env: ${JSON.stringify(k)} is not a variable name`);
    if (typeof v === 'string') L.push(`export ${k}=${shq(v)}`);
    else if (opts.secrets !== false) L.push(`export ${k}=${secretExpr(secretName(v))}`);
  }
  return L;
}

/** The log file of an instance: the profile's logFile template ({gpu}, {port}), else logDir + the default name. */
function instanceLog(p: LaunchProfile, pl: InstancePlan): string {
  if (p.logFile) return p.logFile.split('{gpu}').join(pl.gpus.join(',')).split('{port}').join(String(pl.port));
  return joinRemote(p.logDir ?? DEFAULT_LOG_DIR, pl.logName);
}

interface GroupRender {
  header: string[];
  body: string[];
  instances: RenderedInstance[];
}

/** One group's comment lines and its shell body (preamble, log folders, start function, starts). */
function renderGroup(profile: LaunchProfile, gpuIndices: number[], fn: string): GroupRender {
  const plans = planInstances(profile, gpuIndices);
  const logDir = profile.logDir ?? DEFAULT_LOG_DIR;
  const raw = plans.map((pl) => ({
    gpus: pl.gpus,
    port: pl.port,
    logFile: instanceLog(profile, pl),
    argv: instanceArgv(profile, pl.port, { tp: pl.tp, dp: pl.dp }),
  }));
  const header: string[] = [];
  if (profile.layout === 'per-gpu')
    header.push(`# Layout per-gpu: one independent SGLang server per GPU (data parallel by hand), GPU i on its own port and log.`);
  else {
    const tp = plans[0].tp ? ` with --tp-size ${plans[0].tp}` : '';
    const dp = plans[0].dp ? ` --dp-size ${plans[0].dp}` : '';
    header.push(`# Layout single: one SGLang server over GPUs ${plans[0].gpus.join(',')}${tp}${dp}.`);
  }
  for (const inst of raw) header.push(`#   GPU ${inst.gpus.join(',')} -> port ${inst.port}, log ${shComment(inst.logFile)}`);
  const body: string[] = [...renderPreamble(profile)];
  const logDirs = profile.logFile ? [...new Set(raw.map((i) => dirOf(i.logFile)).filter((d) => d !== ''))] : [logDir];
  for (const d of logDirs)
    body.push(`mkdir -p ${remotePathExpr(d)} || { echo ${shq(`GS-ERROR cannot create log folder ${d}`)} >&2; exit 3; }`);
  // One function holds the flags (so the diff of two scripts shows each flag change once); its
  // arguments are the per-instance values: CUDA_VISIBLE_DEVICES, port, log file.
  const argv = raw[0].argv;
  const portAt = argv.findIndex(
    (a, i) => i >= 3 && (a === `--port=${raw[0].port}` || (a === String(raw[0].port) && canonicalFlag(argv[i - 1]) === '--port')),
  );
  const fnBody: string[] = [];
  let line = `  CUDA_VISIBLE_DEVICES="$1" $DETACH nohup ${argExpr(argv, 0)} ${argExpr(argv, 1)} ${argExpr(argv, 2)}`;
  for (let i = 3; i < argv.length; i++) {
    const expr =
      i === portAt ? (argv[i].startsWith('--') ? `${shq(argv[i].slice(0, argv[i].indexOf('=') + 1))}"$2"` : '"$2"') : argExpr(argv, i);
    if (argv[i].startsWith('--')) {
      fnBody.push(line);
      line = `    ${expr}`;
    } else line += ` ${expr}`;
  }
  fnBody.push(line);
  fnBody.push('    > "$3" 2>&1 < /dev/null &');
  const starts = raw.map((inst) => `${fn} ${shq(inst.gpus.join(','))} ${inst.port} ${remotePathExpr(inst.logFile)}`);
  body.push(
    '',
    `${fn}() {  # $1 = CUDA_VISIBLE_DEVICES, $2 = port, $3 = log file`,
    fnBody.join(' \\\n'),
    '  echo "GS-STARTED $2 $!"',
    '}',
    '',
    ...starts,
  );
  return {
    header,
    body,
    instances: raw.map((i) => ({ ...i, argv: i.argv.map(shownToken), ...(profile.host ? { host: profile.host } : {}) })),
  };
}

function secretChecks(names: string[]): string[] {
  return names.map((n) => {
    const error = `GS-ERROR the secret ${n} was not supplied (~/${SECRETS_DIR}/${n} is missing)`;
    return `[ -r "$HOME"/${shq(`${SECRETS_DIR}/${n}`)} ] || { echo ${shq(error)} >&2; exit 3; }`;
  });
}

/**
 * The launch script for `gpuIndices` (already resolved when the profile says "all"): POSIX sh, every
 * value quoted, each instance started detached (setsid nohup, stdin /dev/null, output to its log) with
 * its CUDA_VISIBLE_DEVICES and port, printing `GS-STARTED <port> <pid>`. Secrets are read from their
 * files on the node (`"$(cat ...)"`): the script never contains them.
 */
export function renderLaunchScript(profile: LaunchProfile, gpuIndices: number[]): RenderedScript {
  return renderProfileScript([profile], [gpuIndices]);
}

/** The launch script of a profile with one or several server groups (`gpuLists[i]` = GPUs of group i). */
export function renderProfileScript(groups: LaunchProfile[], gpuLists: number[][]): RenderedScript {
  const first = groups[0];
  const name = profileName(first);
  const secrets = [...new Set(groups.flatMap(profileSecrets))];
  const L: string[] = [];
  L.push('#!/bin/sh');
  L.push(
    `# GPU Sessions launch script for profile "${shComment(name)}" — rendered from the profile; edit the profile, ` +
      `not this file.${groups.length > 1 ? ` ${groups.length} server groups.` : ''}`,
  );
  // Comments hold numbers or shComment() text only (no newline can end them); every value below is quoted.
  if (first.description) L.push(`# ${shComment(first.description.replace(/[\r\n]+/g, ' '))}`);
  const rendered = groups.map((g, i) => renderGroup(g, gpuLists[i], groups.length > 1 ? `start_group${i + 1}` : 'start_server'));
  if (groups.length === 1) L.push(...rendered[0].header);
  else
    rendered.forEach((r, i) =>
      L.push(`# Group ${i + 1}: ${shComment(groups[i].modelPath)}`, ...r.header.map((h) => h.replace(/^# /, '#   '))),
    );
  L.push(`# Each server starts detached (setsid nohup, stdin from /dev/null), so it outlives this SSH session;`);
  L.push(`# its pid is printed as "GS-STARTED <port> <pid>". Readiness: "The server is fired up and ready to roll!" in its log.`);
  if (secrets.length)
    L.push(`# Secrets (${shComment(secrets.join(', '))}) are read from ~/${SECRETS_DIR}/ (mode 0600), written there over stdin at launch.`);
  L.push('');
  if (groups.length === 1) {
    const b = rendered[0].body;
    const fnAt = b.indexOf('');
    L.push(
      ...secretChecks(secrets),
      ...b.slice(0, fnAt),
      'if command -v setsid >/dev/null 2>&1; then DETACH=setsid; else DETACH=; fi',
      ...b.slice(fnAt),
    );
  } else {
    L.push('if command -v setsid >/dev/null 2>&1; then DETACH=setsid; else DETACH=; fi', ...secretChecks(secrets));
    rendered.forEach((r, i) => {
      L.push('', `# ---- group ${i + 1} (in a subshell: its own directory and environment)`, '(');
      L.push(...r.body.map((l) => (l ? '  ' + l.replace(/\n/g, '\n  ') : l)));
      L.push(')');
    });
  }
  L.push('');
  return { script: L.join('\n'), instances: rendered.flatMap((r) => r.instances), secrets };
}

/** The directory part of a path ("" for none). */
export function dirOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? (i === 0 ? '/' : '') : p.slice(0, i);
}
