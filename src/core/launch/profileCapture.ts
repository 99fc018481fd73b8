/**
 * Capture: running servers argv back into one launch profile (one group per kind), secrets as references.
 */
import { SglangServer, serverSecrets, sglangLaunchIndex } from '../sglang/serverArgv';
import { canonicalFlag, isSecretFlag } from '../sglang/flags';
import { REDACTED } from '../util/redact';
import {
  ArgValue,
  DEFAULT_PYTHON,
  FLAG_BY_NAME,
  FLAG_SPECS,
  FlagSpec,
  GROUP_FIELDS,
  LaunchProfile,
  PROFILE_FIELDS,
  SPECULATIVE_ALGORITHMS,
  SecretRef,
  SpeculativeAlgorithm,
  SpeculativeConfig,
  secretName,
} from './profileModel';
import { gpusPerServer, isObject, stripUndef } from './profileValidate';
import { InstancePlan, SECRET_MARK, dirOf, instanceArgv, planInstances } from './profileScript';

// ------------------------------------------------------------------------------------ capture

export interface CaptureExtras {
  /** Per server pid: its VIRTUAL_ENV when `<venv>/bin/activate` exists. */
  virtualEnv?: Record<number, string | undefined>;
  /** Per server pid: launch-relevant environment variables that differ from a login shell's. */
  env?: Record<number, Record<string, string> | undefined>;
  /** Per server pid: names of its secret environment variables (captured as references). */
  secretEnv?: Record<number, string[] | undefined>;
  name?: string;
}

/** A secret the captured profile refers to, and where it came from. The value stays in memory (restart). */
interface CapturedSecret {
  name: string;
  /** `--api-key` or `env HF_TOKEN`. */
  what: string;
  ports: number[];
  /** In memory only (never written): the value seen on the node, when known. */
  value?: string;
}

export interface CaptureResult {
  /** The first group (the only one for a node with one kind of server). */
  profile: LaunchProfile;
  /** One group per kind of server: together they reproduce every captured command line. */
  groups: LaunchProfile[];
  /** Servers the profile reproduces (pids). */
  captured: number[];
  secrets: CapturedSecret[];
  warnings: string[];
}

interface ParsedArgv {
  python: string;
  launcherOk: boolean;
  /** Typed values by field. */
  fields: Record<string, string | number | boolean>;
  port: number | null;
  extra: ArgValue[];
  /** --api-key as a reference. */
  apiKey?: SecretRef;
  /** Flags as written, in order (`=` appended for the attached form). */
  order: string[];
  /** argv without the port tokens (for comparing instances). */
  key: string;
  warnings: string[];
}

function typed(spec: FlagSpec, raw: string): string | number | null {
  if (spec.kind === 'string') {
    if (spec.field === 'speculative.algorithm' && !(SPECULATIVE_ALGORITHMS as readonly string[]).includes(raw)) return null;
    return raw;
  }
  if (!/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(raw)) return null;
  const n = Number(raw);
  if (!Number.isFinite(n)) return null;
  if (spec.kind === 'int' && !Number.isInteger(n)) return null;
  // Only when rendering it gives the same text back ("0.880" stays verbatim in extraArgs).
  if (String(n) !== raw) return null;
  return n;
}

/**
 * Split a server's argv into typed fields, port and verbatim extra args. The values of secret flags
 * become references (`refFor`; default `{"env": "SGLANG_<FLAG>"}`): the argv may be the redacted one.
 */
function parseServerArgv(args: readonly string[], refFor: (flag: string) => SecretRef = defaultRef): ParsedArgv {
  const warnings: string[] = [];
  const at = sglangLaunchIndex(args);
  const launcherOk = at === 3 && args[1] === '-m' && args[2] === 'sglang.launch_server';
  const python = at >= 3 && args[1] === '-m' ? args[0] : DEFAULT_PYTHON;
  const rest = at >= 0 ? args.slice(at) : [];
  const fields: Record<string, string | number | boolean> = {};
  const extra: ArgValue[] = [];
  const order: string[] = [];
  let apiKey: SecretRef | undefined;
  let port: number | null = null;
  const keyTokens: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const tok = rest[i];
    const eq = tok.startsWith('--') ? tok.indexOf('=') : -1;
    const written = eq > 2 ? tok.slice(0, eq) : tok;
    const flag = tok.startsWith('--') ? canonicalFlag(written) : tok;
    if (tok.startsWith('--')) order.push(eq > 2 ? written + '=' : written);
    if (flag === '--port') {
      const v = eq > 2 ? tok.slice(eq + 1) : rest[++i];
      port = v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
      continue;
    }
    if (tok.startsWith('--') && isSecretFlag(written)) {
      const hasValue = eq > 2 || (rest[i + 1] !== undefined && !rest[i + 1].startsWith('--'));
      if (!hasValue) {
        extra.push(tok);
        keyTokens.push(tok);
        continue;
      }
      if (eq <= 2) i++;
      const ref = refFor(written);
      keyTokens.push(written, JSON.stringify(ref));
      if (flag === '--api-key' && !apiKey) apiKey = ref;
      else if (eq > 2) {
        // `--flag=secret`: the reference stands for the whole token's value; keep the attached spelling.
        extra.push(written, ref);
        order[order.length - 1] = written;
      } else extra.push(written, ref);
      continue;
    }
    const spec = FLAG_BY_NAME.get(flag);
    if (spec && spec.kind === 'bool' && eq < 0) {
      fields[spec.field] = true;
      keyTokens.push(tok);
      continue;
    }
    if (spec && spec.kind !== 'bool') {
      const v = eq > 2 ? tok.slice(eq + 1) : rest[i + 1];
      const tv = v === undefined ? null : typed(spec, v);
      if (tv !== null && !(spec.field in fields)) {
        fields[spec.field] = tv;
        keyTokens.push(tok);
        if (eq <= 2) keyTokens.push(rest[++i]);
        continue;
      }
      if (v === undefined || typeof typed({ ...spec, kind: 'string' }, v) !== 'string' || spec.field in fields)
        warnings.push(`${flag} ${v ?? ''}: kept verbatim in extraArgs`);
    }
    extra.push(tok);
    keyTokens.push(tok);
  }
  return { python, launcherOk, fields, port, extra, apiKey, order, key: JSON.stringify([python, ...keyTokens]), warnings };
}

/** `--admin-api-key` → {"env": "SGLANG_ADMIN_API_KEY"}; `--api-key` → {"env": "SGLANG_API_KEY"}. */
function defaultRef(flag: string): SecretRef {
  return {
    env:
      'SGLANG_' +
      canonicalFlag(flag)
        .replace(/^--/, '')
        .replace(/[^A-Za-z0-9]+/g, '_')
        .toUpperCase(),
  };
}

/** A logFile template (`{gpu}`, `{port}`) that gives every server its own log, or null. */
function logTemplate(servers: Array<{ log: string; gpu: number; port: number }>): string | null {
  if (servers.length === 1) return servers[0].log.replace(/\{(gpu|port)\}/g, '{{$1}}') === servers[0].log ? servers[0].log : null;
  for (const [key, val] of [
    ['gpu', (s: { gpu: number }) => s.gpu],
    ['port', (s: { port: number }) => s.port],
  ] as const) {
    const f = servers[0];
    const v = String(val(f));
    const at = f.log.lastIndexOf(v);
    if (at < 0) continue;
    const t = f.log.slice(0, at) + `{${key}}` + f.log.slice(at + v.length);
    if (servers.every((s) => t.split(`{${key}}`).join(String(val(s))) === s.log)) return t;
  }
  return null;
}

/** The GPUs a server runs on: as probed, else its CUDA_VISIBLE_DEVICES. */
function gpuOf(s: SglangServer): number[] {
  if (s.gpus.length) return s.gpus;
  if (s.cudaVisibleDevices)
    return s.cudaVisibleDevices
      .split(',')
      .map((x) => Number.parseInt(x, 10))
      .filter((n) => Number.isInteger(n) && n >= 0);
  return [];
}

function logDirOf(s: SglangServer): string {
  return s.logFile ? dirOf(s.logFile) : '';
}

/** What the groups of one capture share: each server's parsed argv, the secrets met so far, the warnings. */
interface Capture {
  parsed: Map<number, ParsedArgv>;
  extras: CaptureExtras;
  warnings: string[];
  refFor(s: SglangServer, what: string, base: string): SecretRef;
  isSingleGpu(s: SglangServer): boolean;
}

/**
 * Running servers → a profile that reproduces every one of them: one group per kind of server. Several
 * single-GPU servers with the same flags on consecutive ports become one per-gpu group; any other server
 * becomes a single-layout group. Flag spelling and order are kept (argOrder), unknown flags go to
 * extraArgs verbatim, log paths and directories are kept, and secrets become references.
 */
export function captureProfile(servers: SglangServer[], extras: CaptureExtras = {}): CaptureResult {
  const warnings: string[] = [];
  const list = servers.filter((s) => sglangLaunchIndex(s.args) >= 0).sort((a, b) => a.port - b.port || a.pid - b.pid);
  if (!list.length) throw new Error('No SGLang server to capture.');
  // Secret references: one name per distinct value (SGLANG_API_KEY, SGLANG_API_KEY_2, ...).
  const secrets: CapturedSecret[] = [];
  const refFor = (s: SglangServer, what: string, base: string): SecretRef => {
    const value = what.startsWith('env ') ? undefined : serverSecrets(s).get(what);
    let found = secrets.find((x) => x.what === what && value !== undefined && x.value === value);
    if (!found) {
      let name = base;
      for (let k = 2; secrets.some((x) => x.name === name); k++) name = `${base}_${k}`;
      found = { name, what, ports: [], value };
      secrets.push(found);
    }
    if (!found.ports.includes(s.port)) found.ports.push(s.port);
    return { env: found.name };
  };
  const parsed = new Map(list.map((s) => [s.pid, parseServerArgv(s.args, (flag) => refFor(s, flag, secretName(defaultRef(flag))))]));
  const isSingleGpu = (s: SglangServer) => {
    const f = parsed.get(s.pid)!.fields;
    return gpusPerServer(f as never) === 1 && gpuOf(s).length <= 1;
  };
  const cap: Capture = { parsed, extras, warnings, refFor, isSingleGpu };
  const out: LaunchProfile[] = [];
  for (const group of groupServers(list, cap)) {
    // A per-gpu group needs one log template for all its servers; otherwise capture them one by one.
    const logs = group.map((s) => ({ log: s.logFile ?? '', gpu: gpuOf(s)[0] ?? -1, port: s.port }));
    const known = logs.filter((l) => l.log).length;
    if (group.length > 1 && known > 0 && (known < logs.length || !logTemplate(logs))) {
      for (const s of group) out.push(captureGroup([s], cap));
    } else out.push(captureGroup(group, cap));
  }

  const captured = out.flatMap((g) =>
    list.filter((s) => s.port >= g.basePort && s.port < g.basePort + (g.layout === 'per-gpu' ? (g.gpus as number[]).length : 1)),
  );
  const desc = `Captured from ${list.length} running server${list.length > 1 ? 's' : ''} (ports ${list.map((s) => s.port).join(', ')}).`;
  for (const g of out) g.description = desc;
  return { profile: out[0], groups: out, captured: [...new Set(captured.map((s) => s.pid))], secrets, warnings };
}

/** Runs of single-GPU servers with the same argv (port aside), directory, log dir and env on consecutive ports. */
function groupServers(list: SglangServer[], cap: Capture): SglangServer[][] {
  const { parsed, extras, isSingleGpu } = cap;
  const envKey = (s: SglangServer) =>
    JSON.stringify([extras.virtualEnv?.[s.pid] ?? null, Object.entries(extras.env?.[s.pid] ?? {}).sort(), extras.secretEnv?.[s.pid] ?? []]);
  const groups: SglangServer[][] = [];
  for (const s of list) {
    const last = groups[groups.length - 1];
    const prev = last?.[last.length - 1];
    if (
      prev &&
      isSingleGpu(s) &&
      isSingleGpu(prev) &&
      parsed.get(s.pid)!.key === parsed.get(prev.pid)!.key &&
      s.port === prev.port + 1 &&
      (s.cwd ?? '') === (prev.cwd ?? '') &&
      logDirOf(s) === logDirOf(prev) &&
      envKey(s) === envKey(prev) &&
      (gpuOf(s)[0] === undefined || last.every((x) => gpuOf(x)[0] !== gpuOf(s)[0]))
    ) {
      last.push(s);
    } else groups.push([s]);
  }
  return groups;
}

/** The GPUs of a group: one per server of a per-gpu group, else the first server's (assumed 0.. when unknown). */
function groupGpus(group: SglangServer[], pa: ParsedArgv, perGpu: boolean, warnings: string[]): number[] {
  const first = group[0];
  let gpus: number[] = [];
  if (!perGpu) {
    gpus = gpuOf(first);
    const need = gpusPerServer(pa.fields as never);
    if (!gpus.length) {
      gpus = Array.from({ length: need }, (_, i) => i);
      warnings.push(`GPUs of the server on port ${first.port} are unknown (no CUDA_VISIBLE_DEVICES); assuming ${gpus.join(',')}.`);
    }
  } else {
    const seen = new Set<number>();
    group.forEach((s, k) => {
      let g = gpuOf(s)[0];
      if (g === undefined || seen.has(g)) {
        warnings.push(`GPU of the server on port ${s.port} is unknown; assuming GPU ${k}.`);
        g = k;
      }
      seen.add(g);
      gpus.push(g);
    });
  }
  return gpus;
}

/** The speculative config, and the extra args (a speculative flag without --speculative-algorithm stays one). */
function speculativeOf(pa: ParsedArgv): { spec: SpeculativeConfig | undefined; extra: ArgValue[] } {
  const f = pa.fields;
  const spec: SpeculativeConfig | undefined = f['speculative.algorithm']
    ? stripUndef({
        algorithm: f['speculative.algorithm'] as SpeculativeAlgorithm,
        numSteps: f['speculative.numSteps'] as number | undefined,
        eagleTopk: f['speculative.eagleTopk'] as number | undefined,
        numDraftTokens: f['speculative.numDraftTokens'] as number | undefined,
        draftModelPath: f['speculative.draftModelPath'] as string | undefined,
      })
    : undefined;
  const extra = [...pa.extra];
  for (const k of ['speculative.numSteps', 'speculative.eagleTopk', 'speculative.numDraftTokens', 'speculative.draftModelPath']) {
    if (!spec && f[k] !== undefined) {
      const fs = FLAG_SPECS.find((x) => x.field === k)!;
      extra.push(fs.flag, String(f[k]));
    }
  }
  return { spec, extra };
}

/** The group's log file template, when its servers' logs are not where the profile would put them anyway. */
function groupLogFile(group: SglangServer[], gpus: number[], perGpu: boolean, warnings: string[]): string | undefined {
  const first = group[0];
  let logFile: string | undefined;
  if (group.every((s) => s.logFile)) {
    const t = logTemplate(group.map((s, k) => ({ log: s.logFile!, gpu: gpus[k], port: s.port })));
    const defaultName = perGpu ? `sglang_gpu${gpus[0]}.log` : `sglang_port${first.port}.log`;
    if (t && !(first.logFile!.endsWith('/' + defaultName) && t.startsWith(logDirOf(first) + '/'))) logFile = t;
  } else
    warnings.push(
      `The log file of the server on port ${first.port} is unknown (output not redirected to a file); the profile writes it to ~/logs.`,
    );
  return logFile;
}

/** One group of servers → one profile (its warnings added to the capture's). */
function captureGroup(group: SglangServer[], cap: Capture): LaunchProfile {
  const { extras, warnings } = cap;
  const first = group[0];
  const pa = cap.parsed.get(first.pid)!;
  warnings.push(...pa.warnings.map((w) => `${w} (port ${first.port})`));
  if (!pa.launcherOk)
    warnings.push(
      `The server on port ${first.port} was not started as "python -m sglang.launch_server" (${first.args.slice(0, 3).join(' ')}); ` +
        `the profile starts it that way with ${pa.python}.`,
    );
  const perGpu = cap.isSingleGpu(first);
  const gpus = groupGpus(group, pa, perGpu, warnings);
  const f = pa.fields;
  const { spec, extra } = speculativeOf(pa);
  const logFile = groupLogFile(group, gpus, perGpu, warnings);
  const modelPath = f.modelPath as string | undefined;
  if (modelPath === undefined)
    throw new Error(`The server on port ${first.port} has no --model-path (a --config file is not captured into typed fields).`);
  const env: Record<string, ArgValue> = { ...(extras.env?.[first.pid] ?? {}) };
  for (const k of extras.secretEnv?.[first.pid] ?? []) env[k] = cap.refFor(first, `env ${k}`, k);
  const profile: LaunchProfile = stripUndef({
    name: extras.name,
    description: undefined,
    modelPath,
    servedModelName: f.servedModelName as string | undefined,
    gpus,
    layout: perGpu ? 'per-gpu' : 'single',
    basePort: first.port,
    host: f.host as string | undefined,
    tp: f.tp as number | undefined,
    dp: f.dp as number | undefined,
    memFractionStatic: f.memFractionStatic as number | undefined,
    contextLength: f.contextLength as number | undefined,
    maxRunningRequests: f.maxRunningRequests as number | undefined,
    chunkedPrefillSize: f.chunkedPrefillSize as number | undefined,
    cudaGraphMaxBs: f.cudaGraphMaxBs as number | undefined,
    quantization: f.quantization as string | undefined,
    kvCacheDtype: f.kvCacheDtype as string | undefined,
    speculative: spec,
    reasoningParser: f.reasoningParser as string | undefined,
    enableHierarchicalCache: f.enableHierarchicalCache as boolean | undefined,
    enableMetrics: f.enableMetrics as boolean | undefined,
    attentionBackend: f.attentionBackend as string | undefined,
    decodeLogInterval: f.decodeLogInterval as number | undefined,
    trustRemoteCode: f.trustRemoteCode as boolean | undefined,
    pp: f.pp as number | undefined,
    ep: f.ep as number | undefined,
    nnodes: f.nnodes as number | undefined,
    enableDpAttention: f.enableDpAttention as boolean | undefined,
    apiKey: pa.apiKey,
    extraArgs: extra,
    env,
    python: pa.python === DEFAULT_PYTHON ? undefined : pa.python,
    venv: extras.virtualEnv?.[first.pid],
    workDir: first.cwd ?? undefined,
    logDir: logDirOf(first) || undefined,
    logFile,
  });
  if (!perGpu && profile.tp === undefined && profile.dp === undefined && gpus.length > 1)
    warnings.push(`The server on port ${first.port} runs on GPUs ${gpus.join(',')} without --tp-size/--dp-size.`);
  // Keep the original spelling and order of the flags when the default rendering would differ.
  const port = first.port;
  const wanted = withoutPortArgs(first.args);
  let plan: InstancePlan | undefined;
  try {
    plan = planInstances(profile, gpus)[0];
  } catch {
    plan = undefined;
  }
  const rendered = (p: LaunchProfile) => withoutPortArgs(redactRefs(instanceArgv(p, port, plan ? { tp: plan.tp, dp: plan.dp } : {})));
  if (JSON.stringify(rendered(profile)) !== JSON.stringify(wanted)) {
    profile.argOrder = pa.order;
    if (JSON.stringify(rendered(profile)) !== JSON.stringify(wanted))
      warnings.push(`The launch of port ${port} will differ from its original command line: ${wanted.slice(3).join(' ')}`);
  }
  return profile;
}

/** Secret markers of a rendered argv shown as the redacted node argv shows them. */
function redactRefs(argv: string[]): string[] {
  return argv.map((a) =>
    a.startsWith(SECRET_MARK) ? REDACTED : a.includes('=' + SECRET_MARK) ? a.slice(0, a.indexOf('=') + 1) + REDACTED : a,
  );
}

/** argv without its `--port N` / `--port=N`. */
function withoutPortArgs(args: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (i >= 3 && args[i].startsWith('--') && canonicalFlag(args[i].split('=')[0]) === '--port') {
      if (!args[i].includes('=')) i++;
      continue;
    }
    out.push(args[i]);
  }
  return out;
}

/** Capture: turn discovered servers back into a profile (see captureProfile). */
export function profileFromServers(servers: SglangServer[]): LaunchProfile {
  return captureProfile(servers).profile;
}

function groupJson(p: LaunchProfile, fields: readonly string[]): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const k of fields) {
    const v = (p as unknown as Record<string, unknown>)[k];
    if (v === undefined) continue;
    if (k === 'extraArgs' && Array.isArray(v) && v.length === 0) continue;
    if (k === 'env' && isObject(v) && Object.keys(v).length === 0) continue;
    o[k] = v;
  }
  return o;
}

/** A profile as the JSON written to `.gpu-sessions/launch/*.json` (defaults left out); several groups → `groups`. */
export function profileToJson(p: LaunchProfile | LaunchProfile[]): string {
  const groups = Array.isArray(p) ? p : [p];
  if (groups.length === 1) return JSON.stringify(groupJson(groups[0], PROFILE_FIELDS), null, 2) + '\n';
  const o: Record<string, unknown> = groupJson(groups[0], ['$schema', 'name', 'description']);
  o.groups = groups.map((g) => groupJson(g, GROUP_FIELDS));
  return JSON.stringify(o, null, 2) + '\n';
}

/**
 * Argv as a comparable list: launcher, then flags normalized (`--flag=value` → `--flag value`, aliases →
 * the rendered spelling), `--port` removed. Two argvs that start the same server compare equal.
 */
export function normalizeArgv(args: readonly string[]): string[] {
  const p = parseServerArgv(args);
  const out = [p.python, '-m', 'sglang.launch_server'];
  for (const spec of FLAG_SPECS) {
    const v = p.fields[spec.field];
    if (v === undefined) continue;
    if (spec.kind === 'bool') out.push(spec.flag);
    else out.push(spec.flag, String(v));
  }
  return [...out, ...p.extra.map((a) => (typeof a === 'string' ? a : `<secret:${secretName(a)}>`))];
}
