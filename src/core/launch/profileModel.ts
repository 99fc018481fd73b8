/**
 * Launch profile model: the profile and secret-reference types, the SGLang flags a profile knows, field lists and defaults.
 */
import { PROFILE_FIELDS, type SecretRef } from './profileSchema';

// ------------------------------------------------------------------------------------ types

// The profile's types and field lists come from its one schema (profileSchema.ts).
export {
  DEFAULT_BASE_PORT,
  PROFILE_FIELDS,
  SPECULATIVE_ALGORITHMS,
  SPECULATIVE_FIELDS,
  type LaunchProfile,
  type Layout,
  type SecretRef,
  type SpeculativeAlgorithm,
  type SpeculativeConfig,
} from './profileSchema';

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

/** Fields of one server group (a profile with `groups`); the profile's own name and description apply to all. */
export const GROUP_FIELDS = PROFILE_FIELDS.filter((f) => !['$schema', 'name', 'description', 'groups'].includes(f));

export const DEFAULT_PYTHON = 'python3';
export const DEFAULT_WORK_DIR = '~';
export const DEFAULT_LOG_DIR = '~/logs';
