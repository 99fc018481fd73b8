/**
 * Launch profiles: versioned workspace files (`.gpu-sessions/launch/*.json`) describing how to start
 * SGLang on a node — validated with the field named in every error, rendered to a POSIX sh launch
 * script like the seeds' `launch_tuned.sh` (one server per GPU on ports base+i, or one server with
 * --tp-size/--dp-size), and captured back from the argv of running servers.
 *
 * Every value that goes into the script is shq-quoted; `~` / `~/x` in path fields expand to the
 * remote home ("$HOME"/'x'), nothing else is ever expanded. The script is deterministic (no
 * timestamps), so the diff against the node's last launched script shows only real changes.
 *
 * No `vscode` import.
 */
import { shComment, shq } from '../remote/quote';
import { SglangServer, serverSecrets, sglangLaunchIndex } from '../sglang/serverArgv';
import { canonicalFlag, isSecretFlag, resolveFlag } from '../sglang/flags';
import { REDACTED, isSecretName } from '../util/redact';

// ------------------------------------------------------------------------------------ types

export const SPECULATIVE_ALGORITHMS = ['EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM', 'DFLASH'] as const;
export type SpeculativeAlgorithm = (typeof SPECULATIVE_ALGORITHMS)[number];

/** Suggestions only (VS Code completion); other values are passed through. */
export const QUANTIZATION_SUGGESTIONS = [
  'fp8',
  'awq',
  'gptq',
  'marlin',
  'gptq_marlin',
  'awq_marlin',
  'bitsandbytes',
  'gguf',
  'modelopt',
  'modelopt_fp8',
  'modelopt_fp4',
  'w8a8_int8',
  'w8a8_fp8',
  'moe_wna16',
  'mxfp4',
  'compressed-tensors',
];
export const KV_CACHE_DTYPE_SUGGESTIONS = ['auto', 'fp8_e5m2', 'fp8_e4m3', 'bf16', 'bfloat16', 'fp4_e2m1'];
export const ATTENTION_BACKEND_SUGGESTIONS = [
  'flashinfer',
  'fa3',
  'fa4',
  'triton',
  'torch_native',
  'flashmla',
  'cutlass_mla',
  'trtllm_mla',
  'trtllm_mha',
  'aiter',
];
export const REASONING_PARSER_SUGGESTIONS = [
  'qwen3',
  'qwen3-thinking',
  'deepseek-r1',
  'deepseek-v3',
  'glm45',
  'gpt-oss',
  'kimi',
  'minimax',
  'step3',
];

export interface SpeculativeConfig {
  /** --speculative-algorithm */
  algorithm: SpeculativeAlgorithm;
  /** --speculative-num-steps */
  numSteps?: number;
  /** --speculative-eagle-topk */
  eagleTopk?: number;
  /** --speculative-num-draft-tokens */
  numDraftTokens?: number;
  /** --speculative-draft-model-path */
  draftModelPath?: string;
}

export type Layout = 'per-gpu' | 'single';

/**
 * A secret the profile refers to instead of holding it: `{"env": "SGLANG_API_KEY"}` (an environment
 * variable of the machine that launches; the CLI also takes `--secret NAME=@FILE`) or `{"secret": "NAME"}`
 * (VS Code SecretStorage; the CLI reads the environment variable NAME or `--secret NAME=@FILE`).
 */
export type SecretRef = { env: string } | { secret: string };
/** An argument or environment value: literal text, or a secret reference. */
export type ArgValue = string | SecretRef;

export function isSecretRef(v: unknown): v is SecretRef {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const k = Object.keys(v);
  return k.length === 1 && (k[0] === 'env' || k[0] === 'secret') && typeof (v as Record<string, unknown>)[k[0]] === 'string';
}

/** The name a secret is supplied and stored under (`~/.gpu-sessions/secrets/<name>` on the node). */
export function secretName(r: SecretRef): string {
  return 'env' in r ? r.env : r.secret;
}

export interface LaunchProfile {
  /** JSON schema reference (ignored). */
  $schema?: string;
  /** Short name, used in the script file name on the node. Default: the profile file's name. */
  name?: string;
  description?: string;
  /** --model-path: a directory on the node, or a Hugging Face repo id. `~/x` is the remote home. */
  modelPath: string;
  /** --served-model-name */
  servedModelName?: string;
  /** GPU indices, or 'all' (every GPU nvidia-smi lists). */
  gpus: number[] | 'all';
  /**
   * 'per-gpu': one server per GPU (CUDA_VISIBLE_DEVICES=i, port basePort+k, log sglang_gpu{i}.log);
   * 'single': one server with tp/dp over all of them.
   */
  layout: Layout;
  /** Port of the first instance; instance k listens on basePort + k. */
  basePort: number;
  /** --host */
  host?: string;
  /** --tp-size (single layout) */
  tp?: number;
  /** --dp-size (single layout) */
  dp?: number;
  memFractionStatic?: number;
  contextLength?: number;
  maxRunningRequests?: number;
  chunkedPrefillSize?: number;
  cudaGraphMaxBs?: number;
  quantization?: string;
  kvCacheDtype?: string;
  speculative?: SpeculativeConfig;
  reasoningParser?: string;
  enableHierarchicalCache?: boolean;
  enableMetrics?: boolean;
  attentionBackend?: string;
  decodeLogInterval?: number;
  trustRemoteCode?: boolean;
  /** --pp-size */
  pp?: number;
  /** --ep-size (experts are spread over the TP GPUs: no extra GPUs) */
  ep?: number;
  /** --nnodes: the server spans this many nodes; this node runs its share of the GPUs. */
  nnodes?: number;
  /** --enable-dp-attention: DP ranks share the TP GPUs (GPU count = tp, not tp × dp). */
  enableDpAttention?: boolean;
  /** --api-key, as a reference: the key itself never appears in the profile or the launch script. */
  apiKey?: SecretRef;
  /** Further launch_server arguments, verbatim, after the typed flags; a secret's value is a reference. */
  extraArgs: ArgValue[];
  /** Environment variables exported before the servers start; secret ones as references. */
  env: Record<string, ArgValue>;
  /**
   * Written by capture when the original command line spelled or ordered its flags differently from the
   * default rendering: the flags as they were written, in order (`--tp`, `--port`, `--log-level`, ...; a
   * trailing `=` for the `--flag=value` form). Flags not listed follow in the default order.
   */
  argOrder?: string[];
  /** Log file of each instance instead of logDir's default names: `{gpu}` and `{port}` are replaced. */
  logFile?: string;
  /** Interpreter that runs `-m sglang.launch_server`. Default python3 (from PATH, after the venv is activated). */
  python?: string;
  /** Virtual environment directory: `<venv>/bin/activate` is sourced first. */
  venv?: string;
  /** Directory the servers run in. Default `~`. */
  workDir?: string;
  /** Directory of the per-instance logs. Default `~/logs`; relative = under workDir. */
  logDir?: string;
}

// ------------------------------------------------------------------------------------ flags

type FlagKind = 'string' | 'int' | 'number' | 'bool';

interface FlagSpec {
  /** Profile field; `speculative.x` for the nested ones. */
  field: string;
  /** Flag as rendered. */
  flag: string;
  /** Other spellings accepted on capture. */
  aliases?: string[];
  kind: FlagKind;
}

/**
 * Typed flags in rendering order — the order of the seeds' launch_tuned.sh (so capturing the seeds'
 * servers and rendering again gives the very same argv). `--port` follows `--host`.
 */
export const FLAG_SPECS: readonly FlagSpec[] = [
  { field: 'modelPath', flag: '--model-path', aliases: ['--model'], kind: 'string' },
  { field: 'servedModelName', flag: '--served-model-name', kind: 'string' },
  { field: 'host', flag: '--host', kind: 'string' },
  { field: 'tp', flag: '--tp-size', aliases: ['--tp', '--tensor-parallel-size'], kind: 'int' },
  { field: 'dp', flag: '--dp-size', aliases: ['--dp', '--data-parallel-size'], kind: 'int' },
  { field: 'memFractionStatic', flag: '--mem-fraction-static', kind: 'number' },
  { field: 'contextLength', flag: '--context-length', kind: 'int' },
  { field: 'reasoningParser', flag: '--reasoning-parser', kind: 'string' },
  { field: 'trustRemoteCode', flag: '--trust-remote-code', kind: 'bool' },
  { field: 'speculative.algorithm', flag: '--speculative-algorithm', aliases: ['--speculative-algo'], kind: 'string' },
  { field: 'speculative.numSteps', flag: '--speculative-num-steps', kind: 'int' },
  { field: 'speculative.eagleTopk', flag: '--speculative-eagle-topk', kind: 'int' },
  { field: 'speculative.numDraftTokens', flag: '--speculative-num-draft-tokens', kind: 'int' },
  { field: 'speculative.draftModelPath', flag: '--speculative-draft-model-path', aliases: ['--speculative-draft-model'], kind: 'string' },
  { field: 'enableMetrics', flag: '--enable-metrics', kind: 'bool' },
  { field: 'maxRunningRequests', flag: '--max-running-requests', kind: 'int' },
  { field: 'chunkedPrefillSize', flag: '--chunked-prefill-size', kind: 'int' },
  { field: 'cudaGraphMaxBs', flag: '--cuda-graph-max-bs', kind: 'int' },
  { field: 'enableHierarchicalCache', flag: '--enable-hierarchical-cache', kind: 'bool' },
  { field: 'quantization', flag: '--quantization', kind: 'string' },
  { field: 'kvCacheDtype', flag: '--kv-cache-dtype', kind: 'string' },
  { field: 'attentionBackend', flag: '--attention-backend', kind: 'string' },
  { field: 'decodeLogInterval', flag: '--decode-log-interval', kind: 'int' },
  { field: 'pp', flag: '--pp-size', aliases: ['--pipeline-parallel-size', '--pp'], kind: 'int' },
  { field: 'ep', flag: '--ep-size', aliases: ['--expert-parallel-size', '--ep'], kind: 'int' },
  { field: 'nnodes', flag: '--nnodes', kind: 'int' },
  { field: 'enableDpAttention', flag: '--enable-dp-attention', kind: 'bool' },
];

/** Flags set by the layout itself, never through extraArgs. */
const RESERVED_FLAGS = ['--port', '--model-path', '--model'];

const FLAG_BY_NAME = new Map<string, FlagSpec>();
for (const s of FLAG_SPECS) for (const n of [s.flag, ...(s.aliases ?? [])]) FLAG_BY_NAME.set(n, s);

/** Top-level fields a profile may have (the JSON schema lists the same; a unit test checks). */
export const PROFILE_FIELDS = [
  '$schema',
  'name',
  'description',
  'modelPath',
  'servedModelName',
  'gpus',
  'layout',
  'basePort',
  'host',
  'tp',
  'dp',
  'memFractionStatic',
  'contextLength',
  'maxRunningRequests',
  'chunkedPrefillSize',
  'cudaGraphMaxBs',
  'quantization',
  'kvCacheDtype',
  'speculative',
  'reasoningParser',
  'enableHierarchicalCache',
  'enableMetrics',
  'attentionBackend',
  'decodeLogInterval',
  'trustRemoteCode',
  'pp',
  'ep',
  'nnodes',
  'enableDpAttention',
  'apiKey',
  'extraArgs',
  'env',
  'python',
  'venv',
  'workDir',
  'logDir',
  'logFile',
  'argOrder',
  'groups',
] as const;
/** Fields of one server group (a profile with `groups`); the profile's own name and description apply to all. */
export const GROUP_FIELDS = PROFILE_FIELDS.filter((f) => !['$schema', 'name', 'description', 'groups'].includes(f));
export const SPECULATIVE_FIELDS = ['algorithm', 'numSteps', 'eagleTopk', 'numDraftTokens', 'draftModelPath'] as const;

export const DEFAULT_BASE_PORT = 30000;
export const DEFAULT_PYTHON = 'python3';
export const DEFAULT_WORK_DIR = '~';
export const DEFAULT_LOG_DIR = '~/logs';

// ------------------------------------------------------------------------------------ validation

export interface ValidationResult {
  /** The first (for an old single-group file: the only) server group. */
  profile?: LaunchProfile;
  /** Every server group, each carrying the profile's name and description. */
  groups?: LaunchProfile[];
  errors: string[];
}

function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined) return 'nothing';
  try {
    const s = JSON.stringify(v);
    return s.length > 80 ? s.slice(0, 77) + '...' : s;
  } catch {
    return String(v);
  }
}

/** Levenshtein distance, for "did you mean" hints. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

function closest(word: string, choices: readonly string[]): string | null {
  const lw = word.toLowerCase().replace(/[-_]/g, '');
  for (const c of choices) if (c.toLowerCase().replace(/[-_]/g, '') === lw) return c;
  let best: string | null = null;
  let bestD = Infinity;
  for (const c of choices) {
    const dd = distance(word.toLowerCase(), c.toLowerCase());
    if (dd < bestD) {
      bestD = dd;
      best = c;
    }
  }
  return best !== null && bestD <= Math.max(2, Math.floor(word.length / 3)) ? best : null;
}

/** Characters a value may not contain: NUL cannot be in an argv; CR/LF would make the script unreadable. */
function badChars(s: string): string | null {
  if (s.includes('\0')) return 'a NUL character';
  if (/[\r\n]/.test(s)) return 'a line break';
  return null;
}

class Checker {
  errors: string[] = [];

  err(field: string, msg: string): void {
    this.errors.push(`${field}: ${msg}`);
  }

  string(
    obj: Record<string, unknown>,
    key: string,
    field: string,
    opts: { required?: boolean; nonEmpty?: boolean } = {},
  ): string | undefined {
    const v = obj[key];
    if (v === undefined || v === null) {
      if (opts.required) this.err(field, 'is required');
      return undefined;
    }
    if (typeof v !== 'string') {
      this.err(field, `must be a string (got ${show(v)})`);
      return undefined;
    }
    if ((opts.nonEmpty ?? true) && v.trim() === '') {
      this.err(field, 'must not be empty');
      return undefined;
    }
    const bad = badChars(v);
    if (bad) {
      this.err(field, `must not contain ${bad}`);
      return undefined;
    }
    return v;
  }

  int(obj: Record<string, unknown>, key: string, field: string, min: number, max = Number.MAX_SAFE_INTEGER, note = ''): number | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      this.err(
        field,
        `must be an integer ${max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`}${note} (got ${show(v)})`,
      );
      return undefined;
    }
    return v;
  }

  bool(obj: Record<string, unknown>, key: string, field: string): boolean | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') {
      this.err(field, `must be true or false (got ${show(v)})`);
      return undefined;
    }
    return v;
  }

  unknownKeys(obj: Record<string, unknown>, known: readonly string[], prefix: string): void {
    for (const k of Object.keys(obj)) {
      if (known.includes(k)) continue;
      const hint = closest(k, known);
      this.err(`${prefix}${k}`, `unknown field${hint ? ` (did you mean "${hint}"?)` : ''}`);
    }
  }
}

/** A path field: absolute, `~`, `~/x`, or (where allowed) relative. */
function checkPath(c: Checker, v: string | undefined, field: string, allowRelative: boolean): void {
  if (v === undefined) return;
  if (/^~[^/]/.test(v)) c.err(field, `"${v}": only "~" and "~/..." (the remote home) are expanded; "~user" is not supported`);
  else if (!allowRelative && !v.startsWith('/') && !v.startsWith('~')) c.err(field, `"${v}" must be an absolute path or start with "~/"`);
}

/**
 * Check a parsed profile file. Errors name the field: `speculative.algorithm: "MTP" is not one of ...`.
 * The returned profile has its defaults filled in (layout per-gpu, basePort 30000, gpus all, extraArgs
 * [], env {}).
 */
export function validateProfile(x: unknown): ValidationResult {
  if (!isObject(x)) return { errors: [`(profile): must be a JSON object (got ${Array.isArray(x) ? 'an array' : show(x)})`] };
  if (x.groups === undefined) {
    const one = validateOne(
      x,
      PROFILE_FIELDS.filter((f) => f !== 'groups'),
    );
    return one.profile ? { ...one, groups: [one.profile] } : one;
  }
  // Several server groups: { name?, description?, groups: [ {group}, ... ] }
  const errors: string[] = [];
  const top = ['$schema', 'name', 'description', 'groups'];
  for (const k of Object.keys(x))
    if (!top.includes(k)) {
      const hint = closest(k, top);
      errors.push(
        `${k}: ${GROUP_FIELDS.includes(k as never) ? 'belongs inside each entry of "groups"' : `unknown field${hint ? ` (did you mean "${hint}"?)` : ''}`}`,
      );
    }
  const head = validateOne({ modelPath: '-', name: x.name, description: x.description }, ['modelPath', 'name', 'description']);
  errors.push(...head.errors);
  if (x.$schema !== undefined && typeof x.$schema !== 'string') errors.push('$schema: must be a string');
  if (!Array.isArray(x.groups) || x.groups.length === 0) {
    errors.push(
      `groups: must be a non-empty list of server groups, each like {"modelPath": "...", "gpus": [0], ...} (got ${show(x.groups)})`,
    );
    return { errors };
  }
  const groups: LaunchProfile[] = [];
  x.groups.forEach((g, i) => {
    if (!isObject(g)) return errors.push(`groups[${i}]: must be an object (got ${show(g)})`);
    const r = validateOne(g, GROUP_FIELDS);
    errors.push(...r.errors.map((e) => `groups[${i}].${e}`));
    if (r.profile)
      groups.push(
        stripUndef({
          ...r.profile,
          $schema: typeof x.$schema === 'string' ? x.$schema : undefined,
          name: head.profile?.name,
          description: head.profile?.description,
        }),
      );
  });
  // Two groups must not listen on the same port.
  const taken: Array<{ i: number; ports: number[] }> = [];
  groups.forEach((g, i) => {
    const n = g.layout === 'single' ? 1 : Array.isArray(g.gpus) ? g.gpus.length : 1;
    const ports = Array.from({ length: n }, (_, k) => g.basePort + k);
    const clash = taken.find((t) => t.ports.some((q) => ports.includes(q)));
    if (clash) errors.push(`groups[${i}].basePort: port ${ports.find((q) => clash.ports.includes(q))} is also used by groups[${clash.i}]`);
    taken.push({ i, ports });
  });
  if (errors.length) return { errors };
  return { profile: groups[0], groups, errors: [] };
}

/** GPUs one server uses on this node: tp × pp × dp (dp not counted with --enable-dp-attention), shared over nnodes. */
export function gpusPerServer(o: { tp?: number; dp?: number; pp?: number; nnodes?: number; enableDpAttention?: boolean }): number {
  const total = (o.tp ?? 1) * (o.enableDpAttention ? 1 : (o.dp ?? 1)) * (o.pp ?? 1);
  return Math.max(1, Math.floor(total / Math.max(1, o.nnodes ?? 1)));
}

function validateOne(x: Record<string, unknown>, known: readonly string[]): ValidationResult {
  const c = new Checker();
  c.unknownKeys(x, known, '');

  const name = c.string(x, 'name', 'name');
  if (name !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._ -]{0,79}$/.test(name))
    c.err('name', `"${name}" must be 1-80 letters, digits, ".", "_", "-" or spaces, starting with a letter or digit`);
  const description = c.string(x, 'description', 'description', { nonEmpty: false });
  const modelPath = c.string(x, 'modelPath', 'modelPath', { required: true });
  checkPath(c, modelPath, 'modelPath', true);
  const servedModelName = c.string(x, 'servedModelName', 'servedModelName');

  // gpus
  let gpus: number[] | 'all' = 'all';
  if (x.gpus !== undefined) {
    if (x.gpus === 'all') gpus = 'all';
    else if (Array.isArray(x.gpus)) {
      const list: number[] = [];
      x.gpus.forEach((g, i) => {
        if (typeof g !== 'number' || !Number.isInteger(g) || g < 0 || g > 1023)
          c.err(`gpus[${i}]`, `must be a GPU index (an integer >= 0) (got ${show(g)})`);
        else if (list.includes(g)) c.err(`gpus[${i}]`, `GPU ${g} is listed twice`);
        else list.push(g);
      });
      if (x.gpus.length === 0) c.err('gpus', 'must list at least one GPU index, or be "all"');
      gpus = list;
    } else c.err('gpus', `must be "all" or a list of GPU indices like [0, 1, 2, 3] (got ${show(x.gpus)})`);
  }

  let layout: Layout = 'per-gpu';
  if (x.layout !== undefined) {
    if (x.layout === 'per-gpu' || x.layout === 'single') layout = x.layout;
    else
      c.err(
        'layout',
        `${show(x.layout)} is not one of per-gpu, single${typeof x.layout === 'string' ? hintOf(x.layout, ['per-gpu', 'single']) : ''}`,
      );
  }
  const basePort = c.int(x, 'basePort', 'basePort', 1, 65535) ?? (x.basePort === undefined ? DEFAULT_BASE_PORT : undefined);
  if (Array.isArray(gpus) && basePort !== undefined && layout === 'per-gpu' && basePort + gpus.length - 1 > 65535) {
    c.err('basePort', `${basePort} + ${gpus.length} instances runs past port 65535`);
  }
  const host = c.string(x, 'host', 'host');
  if (host !== undefined && /\s/.test(host)) c.err('host', `"${host}" must not contain spaces`);
  const tp = c.int(x, 'tp', 'tp', 1, 1024);
  const dp = c.int(x, 'dp', 'dp', 1, 1024);
  if (layout === 'per-gpu') {
    if (tp !== undefined && tp > 1)
      c.err('tp', `is ${tp}, but layout "per-gpu" runs one single-GPU server per GPU; use layout "single" for tensor parallelism`);
    if (dp !== undefined && dp > 1)
      c.err('dp', `is ${dp}, but layout "per-gpu" already is data parallelism by hand; use layout "single" for --dp-size`);
  }
  const pp = c.int(x, 'pp', 'pp', 1, 1024);
  const ep = c.int(x, 'ep', 'ep', 1, 1024);
  const nnodes = c.int(x, 'nnodes', 'nnodes', 1, 1024);
  const enableDpAttention = c.bool(x, 'enableDpAttention', 'enableDpAttention');
  if (layout === 'per-gpu') {
    for (const [k, v] of [
      ['pp', pp],
      ['nnodes', nnodes],
    ] as const)
      if (v !== undefined && v > 1) c.err(k, `is ${v}, but layout "per-gpu" runs one single-GPU server per GPU; use layout "single"`);
  }
  if (layout === 'single' && Array.isArray(gpus) && gpus.length && (tp !== undefined || dp !== undefined)) {
    const o = { tp, dp, pp, nnodes, enableDpAttention };
    const need = gpusPerServer(o);
    const formula = `tp ${tp ?? 1}${enableDpAttention ? '' : ` × dp ${dp ?? 1}`}${pp ? ` × pp ${pp}` : ''}${nnodes ? ` / nnodes ${nnodes}` : ''}`;
    if (tp !== undefined && (dp !== undefined || enableDpAttention) && need !== gpus.length)
      c.err(
        'tp',
        `${formula} = ${need} GPUs, but gpus lists ${gpus.length}${enableDpAttention ? ' (with enableDpAttention the DP ranks share the TP GPUs)' : ''}`,
      );
    else if (gpus.length % need !== 0)
      c.err(tp !== undefined ? 'tp' : 'dp', `${need} does not divide the ${gpus.length} GPUs listed in gpus`);
  }

  let memFractionStatic: number | undefined;
  if (x.memFractionStatic !== undefined && x.memFractionStatic !== null) {
    const v = x.memFractionStatic;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 1)
      c.err('memFractionStatic', `must be a number greater than 0 and at most 1, e.g. 0.88 (got ${show(v)})`);
    else memFractionStatic = v;
  }
  const contextLength = c.int(x, 'contextLength', 'contextLength', 1);
  const maxRunningRequests = c.int(x, 'maxRunningRequests', 'maxRunningRequests', 1);
  let chunkedPrefillSize = c.int(
    x,
    'chunkedPrefillSize',
    'chunkedPrefillSize',
    -1,
    Number.MAX_SAFE_INTEGER,
    ' (-1 disables chunked prefill)',
  );
  if (chunkedPrefillSize === 0) {
    c.err('chunkedPrefillSize', 'must not be 0 (use -1 to disable chunked prefill)');
    chunkedPrefillSize = undefined;
  }
  const cudaGraphMaxBs = c.int(x, 'cudaGraphMaxBs', 'cudaGraphMaxBs', 1);
  const quantization = c.string(x, 'quantization', 'quantization');
  const kvCacheDtype = c.string(x, 'kvCacheDtype', 'kvCacheDtype');
  const reasoningParser = c.string(x, 'reasoningParser', 'reasoningParser');
  const attentionBackend = c.string(x, 'attentionBackend', 'attentionBackend');
  const decodeLogInterval = c.int(x, 'decodeLogInterval', 'decodeLogInterval', 1);
  const enableHierarchicalCache = c.bool(x, 'enableHierarchicalCache', 'enableHierarchicalCache');
  const enableMetrics = c.bool(x, 'enableMetrics', 'enableMetrics');
  const trustRemoteCode = c.bool(x, 'trustRemoteCode', 'trustRemoteCode');

  // speculative
  let speculative: SpeculativeConfig | undefined;
  if (x.speculative !== undefined && x.speculative !== null) {
    const s = x.speculative;
    if (!isObject(s)) c.err('speculative', `must be an object like {"algorithm": "NEXTN", "numSteps": 3} (got ${show(s)})`);
    else {
      c.unknownKeys(s, SPECULATIVE_FIELDS, 'speculative.');
      const alg = s.algorithm;
      let algorithm: SpeculativeAlgorithm | undefined;
      if (alg === undefined || alg === null) c.err('speculative.algorithm', `is required (one of ${SPECULATIVE_ALGORITHMS.join(', ')})`);
      else if (typeof alg !== 'string' || !(SPECULATIVE_ALGORITHMS as readonly string[]).includes(alg)) {
        const isMtp = typeof alg === 'string' && /mtp/i.test(alg);
        const hint = typeof alg === 'string' && !isMtp ? hintOf(alg, SPECULATIVE_ALGORITHMS) : '';
        c.err(
          'speculative.algorithm',
          `${show(alg)} is not one of ${SPECULATIVE_ALGORITHMS.join(', ')}${isMtp ? ' (MTP models run through NEXTN or EAGLE)' : hint}`,
        );
      } else algorithm = alg as SpeculativeAlgorithm;
      const numSteps = c.int(s, 'numSteps', 'speculative.numSteps', 1, 64);
      const eagleTopk = c.int(s, 'eagleTopk', 'speculative.eagleTopk', 1, 64);
      const numDraftTokens = c.int(s, 'numDraftTokens', 'speculative.numDraftTokens', 1, 1024);
      const draftModelPath = c.string(s, 'draftModelPath', 'speculative.draftModelPath');
      checkPath(c, draftModelPath, 'speculative.draftModelPath', true);
      if (algorithm) speculative = stripUndef({ algorithm, numSteps, eagleTopk, numDraftTokens, draftModelPath });
    }
  }

  // extraArgs
  const extraArgs: ArgValue[] = [];
  if (x.extraArgs !== undefined && x.extraArgs !== null) {
    if (!Array.isArray(x.extraArgs))
      c.err('extraArgs', `must be a list of strings like ["--log-level", "info"] (got ${show(x.extraArgs)})`);
    else {
      x.extraArgs.forEach((a, i) => {
        if (isObject(a)) {
          const r = checkRef(c, a, `extraArgs[${i}]`);
          if (r) extraArgs.push(r);
          return;
        }
        if (typeof a !== 'string') return c.err(`extraArgs[${i}]`, `must be a string (got ${show(a)})`);
        const bad = badChars(a);
        if (bad) return c.err(`extraArgs[${i}]`, `must not contain ${bad}`);
        const prev = (x.extraArgs as unknown[])[i - 1];
        const eq = a.startsWith('--') ? a.indexOf('=') : -1;
        if (eq > 2 && isSecretFlag(a.slice(0, eq)) && a.slice(eq + 1) !== '') return c.err(`extraArgs[${i}]`, clearSecret(a.slice(0, eq)));
        if (typeof prev === 'string' && prev.startsWith('--') && !prev.includes('=') && isSecretFlag(prev) && !a.startsWith('--'))
          return c.err(`extraArgs[${i}]`, clearSecret(prev));
        extraArgs.push(a);
      });
    }
  }
  const profileSoFar: Record<string, unknown> = { ...x, speculative };
  const apiKey = x.apiKey === undefined || x.apiKey === null ? undefined : checkRef(c, x.apiKey, 'apiKey');
  extraArgs.forEach((a, i) => {
    if (typeof a !== 'string' || !a.startsWith('--')) return;
    if (apiKey && resolveFlag(a.split('=')[0]) === '--api-key')
      return c.err(`extraArgs[${i}]`, '--api-key is already set by apiKey; give it only once');
    const flag = a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
    if (RESERVED_FLAGS.includes(flag)) {
      c.err(
        `extraArgs[${i}]`,
        `${flag} is set by ${flag === '--port' ? 'basePort (instance k listens on basePort + k)' : 'modelPath'}; remove it from extraArgs`,
      );
      return;
    }
    const spec = FLAG_BY_NAME.get(flag);
    if (spec && getField(profileSoFar, spec.field) !== undefined)
      c.err(`extraArgs[${i}]`, `${flag} is already set by ${spec.field}; give it only once`);
  });

  // env
  const env: Record<string, ArgValue> = {};
  if (x.env !== undefined && x.env !== null) {
    if (!isObject(x.env)) c.err('env', `must be an object of NAME: "value" (got ${show(x.env)})`);
    else {
      for (const [k, v] of Object.entries(x.env)) {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
          c.err(`env.${k}`, 'is not a valid environment variable name (letters, digits and "_", not starting with a digit)');
        else if (k === 'CUDA_VISIBLE_DEVICES') c.err(`env.${k}`, 'is set per instance from gpus and layout; use "gpus" instead');
        else if (isObject(v)) {
          const r = checkRef(c, v, `env.${k}`);
          if (r) env[k] = r;
        } else if (typeof v !== 'string') c.err(`env.${k}`, `must be a string (got ${show(v)}); write numbers in quotes`);
        else if (v.includes('\0')) c.err(`env.${k}`, 'must not contain a NUL character');
        else if (isSecretName(k) && v !== '')
          c.err(
            `env.${k}`,
            `is a secret; the profile must not hold it: write {"env": "${k}"} (or {"secret": "${k}"}) and supply the value at launch`,
          );
        else env[k] = v;
      }
    }
  }

  const python = c.string(x, 'python', 'python');
  if (python !== undefined && /^~[^/]/.test(python)) c.err('python', `"${python}": only "~/..." is expanded`);
  const venv = c.string(x, 'venv', 'venv');
  checkPath(c, venv, 'venv', true);
  const workDir = c.string(x, 'workDir', 'workDir');
  checkPath(c, workDir, 'workDir', false);
  const logDir = c.string(x, 'logDir', 'logDir');
  checkPath(c, logDir, 'logDir', true);
  const logFile = c.string(x, 'logFile', 'logFile');
  checkPath(c, logFile, 'logFile', true);
  let argOrder: string[] | undefined;
  if (x.argOrder !== undefined && x.argOrder !== null) {
    if (!Array.isArray(x.argOrder) || x.argOrder.some((a) => typeof a !== 'string' || !/^--[A-Za-z0-9][A-Za-z0-9_.-]*=?$/.test(a)))
      c.err('argOrder', `must be a list of flags like ["--model-path", "--tp", "--port"] (got ${show(x.argOrder)})`);
    else argOrder = x.argOrder as string[];
  }
  const schema = typeof x.$schema === 'string' ? x.$schema : undefined;
  if (x.$schema !== undefined && typeof x.$schema !== 'string') c.err('$schema', 'must be a string');

  if (c.errors.length || modelPath === undefined || basePort === undefined)
    return { errors: c.errors.length ? c.errors : ['modelPath: is required'] };
  const profile: LaunchProfile = stripUndef({
    $schema: schema,
    name,
    description,
    modelPath,
    servedModelName,
    gpus,
    layout,
    basePort,
    host,
    tp,
    dp,
    memFractionStatic,
    contextLength,
    maxRunningRequests,
    chunkedPrefillSize,
    cudaGraphMaxBs,
    quantization,
    kvCacheDtype,
    speculative,
    reasoningParser,
    enableHierarchicalCache,
    enableMetrics,
    attentionBackend,
    decodeLogInterval,
    trustRemoteCode,
    pp,
    ep,
    nnodes,
    enableDpAttention,
    apiKey,
    extraArgs,
    env,
    python,
    venv,
    workDir,
    logDir,
    logFile,
    argOrder,
  }) as LaunchProfile;
  return { profile, errors: [] };
}

function clearSecret(flag: string): string {
  return `the value of ${flag} is a secret; the profile must not hold it: write a reference {"env": "NAME"} or {"secret": "NAME"} in its place and supply the value at launch`;
}

/** A secret reference {"env": "NAME"} / {"secret": "NAME"}, or an error naming the field. */
function checkRef(c: Checker, v: unknown, field: string): SecretRef | undefined {
  if (!isSecretRef(v)) {
    c.err(field, `must be a secret reference like {"env": "SGLANG_API_KEY"} or {"secret": "my-key"} (got ${show(v)})`);
    return undefined;
  }
  const n = secretName(v);
  if ('env' in v ? !/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(n) : !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(n)) {
    c.err(
      field,
      `${JSON.stringify(n)} is not a valid ${'env' in v ? 'environment variable' : 'secret'} name (letters, digits, "_"${'env' in v ? '' : ', "." and "-"'})`,
    );
    return undefined;
  }
  return v;
}

function hintOf(word: string, choices: readonly string[]): string {
  const h = closest(word, choices);
  return h ? ` (did you mean "${h}"?)` : '';
}

function stripUndef<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

function getField(p: Record<string, unknown>, field: string): unknown {
  if (field.startsWith('speculative.')) {
    const s = p.speculative;
    return isObject(s) ? s[field.slice('speculative.'.length)] : undefined;
  }
  return p[field];
}

/** Parse and validate the text of a profile file; JSON syntax errors name line and column. */
export function parseProfileText(text: string): ValidationResult {
  let data: unknown;
  try {
    data = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const m = /position (\d+)/.exec(msg);
    if (m) {
      const pos = Number(m[1]);
      const before = text.slice(0, pos);
      const line = before.split('\n').length;
      const col = pos - before.lastIndexOf('\n');
      return { errors: [`(json): ${msg.replace(/ in JSON at position \d+.*$/, '')} at line ${line}, column ${col}`] };
    }
    return { errors: [`(json): ${msg}`] };
  }
  return validateProfile(data);
}

/** The profile's name for file names: the name field, else the given fallback (a file's base name). */
export function profileName(p: LaunchProfile, fallback = 'profile'): string {
  const n = (p.name ?? fallback)
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
  return n || 'profile';
}

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
export function joinRemote(dir: string, file: string): string {
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

export interface RenderedScript {
  script: string;
  instances: RenderedInstance[];
  /** Names of the secrets the script reads from `~/.gpu-sessions/secrets/` (supplied before it runs). */
  secrets: string[];
}

/** Where a secret lives on the node (mode 0600 in a 0700 directory), relative to the home. */
export const SECRETS_DIR = '.gpu-sessions/secrets';

/** In an argv as data, a secret reference is this marker + its name (NUL cannot be in a profile value). */
const SECRET_MARK = '\0secret:';
const secretToken = (r: SecretRef) => SECRET_MARK + secretName(r);
const shownToken = (a: string) => (a.startsWith(SECRET_MARK) ? `<secret:${a.slice(SECRET_MARK.length)}>` : a);

/** The shell expression that reads a secret on the node at run time: `"$(cat "$HOME"/'.gpu-sessions/secrets/NAME')"`. */
export function secretExpr(name: string): string {
  return `"$(cat "$HOME"/${shq(`${SECRETS_DIR}/${name}`)})"`;
}

/** Every secret a group refers to (names, in order of appearance). */
export function profileSecrets(p: LaunchProfile): string[] {
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
      `tp ${tp ?? 1}${p.enableDpAttention ? '' : ` × dp ${dp ?? 1}`}${p.pp ? ` × pp ${p.pp}` : ''}${p.nnodes ? ` / nnodes ${p.nnodes}` : ''} = ${need} GPUs, but ${n} GPU(s) are selected (${gpuIndices.join(',')})`,
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
  else
    header.push(
      `# Layout single: one SGLang server over GPUs ${plans[0].gpus.join(',')}${plans[0].tp ? ` with --tp-size ${plans[0].tp}` : ''}${plans[0].dp ? ` --dp-size ${plans[0].dp}` : ''}.`,
    );
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
  return names.map(
    (n) =>
      `[ -r "$HOME"/${shq(`${SECRETS_DIR}/${n}`)} ] || { echo ${shq(`GS-ERROR the secret ${n} was not supplied (~/${SECRETS_DIR}/${n} is missing)`)} >&2; exit 3; }`,
  );
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
    `# GPU Sessions launch script for profile "${shComment(name)}" — rendered from the profile; edit the profile, not this file.${groups.length > 1 ? ` ${groups.length} server groups.` : ''}`,
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
export interface CapturedSecret {
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
export function parseServerArgv(args: readonly string[], refFor: (flag: string) => SecretRef = defaultRef): ParsedArgv {
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

/** The directory part of a path ("" for none). */
function dirOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? (i === 0 ? '/' : '') : p.slice(0, i);
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
  const gpuOf = (s: SglangServer): number[] => {
    if (s.gpus.length) return s.gpus;
    if (s.cudaVisibleDevices)
      return s.cudaVisibleDevices
        .split(',')
        .map((x) => Number.parseInt(x, 10))
        .filter((n) => Number.isInteger(n) && n >= 0);
    return [];
  };
  const logDirOf = (s: SglangServer) => (s.logFile ? dirOf(s.logFile) : '');
  const envKey = (s: SglangServer) =>
    JSON.stringify([extras.virtualEnv?.[s.pid] ?? null, Object.entries(extras.env?.[s.pid] ?? {}).sort(), extras.secretEnv?.[s.pid] ?? []]);
  const isSingleGpu = (s: SglangServer) => {
    const f = parsed.get(s.pid)!.fields;
    return gpusPerServer(f as never) === 1 && gpuOf(s).length <= 1;
  };

  // Group: runs of single-GPU servers with the same argv (port aside), directory, log dir and env on consecutive ports.
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
  const out: LaunchProfile[] = [];
  for (const group of groups) {
    // A per-gpu group needs one log template for all its servers; otherwise capture them one by one.
    const logs = group.map((s) => ({ log: s.logFile ?? '', gpu: gpuOf(s)[0] ?? -1, port: s.port }));
    const known = logs.filter((l) => l.log).length;
    if (group.length > 1 && known > 0 && (known < logs.length || !logTemplate(logs))) {
      for (const s of group) out.push(captureGroup([s]));
    } else out.push(captureGroup(group));
  }

  function captureGroup(group: SglangServer[]): LaunchProfile {
    const first = group[0];
    const pa = parsed.get(first.pid)!;
    warnings.push(...pa.warnings.map((w) => `${w} (port ${first.port})`));
    if (!pa.launcherOk)
      warnings.push(
        `The server on port ${first.port} was not started as "python -m sglang.launch_server" (${first.args.slice(0, 3).join(' ')}); the profile starts it that way with ${pa.python}.`,
      );
    const perGpu = isSingleGpu(first);
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
    let logFile: string | undefined;
    if (group.every((s) => s.logFile)) {
      const t = logTemplate(group.map((s, k) => ({ log: s.logFile!, gpu: gpus[k], port: s.port })));
      const defaultName = perGpu ? `sglang_gpu${gpus[0]}.log` : `sglang_port${first.port}.log`;
      if (t && !(first.logFile!.endsWith('/' + defaultName) && t.startsWith(logDirOf(first) + '/'))) logFile = t;
    } else
      warnings.push(
        `The log file of the server on port ${first.port} is unknown (output not redirected to a file); the profile writes it to ~/logs.`,
      );
    const modelPath = f.modelPath as string | undefined;
    if (modelPath === undefined)
      throw new Error(`The server on port ${first.port} has no --model-path (a --config file is not captured into typed fields).`);
    const env: Record<string, ArgValue> = { ...(extras.env?.[first.pid] ?? {}) };
    for (const k of extras.secretEnv?.[first.pid] ?? []) env[k] = refFor(first, `env ${k}`, k);
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

  const captured = out.flatMap((g) =>
    list.filter((s) => s.port >= g.basePort && s.port < g.basePort + (g.layout === 'per-gpu' ? (g.gpus as number[]).length : 1)),
  );
  const desc = `Captured from ${list.length} running server${list.length > 1 ? 's' : ''} (ports ${list.map((s) => s.port).join(', ')}).`;
  for (const g of out) g.description = desc;
  return { profile: out[0], groups: out, captured: [...new Set(captured.map((s) => s.pid))], secrets, warnings };
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
