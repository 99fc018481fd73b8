/**
 * The launch profile (`.gpu-sessions/launch/*.json`) as one zod schema: every field, its constraints and its
 * description (the editor's hover text) live here. The LaunchProfile / SpeculativeConfig / SecretRef types, the
 * field lists of validateProfile and schemas/launch-profile.schema.json (`npm run gen:schemas`) are derived from it;
 * validateProfile (profileValidate.ts) keeps its own messages, which name the field and suggest the closest word.
 *
 * JSON Schema keywords zod has no check for (uniqueItems, `not`, the top-level oneOf) are given as metadata next to
 * the refinement that checks them, so the generated schema and a zod parse agree.
 */
import { z } from 'zod';

export const SPECULATIVE_ALGORITHMS = ['EAGLE', 'EAGLE3', 'NEXTN', 'STANDALONE', 'NGRAM', 'DFLASH'] as const;

export const DEFAULT_BASE_PORT = 30000;

/** Text on one line: no CR or LF (they would make the launch script unreadable). */
const ONE_LINE = /^[^\n\r]*$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const oneLine = () => z.string().min(1).regex(ONE_LINE);
/** A string with the values SGLang knows offered for completion; any other non-empty value is passed through. */
const known = (values: readonly [string, ...string[]]) => z.union([z.enum(values), z.string().min(1)]);
const count = (max: number) => z.int().min(1).max(max);

// ------------------------------------------------------------------------------------ secret references

const secretRefSchema = z
  .xor([
    z.strictObject({
      env: z
        .string()
        .regex(ENV_NAME)
        .meta({ description: 'Environment variable holding the secret where you launch (CLI: or --secret NAME=@FILE).' }),
    }),
    z.strictObject({
      secret: z
        .string()
        .regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/)
        .meta({
          description:
            'Name in VS Code SecretStorage (asked for once); the CLI reads the environment variable of that name or --secret NAME=@FILE.',
        }),
    }),
  ])
  .meta({ id: 'secretRef', description: 'A secret reference: the profile names the secret, it never holds it.' });

// ------------------------------------------------------------------------------------ one server group

const speculativeSchema = z
  .strictObject({
    algorithm: z.enum(SPECULATIVE_ALGORITHMS).meta({
      description: '--speculative-algorithm. There is no MTP value: MTP models run through NEXTN or EAGLE.',
      enumDescriptions: [
        'EAGLE draft model (or an MTP head).',
        'EAGLE-3 draft model.',
        'Built-in next-n / MTP prediction heads.',
        'A separate small draft model (draftModelPath).',
        'N-gram lookup, no draft model.',
        'DFlash block-diffusion drafter (newer builds).',
      ],
    }),
    numSteps: count(64).optional().meta({ description: '--speculative-num-steps: draft steps per verification (e.g. 3).' }),
    eagleTopk: count(64).optional().meta({ description: '--speculative-eagle-topk: branching factor of the draft tree (1 = a chain).' }),
    numDraftTokens: count(1024)
      .optional()
      .meta({ description: '--speculative-num-draft-tokens: tokens verified per step (numSteps + 1 for a chain).' }),
    draftModelPath: oneLine()
      .optional()
      .meta({ description: '--speculative-draft-model-path: the draft model (a directory on the node or a Hugging Face repo id).' }),
  })
  .meta({
    description:
      'Speculative decoding. MTP models (Qwen3-Next/3.5/3.6, DeepSeek V3, GLM-4.5) run through NEXTN or EAGLE with their built-in draft heads.',
  });

const gpuIndices = z
  .array(z.int().min(0).max(1023).meta({ description: 'A GPU index.' }))
  .min(1)
  .refine((a) => new Set(a).size === a.length, 'GPU indices must be distinct')
  .meta({ uniqueItems: true, description: 'GPU indices, e.g. [0, 1, 2, 3].' });

const argValue = z
  .xor([
    z.string().regex(ONE_LINE).meta({ description: 'One argument, passed as it is (a flag like "--log-level" or its value like "info").' }),
    secretRefSchema,
  ])
  .meta({
    description:
      'One argument, passed as it is (a flag like "--log-level" or its value like "info"), or a secret ' +
      'reference in place of a secret flag\'s value (e.g. after "--admin-api-key").',
  });

const envName = z
  .string()
  .regex(ENV_NAME)
  .refine((k) => k !== 'CUDA_VISIBLE_DEVICES', 'CUDA_VISIBLE_DEVICES is set per instance from gpus')
  .meta({ not: { const: 'CUDA_VISIBLE_DEVICES' } });

const envValue = z.xor([z.string().meta({ description: 'The value (a string; write numbers in quotes).' }), secretRefSchema]).meta({
  description: 'The value (a string; write numbers in quotes), or a secret reference {"env": "HF_TOKEN"} for a secret variable.',
});

/** The fields of one server group, in the order validateProfile reports them. */
const groupShape = {
  modelPath: oneLine().meta({
    description:
      '--model-path: the model directory on the node (absolute, or `~/...` for the remote home), or a ' +
      'Hugging Face repo id like `Qwen/Qwen3-8B` (downloaded by SGLang on start).',
    examples: ['/dev/shm/Qwen3.6-27B', '~/models/Qwen3.6-27B', 'Qwen/Qwen3-8B'],
  }),
  servedModelName: z
    .string()
    .min(1)
    .optional()
    .meta({ description: '--served-model-name: the model id clients send (`model` in OpenAI requests). Default: the model path.' }),
  gpus: z
    .xor([z.enum(['all']).meta({ description: 'Every GPU nvidia-smi lists on the node.' }), gpuIndices])
    .default('all')
    .meta({
      description: 'GPUs to launch on: a list of indices as nvidia-smi numbers them, or "all" (every GPU of the node). Default "all".',
    }),
  layout: z
    .enum(['per-gpu', 'single'])
    .default('per-gpu')
    .meta({
      description:
        'per-gpu: one independent single-GPU server per GPU (data parallel by hand, as in the seeds): ' +
        'CUDA_VISIBLE_DEVICES=i, port basePort+k for the k-th GPU, log <logDir>/sglang_gpu<i>.log. single: ' +
        'one server over all the GPUs with tp/dp, on basePort, log <logDir>/sglang_port<port>.log.',
      enumDescriptions: [
        "One server per GPU, each on its own port and log (the seeds' launch_all.sh / launch_tuned.sh).",
        'One server over all the listed GPUs with --tp-size / --dp-size.',
      ],
    }),
  basePort: z
    .int()
    .min(1)
    .max(65535)
    .default(DEFAULT_BASE_PORT)
    .meta({ description: '--port of the first instance; the k-th instance listens on basePort + k. Default 30000.' }),
  host: z
    .string()
    .min(1)
    .regex(/^\S+$/)
    .optional()
    .meta({
      description:
        "--host: the address the servers listen on. SGLang's default is 127.0.0.1 (reach it through SSH); 0.0.0.0 exposes it on every interface.",
      examples: ['127.0.0.1', '0.0.0.0'],
    }),
  tp: count(1024).optional().meta({
    description: '--tp-size (layout "single" only): tensor parallelism. Default: all the GPUs when neither tp nor dp is given.',
  }),
  dp: count(1024).optional().meta({
    description: '--dp-size (layout "single" only): data parallel replicas inside one server. tp × dp must equal the number of GPUs.',
  }),
  memFractionStatic: z
    .number()
    .gt(0)
    .max(1)
    .optional()
    .meta({
      description:
        '--mem-fraction-static: fraction of GPU memory for weights and KV cache (e.g. 0.88). Lower it when CUDA graphs or other processes run out of memory.',
      examples: [0.88, 0.85],
    }),
  contextLength: z
    .int()
    .min(1)
    .optional()
    .meta({
      description: "--context-length: maximum context length (prompt + output tokens). Default: the model's max_position_embeddings.",
      examples: [32768, 131072],
    }),
  maxRunningRequests: z
    .int()
    .min(1)
    .optional()
    .meta({ description: '--max-running-requests: the most requests decoded concurrently by one server.', examples: [96, 256] }),
  chunkedPrefillSize: z
    .int()
    .min(-1)
    .refine((v) => v !== 0, 'use -1 to disable chunked prefill')
    .optional()
    .meta({
      not: { const: 0 },
      description: '--chunked-prefill-size: tokens per prefill chunk; -1 disables chunked prefill.',
      examples: [8192, 16384, -1],
    }),
  cudaGraphMaxBs: z
    .int()
    .min(1)
    .optional()
    .meta({
      description: '--cuda-graph-max-bs: largest batch size captured in CUDA graphs (usually = maxRunningRequests).',
      examples: [96, 160],
    }),
  quantization: known([
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
  ])
    .optional()
    .meta({ description: '--quantization: weight quantization method, e.g. fp8 (other values are passed through to SGLang).' }),
  kvCacheDtype: known(['auto', 'fp8_e5m2', 'fp8_e4m3', 'bf16', 'bfloat16', 'fp4_e2m1'])
    .optional()
    .meta({ description: '--kv-cache-dtype: data type of the KV cache, e.g. fp8_e4m3 to double its capacity.' }),
  speculative: speculativeSchema.optional(),
  reasoningParser: known(['qwen3', 'qwen3-thinking', 'deepseek-r1', 'deepseek-v3', 'glm45', 'gpt-oss', 'kimi', 'minimax', 'step3'])
    .optional()
    .meta({ description: '--reasoning-parser: splits thinking into reasoning_content, e.g. qwen3.' }),
  enableHierarchicalCache: z
    .boolean()
    .optional()
    .meta({ description: '--enable-hierarchical-cache: spill the radix (prefix) cache to host memory.' }),
  enableMetrics: z
    .boolean()
    .optional()
    .meta({ description: "--enable-metrics: Prometheus /metrics (throughput, running requests; used by Stop Server's drain)." }),
  attentionBackend: known([
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
  ])
    .optional()
    .meta({ description: '--attention-backend: attention kernel implementation.' }),
  decodeLogInterval: z
    .int()
    .min(1)
    .optional()
    .meta({ description: '--decode-log-interval: print a "Decode batch" stats line every N decode steps (default 40).' }),
  trustRemoteCode: z.boolean().optional().meta({ description: "--trust-remote-code: allow the model repository's custom Python code." }),
  pp: count(1024).optional().meta({
    description: '--pp-size (layout "single"): pipeline parallelism; the server uses tp × pp GPUs (× dp without enableDpAttention).',
  }),
  ep: count(1024).optional().meta({
    description: '--ep-size: expert parallelism for MoE models; the experts are spread over the TP GPUs, so it adds no GPUs.',
  }),
  nnodes: count(1024).optional().meta({
    description:
      '--nnodes: the server spans this many nodes; this node runs its share (GPUs / nnodes). Give --node-rank and --dist-init-addr in extraArgs.',
  }),
  enableDpAttention: z
    .boolean()
    .optional()
    .meta({ description: '--enable-dp-attention: the DP ranks share the TP GPUs, so the server uses tp GPUs (not tp × dp).' }),
  apiKey: secretRefSchema.optional().meta({
    description:
      '--api-key as a reference, never the key: {"env": "SGLANG_API_KEY"} (an environment variable where ' +
      'you launch; the CLI also takes --secret NAME=@FILE) or {"secret": "NAME"} (VS Code SecretStorage). ' +
      'At launch the value goes over stdin into ~/.gpu-sessions/secrets/NAME (mode 0600) on the node and ' +
      'the script reads it from there.',
  }),
  extraArgs: z
    .array(argValue)
    .default([])
    .meta({
      description:
        'Further launch_server arguments, verbatim, after the typed flags, e.g. ["--log-level", "info", ' +
        '"--tool-call-parser", "qwen25"]. Not --port or --model-path (set by basePort and modelPath), nor a ' +
        'flag that a typed field above already sets. A secret flag\'s value must be a reference {"env": ' +
        '"NAME"} / {"secret": "NAME"}, never the secret.',
    }),
  env: z
    .record(envName, envValue)
    .default({})
    .meta({
      description:
        'Environment variables exported before the servers start, e.g. {"HF_HOME": "/data/hf", "NCCL_DEBUG": ' +
        '"WARN"}. CUDA_VISIBLE_DEVICES is set per instance from gpus. Values are strings. Secret variables ' +
        '(names with KEY, TOKEN, SECRET, PASSWORD) must be references like {"HF_TOKEN": {"env": "HF_TOKEN"}}: ' +
        'the profile is a workspace file and the script is kept on the node.',
    }),
  python: oneLine()
    .optional()
    .meta({
      description:
        'Interpreter that runs `-m sglang.launch_server` (default python3, found on PATH after the venv is activated). An absolute path or `~/...`.',
      examples: ['python3', '/opt/conda/bin/python', '~/venv/bin/python'],
    }),
  venv: oneLine()
    .optional()
    .meta({
      description:
        'Virtual environment directory on the node: `<venv>/bin/activate` is sourced before starting (absolute, `~/...`, or relative to workDir).',
      examples: ['~/venv', '/opt/sglang-venv'],
    }),
  workDir: z
    .string()
    .min(1)
    .regex(/^(\/|~$|~\/)[^\n\r]*$/)
    .optional()
    .meta({ description: 'Directory the servers run in (absolute or `~/...`). Default `~`.', examples: ['~', '/root', '/workspace'] }),
  logDir: oneLine()
    .optional()
    .meta({
      description: 'Directory of the per-instance logs (absolute, `~/...`, or relative to workDir). Default `~/logs`.',
      examples: ['~/logs', '/workspace/logs'],
    }),
  logFile: oneLine()
    .optional()
    .meta({
      description:
        "Log file of each instance instead of logDir's default names (sglang_gpu<i>.log / " +
        'sglang_port<port>.log): "{gpu}" and "{port}" are replaced, e.g. "/data/logs/eagle_{port}.log". ' +
        "Capture keeps the servers' original log paths here.",
    }),
  argOrder: z
    .array(
      z
        .string()
        .regex(/^--[A-Za-z0-9][A-Za-z0-9_.-]*=?$/)
        .meta({ description: 'A flag as written ("--tp", "--port"); a trailing "=" for the --flag=value form.' }),
    )
    .optional()
    .meta({
      description:
        'Written by capture when the original command line spelled or ordered its flags differently from the ' +
        'default rendering: the flags in their original order and spelling, so the relaunched argv is the ' +
        'very same. Flags not listed follow in the default order.',
    }),
};

const groupSchema = z
  .strictObject(groupShape)
  .meta({ id: 'group', description: 'One server group: its model, GPUs, layout, ports, flags, environment, directories and logs.' });

/** The profile's own fields, which apply to all its groups. */
const headShape = {
  $schema: z
    .string()
    .optional()
    .meta({ description: 'JSON schema of this file (optional; VS Code applies it to .gpu-sessions/launch/*.json anyway).' }),
  name: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._ -]{0,79}$/)
    .optional()
    .meta({
      description:
        "Short name of the profile, used in the launch script's file name on the node " +
        "(~/.gpu-sessions/launch/<timestamp>-<name>.sh). Default: this file's name.",
    }),
  description: z.string().optional().meta({ description: 'Free text; written as a comment at the top of the launch script.' }),
};

/** One server group with the profile's name and description: a profile as validateProfile returns it. */
const launchProfileSchema = z.strictObject({ ...headShape, ...groupShape });

const EXAMPLES = [
  {
    name: 'tuned',
    modelPath: '/dev/shm/Qwen3.6-27B',
    servedModelName: 'qwen3.6-27b',
    gpus: 'all',
    layout: 'per-gpu',
    basePort: 30000,
    host: '127.0.0.1',
    memFractionStatic: 0.88,
    contextLength: 32768,
    reasoningParser: 'qwen3',
    trustRemoteCode: true,
    speculative: { algorithm: 'NEXTN', numSteps: 3, eagleTopk: 1, numDraftTokens: 4 },
    enableMetrics: true,
    maxRunningRequests: 96,
    chunkedPrefillSize: 8192,
    cudaGraphMaxBs: 96,
    enableHierarchicalCache: true,
    quantization: 'fp8',
    kvCacheDtype: 'fp8_e4m3',
    attentionBackend: 'flashinfer',
    decodeLogInterval: 40,
    venv: '~/venv',
    logDir: '~/logs',
  },
  {
    name: 'three-servers',
    groups: [
      {
        modelPath: '/models/big',
        gpus: [0, 1],
        layout: 'single',
        basePort: 30000,
        tp: 2,
        speculative: { algorithm: 'EAGLE', numSteps: 3 },
        apiKey: { env: 'SGLANG_API_KEY' },
      },
      {
        modelPath: '/models/moe',
        gpus: [2, 3],
        layout: 'single',
        basePort: 30010,
        dp: 2,
        speculative: { algorithm: 'NEXTN' },
        enableMetrics: true,
      },
      { modelPath: '/models/small', gpus: [4], basePort: 30020, logFile: '~/logs/small.log' },
    ],
  },
];

/** A profile file: one server group at the top level (modelPath), or several under `groups` — one of the two. */
export const profileFileSchema = launchProfileSchema
  .extend({
    modelPath: groupShape.modelPath.optional(),
    groups: z
      .array(groupSchema)
      .min(1)
      .optional()
      .meta({
        description:
          'Several server groups in one profile (a node running different kinds of servers, as capture writes ' +
          'it): each entry has the fields of a single-group profile (modelPath, gpus, layout, basePort, flags, ' +
          'env, workDir, logFile, ...); name and description stay at the top. Without groups the profile is one ' +
          'group (the fields at the top level).',
      }),
  })
  .refine((p) => (p.modelPath === undefined) !== (p.groups === undefined), 'give either modelPath or groups')
  .meta({
    title: 'GPU Sessions launch profile',
    description:
      'How to start SGLang on a GPU node: `.gpu-sessions/launch/*.json`. Rendered to a POSIX sh launch ' +
      "script (one server per GPU like the seeds' launch_tuned.sh, or one server with " +
      '--tp-size/--dp-size), reviewed, then launched with "GPU Sessions: Launch Profile on Node…" or ' +
      '`gpu-sessions launch NODE --profile FILE`.',
    examples: EXAMPLES,
    oneOf: [
      { required: ['modelPath'], not: { required: ['groups'] } },
      { required: ['groups'], not: { required: ['modelPath'] } },
    ],
  });

// ------------------------------------------------------------------------------------ derived

export type SpeculativeConfig = z.output<typeof speculativeSchema>;
export type SpeculativeAlgorithm = SpeculativeConfig['algorithm'];
/**
 * A secret the profile refers to instead of holding it: `{"env": "SGLANG_API_KEY"}` (an environment
 * variable of the machine that launches; the CLI also takes `--secret NAME=@FILE`) or `{"secret": "NAME"}`
 * (VS Code SecretStorage; the CLI reads the environment variable NAME or `--secret NAME=@FILE`).
 */
export type SecretRef = z.output<typeof secretRefSchema>;
/** One server group with the profile's name and description, its defaults filled in (layout, basePort, gpus, extraArgs, env). */
export type LaunchProfile = z.output<typeof launchProfileSchema>;
export type Layout = LaunchProfile['layout'];

/** Top-level fields a profile file may have, in the schema's order. */
export const PROFILE_FIELDS = Object.keys(profileFileSchema.shape) as ReadonlyArray<keyof typeof profileFileSchema.shape>;
export const SPECULATIVE_FIELDS = Object.keys(speculativeSchema.shape) as ReadonlyArray<keyof typeof speculativeSchema.shape>;
