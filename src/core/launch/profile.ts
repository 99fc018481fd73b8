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
import { SglangServer, sglangLaunchIndex } from '../sglang/serverArgv';

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
  /** Further launch_server arguments, verbatim, after the typed flags. */
  extraArgs: string[];
  /** Environment variables exported before the servers start. */
  env: Record<string, string>;
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
  'extraArgs',
  'env',
  'python',
  'venv',
  'workDir',
  'logDir',
] as const;
export const SPECULATIVE_FIELDS = ['algorithm', 'numSteps', 'eagleTopk', 'numDraftTokens', 'draftModelPath'] as const;

export const DEFAULT_BASE_PORT = 30000;
export const DEFAULT_PYTHON = 'python3';
export const DEFAULT_WORK_DIR = '~';
export const DEFAULT_LOG_DIR = '~/logs';

// ------------------------------------------------------------------------------------ validation

export interface ValidationResult {
  profile?: LaunchProfile;
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
  const c = new Checker();
  c.unknownKeys(x, PROFILE_FIELDS, '');

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
  } else if (Array.isArray(gpus) && gpus.length && (tp !== undefined || dp !== undefined)) {
    const need = (tp ?? 1) * (dp ?? 1);
    if (tp !== undefined && dp !== undefined && need !== gpus.length)
      c.err('tp', `tp ${tp} × dp ${dp} = ${need} GPUs, but gpus lists ${gpus.length}`);
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
  const extraArgs: string[] = [];
  if (x.extraArgs !== undefined && x.extraArgs !== null) {
    if (!Array.isArray(x.extraArgs))
      c.err('extraArgs', `must be a list of strings like ["--log-level", "info"] (got ${show(x.extraArgs)})`);
    else {
      x.extraArgs.forEach((a, i) => {
        if (typeof a !== 'string') return c.err(`extraArgs[${i}]`, `must be a string (got ${show(a)})`);
        const bad = badChars(a);
        if (bad) return c.err(`extraArgs[${i}]`, `must not contain ${bad}`);
        extraArgs.push(a);
      });
    }
  }
  const profileSoFar: Record<string, unknown> = { ...x, speculative };
  extraArgs.forEach((a, i) => {
    if (!a.startsWith('--')) return;
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
  const env: Record<string, string> = {};
  if (x.env !== undefined && x.env !== null) {
    if (!isObject(x.env)) c.err('env', `must be an object of NAME: "value" (got ${show(x.env)})`);
    else {
      for (const [k, v] of Object.entries(x.env)) {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
          c.err(`env.${k}`, 'is not a valid environment variable name (letters, digits and "_", not starting with a digit)');
        else if (k === 'CUDA_VISIBLE_DEVICES') c.err(`env.${k}`, 'is set per instance from gpus and layout; use "gpus" instead');
        else if (typeof v !== 'string') c.err(`env.${k}`, `must be a string (got ${show(v)}); write numbers in quotes`);
        else if (v.includes('\0')) c.err(`env.${k}`, 'must not contain a NUL character');
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
    extraArgs,
    env,
    python,
    venv,
    workDir,
    logDir,
  }) as LaunchProfile;
  return { profile, errors: [] };
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
  /** The argv the instance is started with (port included; `~/` in paths expands on the node). */
  argv: string[];
}

export interface RenderedScript {
  script: string;
  instances: RenderedInstance[];
}

function fmtValue(v: unknown): string {
  return String(v);
}

/** The launcher and flags of one instance, as data: `[python, -m, sglang.launch_server, --model-path, X, ...]` (port included). */
export function instanceArgv(p: LaunchProfile, port: number, single: { tp?: number; dp?: number } = {}): string[] {
  const argv = [p.python ?? DEFAULT_PYTHON, '-m', 'sglang.launch_server'];
  const rec = p as unknown as Record<string, unknown>;
  for (const spec of FLAG_SPECS) {
    const v =
      spec.field === 'tp' || spec.field === 'dp' ? (p.layout === 'single' ? single[spec.field] : p[spec.field]) : getField(rec, spec.field);
    if (v !== undefined && v !== null && v !== false) {
      if (spec.kind === 'bool') argv.push(spec.flag);
      else {
        const s = fmtValue(v);
        // A string value that starts with "-" would be taken for a flag by argparse: keep it attached.
        if (spec.kind === 'string' && s.startsWith('-')) argv.push(`${spec.flag}=${s}`);
        else argv.push(spec.flag, s);
      }
    }
    if (spec.field === 'host') argv.push('--port', String(port));
  }
  if (!argv.includes('--port')) argv.push('--port', String(port));
  argv.push(...p.extraArgs);
  return argv;
}

/** Fields whose values are paths and expand `~/` on the node. */
const PATH_FLAGS = new Set(['--model-path', '--speculative-draft-model-path']);

/** An argv element for the script: flag values that are `~/` paths expand to the remote home. */
function argExpr(argv: string[], i: number): string {
  const a = argv[i];
  if (i > 0 && PATH_FLAGS.has(argv[i - 1]) && (a === '~' || a.startsWith('~/'))) return remotePathExpr(a);
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
  let tp = p.tp;
  let dp = p.dp;
  if (tp === undefined && dp === undefined) tp = n > 1 ? n : undefined;
  else if (tp === undefined) {
    if (n % dp! !== 0) throw new Error(`dp: ${dp} does not divide the ${n} GPUs`);
    tp = n / dp! > 1 ? n / dp! : undefined;
  } else if (dp === undefined) {
    if (n % tp !== 0) throw new Error(`tp: ${tp} does not divide the ${n} GPUs`);
    dp = n / tp > 1 ? n / tp : undefined;
  }
  if ((tp ?? 1) * (dp ?? 1) !== n)
    throw new Error(
      `tp ${tp ?? 1} × dp ${dp ?? 1} = ${(tp ?? 1) * (dp ?? 1)} GPUs, but ${n} GPU(s) are selected (${gpuIndices.join(',')})`,
    );
  return [{ gpus: [...gpuIndices], port: p.basePort, logName: `sglang_port${p.basePort}.log`, tp, dp }];
}

/** The lines that prepare the environment (cd, venv, env); shared by the launch script and preflight. */
export function renderPreamble(p: LaunchProfile, failPrefix = 'GS-ERROR'): string[] {
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
    L.push(`export ${k}=${shq(v)}`);
  }
  return L;
}

/**
 * The launch script for `gpuIndices` (already resolved when the profile says "all"): POSIX sh, every
 * value quoted, each instance started detached (setsid nohup, stdin /dev/null, output to its log) with
 * its CUDA_VISIBLE_DEVICES and port, printing `GS-STARTED <port> <pid>`.
 */
export function renderLaunchScript(profile: LaunchProfile, gpuIndices: number[]): RenderedScript {
  const plans = planInstances(profile, gpuIndices);
  const logDir = profile.logDir ?? DEFAULT_LOG_DIR;
  const instances: RenderedInstance[] = plans.map((pl) => ({
    gpus: pl.gpus,
    port: pl.port,
    logFile: joinRemote(logDir, pl.logName),
    argv: instanceArgv(profile, pl.port, { tp: pl.tp, dp: pl.dp }),
  }));
  const name = profileName(profile);
  const L: string[] = [];
  L.push('#!/bin/sh');
  // Comments hold numbers or shComment() text only (no newline can end them); every value below is quoted.
  L.push(`# GPU Sessions launch script for profile "${shComment(name)}" — rendered from the profile; edit the profile, not this file.`);
  if (profile.description) L.push(`# ${shComment(profile.description.replace(/[\r\n]+/g, ' '))}`);
  if (profile.layout === 'per-gpu')
    L.push(`# Layout per-gpu: one independent SGLang server per GPU (data parallel by hand), GPU i on its own port and log.`);
  else
    L.push(
      `# Layout single: one SGLang server over GPUs ${plans[0].gpus.join(',')}${plans[0].tp ? ` with --tp-size ${plans[0].tp}` : ''}${plans[0].dp ? ` --dp-size ${plans[0].dp}` : ''}.`,
    );
  for (const inst of instances) L.push(`#   GPU ${inst.gpus.join(',')} -> port ${inst.port}, log ${shComment(inst.logFile)}`);
  L.push(`# Each server starts detached (setsid nohup, stdin from /dev/null), so it outlives this SSH session;`);
  L.push(`# its pid is printed as "GS-STARTED <port> <pid>". Readiness: "The server is fired up and ready to roll!" in its log.`);
  L.push('');
  L.push(...renderPreamble(profile));
  L.push(`mkdir -p ${remotePathExpr(logDir)} || { echo ${shq(`GS-ERROR cannot create logDir ${logDir}`)} >&2; exit 3; }`);
  L.push('if command -v setsid >/dev/null 2>&1; then DETACH=setsid; else DETACH=; fi');
  L.push('');
  // One function holds the flags (so the diff of two scripts shows each flag change once); its
  // arguments are the per-instance values: CUDA_VISIBLE_DEVICES, port, log file.
  const argv = instances[0].argv;
  const portIdx = argv.indexOf('--port') + 1;
  L.push('start_server() {  # $1 = CUDA_VISIBLE_DEVICES, $2 = port, $3 = log file');
  const parts: string[] = [];
  // launcher on the first line, then one flag (with its value) per line
  let line = `  CUDA_VISIBLE_DEVICES="$1" $DETACH nohup ${argExpr(argv, 0)} ${argExpr(argv, 1)} ${argExpr(argv, 2)}`;
  for (let i = 3; i < argv.length; i++) {
    const expr = i === portIdx ? '"$2"' : argExpr(argv, i);
    if (argv[i].startsWith('--')) {
      parts.push(line);
      line = `    ${expr}`;
    } else line += ` ${expr}`;
  }
  parts.push(line);
  parts.push('    > "$3" 2>&1 < /dev/null &');
  L.push(parts.join(' \\\n'));
  L.push('  echo "GS-STARTED $2 $!"');
  L.push('}');
  L.push('');
  for (const inst of instances) {
    L.push(`start_server ${shq(inst.gpus.join(','))} ${inst.port} ${remotePathExpr(inst.logFile)}`);
  }
  L.push('');
  return { script: L.join('\n'), instances };
}

// ------------------------------------------------------------------------------------ capture

export interface CaptureExtras {
  /** Per server pid: its VIRTUAL_ENV when `<venv>/bin/activate` exists. */
  virtualEnv?: Record<number, string | undefined>;
  /** Per server pid: launch-relevant environment variables that differ from a login shell's. */
  env?: Record<number, Record<string, string> | undefined>;
  name?: string;
}

export interface CaptureResult {
  profile: LaunchProfile;
  /** Servers the profile reproduces (pids). */
  captured: number[];
  warnings: string[];
}

interface ParsedArgv {
  python: string;
  launcherOk: boolean;
  /** Typed values by field. */
  fields: Record<string, string | number | boolean>;
  port: number | null;
  extra: string[];
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
  return n;
}

/** Split a server's argv into typed fields, port and verbatim extra args. */
export function parseServerArgv(args: readonly string[]): ParsedArgv {
  const warnings: string[] = [];
  const at = sglangLaunchIndex(args);
  const launcherOk = at === 3 && args[1] === '-m' && args[2] === 'sglang.launch_server';
  const python = at >= 3 && args[1] === '-m' ? args[0] : DEFAULT_PYTHON;
  const rest = at >= 0 ? args.slice(at) : [];
  const fields: Record<string, string | number | boolean> = {};
  const extra: string[] = [];
  let port: number | null = null;
  const keyTokens: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const tok = rest[i];
    const eq = tok.startsWith('--') ? tok.indexOf('=') : -1;
    const flag = eq > 2 ? tok.slice(0, eq) : tok;
    if (flag === '--port') {
      const v = eq > 2 ? tok.slice(eq + 1) : rest[++i];
      port = v !== undefined && /^\d+$/.test(v) ? Number(v) : null;
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
      warnings.push(`${flag} ${v ?? ''}: kept verbatim in extraArgs`);
    }
    extra.push(tok);
    keyTokens.push(tok);
  }
  return { python, launcherOk, fields, port, extra, key: JSON.stringify([python, ...keyTokens]), warnings };
}

/** The directory part of a path ("" for none). */
function dirOf(p: string): string {
  const i = p.lastIndexOf('/');
  return i <= 0 ? (i === 0 ? '/' : '') : p.slice(0, i);
}

/**
 * Running servers → a profile that reproduces them. Several single-GPU servers with the same flags on
 * consecutive ports become one per-gpu profile; one multi-GPU server becomes a single-layout profile.
 * When the servers form several groups, the largest group is captured and the others are named in the
 * warnings. Unknown flags go to extraArgs verbatim, in order.
 */
export function captureProfile(servers: SglangServer[], extras: CaptureExtras = {}): CaptureResult {
  const warnings: string[] = [];
  const list = servers.filter((s) => sglangLaunchIndex(s.args) >= 0).sort((a, b) => a.port - b.port || a.pid - b.pid);
  if (!list.length) throw new Error('No SGLang server to capture.');
  const parsed = new Map(list.map((s) => [s.pid, parseServerArgv(s.args)]));
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
    JSON.stringify([extras.virtualEnv?.[s.pid] ?? null, Object.entries(extras.env?.[s.pid] ?? {}).sort()]);
  const isSingleGpu = (s: SglangServer) => {
    const f = parsed.get(s.pid)!.fields;
    return Number(f.tp ?? 1) * Number(f.dp ?? 1) === 1 && gpuOf(s).length <= 1;
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
      envKey(s) === envKey(prev)
    ) {
      last.push(s);
    } else groups.push([s]);
  }
  const group = groups.reduce((a, b) => (b.length > a.length ? b : a));
  for (const g of groups) {
    if (g === group) continue;
    warnings.push(
      `Not captured: server${g.length > 1 ? 's' : ''} on port${g.length > 1 ? 's' : ''} ${g.map((s) => s.port).join(', ')} (different flags, directory or ports not consecutive with the captured group); capture them separately.`,
    );
  }
  const first = group[0];
  const pa = parsed.get(first.pid)!;
  warnings.push(...pa.warnings);
  if (!pa.launcherOk)
    warnings.push(
      `The server on port ${first.port} was not started as "python -m sglang.launch_server" (${first.args.slice(0, 3).join(' ')}); the profile starts it that way with ${pa.python}.`,
    );
  const single = !isSingleGpu(first);
  let gpus: number[] = [];
  if (single) {
    gpus = gpuOf(first);
    const need = Number(pa.fields.tp ?? 1) * Number(pa.fields.dp ?? 1);
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
  const logDir = logDirOf(first);
  if (first.logFile) {
    const expected = single ? `sglang_port${first.port}.log` : `sglang_gpu${gpus[0]}.log`;
    if (!first.logFile.endsWith('/' + expected))
      warnings.push(
        `Logs were ${group.map((s) => s.logFile).join(', ')}; the profile writes ${joinRemote(logDir, single ? 'sglang_port<port>.log' : 'sglang_gpu<i>.log')}.`,
      );
  } else warnings.push("The servers' log files are unknown (output not redirected to a file); the profile writes them to ~/logs.");
  const modelPath = f.modelPath as string | undefined;
  if (modelPath === undefined) throw new Error(`The server on port ${first.port} has no --model-path.`);
  const venv = extras.virtualEnv?.[first.pid];
  const env = extras.env?.[first.pid] ?? {};
  const profile: LaunchProfile = stripUndef({
    name: extras.name,
    description: `Captured from ${group.length} running server${group.length > 1 ? 's' : ''} (ports ${group.map((s) => s.port).join(', ')}).`,
    modelPath,
    servedModelName: f.servedModelName as string | undefined,
    gpus,
    layout: single ? 'single' : 'per-gpu',
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
    extraArgs: extra,
    env,
    python: pa.python === DEFAULT_PYTHON ? undefined : pa.python,
    venv,
    workDir: first.cwd ?? undefined,
    logDir: logDir || undefined,
  });
  if (single && profile.tp === undefined && profile.dp === undefined && gpus.length > 1) {
    // the rendered default would add --tp-size; keep the argv as it was
    warnings.push(`The server on port ${first.port} runs on GPUs ${gpus.join(',')} without --tp-size/--dp-size.`);
  }
  return { profile, captured: group.map((s) => s.pid), warnings };
}

/** Capture: turn discovered servers back into a profile (see captureProfile). */
export function profileFromServers(servers: SglangServer[]): LaunchProfile {
  return captureProfile(servers).profile;
}

/** A profile as the JSON written to `.gpu-sessions/launch/*.json` (defaults left out where they are defaults). */
export function profileToJson(p: LaunchProfile): string {
  const o: Record<string, unknown> = {};
  for (const k of PROFILE_FIELDS) {
    const v = (p as unknown as Record<string, unknown>)[k];
    if (v === undefined) continue;
    if (k === 'extraArgs' && Array.isArray(v) && v.length === 0) continue;
    if (k === 'env' && isObject(v) && Object.keys(v).length === 0) continue;
    o[k] = v;
  }
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
  return [...out, ...p.extra];
}
