/**
 * SGLang's launch_server flags as its argparse knows them (a subset of ServerArgs.add_cli_args: the
 * flags people use, every alias of the parallelism sizes, and every flag that takes a secret), so that
 * argv read from a node is understood the way SGLang understands it:
 *
 * - argparse resolves an abbreviation (`--mem-frac 0.8`, `--api-k X`) to the one flag it is a prefix of;
 *   `resolveFlag` does the same against this list (an exact spelling always wins; a prefix of several
 *   different flags stays unresolved, as argparse would refuse it);
 * - boolean flags (`store_true`) take no value, so `--enable-metrics /models/x` leaves the path alone;
 * - secret flags (`--api-key`, `--admin-api-key`, and any flag whose name is a secret name: key, token,
 *   secret, password) have their values redacted wherever argv leaves the process.
 *
 * No `vscode` import.
 */
import { isSecretName } from '../util/redact';

/** Canonical flag → its other spellings (argparse option strings of the same action). */
const ALIASES: Record<string, string[]> = {
  '--model-path': ['--model'],
  '--tp-size': ['--tensor-parallel-size', '--tp'],
  '--dp-size': ['--data-parallel-size', '--dp'],
  // not '--pp': SGLang's argparse has --pp-max-micro-batch-size and --pp-async-batch-depth too, so it refuses
  // `--pp` as ambiguous (parallel.py: pp_size aliases ["--pipeline-parallel-size"])
  '--pp-size': ['--pipeline-parallel-size'],
  '--ep-size': ['--expert-parallel-size', '--ep'],
  // 2026 parallel sizes (parallel.py); all carved out of TP, so the GPU count stays tp × pp (× dp)
  '--dcp-size': ['--decode-context-parallel-size'],
  '--attn-cp-size': ['--attention-context-parallel-size'],
  '--moe-dp-size': ['--moe-data-parallel-size'],
  '--speculative-algorithm': ['--speculative-algo'],
  '--speculative-draft-model-path': ['--speculative-draft-model'],
};

/** Flags that take a value. */
const VALUE_FLAGS = [
  '--model-path',
  '--tokenizer-path',
  '--tokenizer-mode',
  '--load-format',
  '--dtype',
  '--kv-cache-dtype',
  '--quantization',
  '--context-length',
  '--served-model-name',
  '--chat-template',
  '--completion-template',
  '--revision',
  '--host',
  '--port',
  '--api-key',
  '--admin-api-key',
  '--ssl-keyfile',
  '--ssl-certfile',
  '--ssl-keyfile-password',
  '--hf-token',
  '--mem-fraction-static',
  '--max-running-requests',
  '--max-queued-requests',
  '--max-total-tokens',
  '--chunked-prefill-size',
  '--max-prefill-tokens',
  '--schedule-policy',
  '--schedule-conservativeness',
  '--cuda-graph-max-bs',
  '--cuda-graph-bs',
  // 0.5.20: decode and prefill variants (so `--cuda-graph-max` is ambiguous to argparse, as it is there)
  '--cuda-graph-max-bs-decode',
  '--cuda-graph-max-bs-prefill',
  '--cuda-graph-bs-decode',
  '--cuda-graph-bs-prefill',
  '--page-size',
  '--hicache-ratio',
  '--hicache-size',
  '--hicache-write-policy',
  '--hicache-storage-backend',
  '--tp-size',
  '--dp-size',
  '--pp-size',
  '--pp-max-micro-batch-size',
  '--pp-async-batch-depth',
  '--ep-size',
  '--dcp-size',
  '--attn-cp-size',
  '--moe-dp-size',
  '--dwdp-size',
  '--nnodes',
  '--node-rank',
  '--dist-init-addr',
  '--base-gpu-id',
  '--gpu-id-step',
  '--random-seed',
  '--stream-interval',
  '--watchdog-timeout',
  '--attention-backend',
  '--prefill-attention-backend',
  '--decode-attention-backend',
  '--sampling-backend',
  '--grammar-backend',
  '--moe-runner-backend',
  '--moe-a2a-backend',
  '--speculative-algorithm',
  '--speculative-draft-model-path',
  '--speculative-num-steps',
  '--speculative-eagle-topk',
  '--speculative-num-draft-tokens',
  '--speculative-accept-threshold-single',
  '--speculative-accept-threshold-acc',
  '--speculative-draft-model-revision',
  '--speculative-token-map',
  '--reasoning-parser',
  '--tool-call-parser',
  '--log-level',
  '--log-level-http',
  '--decode-log-interval',
  '--config',
  '--file-storage-path',
  '--download-dir',
  '--device',
  '--lora-paths',
  '--max-loras-per-batch',
  '--disaggregation-mode',
  '--disaggregation-transfer-backend',
  '--disaggregation-bootstrap-port',
  '--load-balance-method',
  '--json-model-override-args',
  '--preferred-sampling-params',
  '--tokenizer-worker-num',
  '--torch-compile-max-bs',
  '--num-continuous-decode-steps',
  '--collect-tokens-histogram',
  '--prompt-tokens-buckets',
  '--generation-tokens-buckets',
  '--bucket-time-to-first-token',
  '--bucket-e2e-request-latency',
  '--export-metrics-to-file-dir',
  '--crash-dump-folder',
  '--otlp-traces-endpoint',
  '--weight-loader-disable-mmap',
  '--enable-custom-logit-processor',
  '--mm-attention-backend',
  '--init-expert-location',
  '--ep-num-redundant-experts',
  '--deepep-mode',
  '--chunked-prefill-size',
  '--max-micro-batch-size',
  '--kv-events-config',
  '--uvicorn-access-log-exclude-prefixes',
  '--metrics-http-port',
];

/** Flags that take no value (store_true). */
const BOOL_FLAGS = [
  '--skip-tokenizer-init',
  '--trust-remote-code',
  '--is-embedding',
  '--enable-multimodal',
  '--skip-server-warmup',
  '--disable-cuda-graph',
  '--disable-cuda-graph-padding',
  '--disable-radix-cache',
  '--enable-hierarchical-cache',
  '--enable-dp-attention',
  '--enable-dp-lm-head',
  '--enable-ep-moe',
  '--enable-deepep-moe',
  '--enable-eplb',
  '--enable-metrics',
  '--enable-metrics-for-all-schedulers',
  '--enable-mfu-metrics',
  '--log-requests',
  '--show-time-cost',
  '--enable-cache-report',
  '--enable-torch-compile',
  '--enable-mixed-chunk',
  '--enable-two-batch-overlap',
  '--disable-overlap-schedule',
  '--enable-nccl-nvls',
  '--enable-symm-mem',
  '--disable-custom-all-reduce',
  '--enable-p2p-check',
  '--enable-lora',
  '--allow-auto-truncate',
  '--enable-request-time-stats-logging',
  '--enable-deterministic-inference',
  '--disable-chunked-prefix-cache',
  '--enable-memory-saver',
  '--enable-priority-scheduling',
  '--sleep-on-idle',
  '--enable-tokenizer-batch-encode',
  '--disable-fast-image-processor',
  '--enable-return-hidden-states',
  '--delete-ckpt-after-loading',
  '--enable-trace',
  '--disable-outlines-disk-cache',
  '--enable-double-sparsity',
  '--enable-nan-detection',
  '--enable-flashinfer-allreduce-fusion',
  '--grpc-mode',
];

const CANONICAL = new Map<string, string>();
const KIND = new Map<string, 'value' | 'bool'>();
for (const f of VALUE_FLAGS) KIND.set(f, 'value');
for (const f of BOOL_FLAGS) KIND.set(f, 'bool');
for (const f of KIND.keys()) CANONICAL.set(f, f);
for (const [c, al] of Object.entries(ALIASES))
  for (const a of al) {
    CANONICAL.set(a, c);
    KIND.set(a, KIND.get(c) ?? 'value');
  }
const ALL = [...CANONICAL.keys()].sort();

/** Every spelling of every known flag. */
export function knownFlags(): readonly string[] {
  return ALL;
}

/**
 * The flag argparse would take `spelled` for: itself when known or unknown-and-unresolvable, else the one
 * known flag it abbreviates (argparse's allow_abbrev). Returns the spelling matched (not the canonical one).
 */
export function resolveFlag(spelled: string): string {
  if (!spelled.startsWith('--') || spelled.length < 3 || CANONICAL.has(spelled)) return spelled;
  const hits = ALL.filter((f) => f.startsWith(spelled));
  if (!hits.length) return spelled;
  const canon = new Set(hits.map((h) => CANONICAL.get(h)));
  if (canon.size !== 1) return spelled;
  // The canonical spelling when it is among the matches, else the (only) alias matched.
  const c = [...canon][0]!;
  return hits.includes(c) ? c : hits[0];
}

/** The canonical spelling of a (resolved) flag: `--tp` → `--tp-size`; unknown flags unchanged. */
export function canonicalFlag(spelled: string): string {
  const r = resolveFlag(spelled);
  return CANONICAL.get(r) ?? r;
}

/** True for a known store_true flag (after resolving abbreviations). */
export function isBoolFlag(spelled: string): boolean {
  return KIND.get(resolveFlag(spelled)) === 'bool';
}

/** A flag whose value is a secret: its resolved or written name is a secret name (`--api-key`, `--api-k`, `--hf-token`). */
export function isSecretFlag(spelled: string): boolean {
  const name = spelled.startsWith('--') ? spelled : spelled.replace(/^-?/, '--');
  return isSecretName(name) || isSecretName(resolveFlag(name));
}
