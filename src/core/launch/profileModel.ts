/**
 * Launch profile model: the profile and secret-reference types, the SGLang flags a profile knows, field lists and defaults.
 */

// ------------------------------------------------------------------------------------ types

export const SPECULATIVE_ALGORITHMS = ['EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM', 'DFLASH'] as const;
export type SpeculativeAlgorithm = (typeof SPECULATIVE_ALGORITHMS)[number];

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

export interface FlagSpec {
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
export const RESERVED_FLAGS = ['--port', '--model-path', '--model'];

export const FLAG_BY_NAME = new Map<string, FlagSpec>();
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
