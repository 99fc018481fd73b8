/**
 * Builds the home directory of the simulated GPU node (demo node and integration tests).
 *
 * The home looks like the seeds' rented 7x B200 node: launch_all.sh / launch_tuned.sh starting one
 * SGLang server per GPU (ports base+i, logs/sglang_gpu{i}.log), a venv, the generation scripts,
 * completions/progress.json, .done_indices, batch files, logs/generate.log, configs and a patch.
 * The "SGLang" is src/sim/python/sglang (run as `python3 -m sglang.launch_server ...`, so the argv is
 * the real one) and `nvidia-smi` is src/sim/bin/nvidia-smi reading `.sim/node.json`. Both are stdlib
 * Python 3. Nothing is started here and nothing is written outside `home`.
 *
 * No `vscode` import: used by the CLI demo, the extension's demo command and the tests.
 * The parts: homeWriter.ts (confined writes, helpers), homeScripts.ts, homeArtifacts.ts, homeWorkspace.ts.
 */
import { existsSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { HomeWriter, gpuUuid, isInside, stripUndefined } from './homeWriter';
import { shq } from '../core/util/quote';
import { activateScript, generateScript, launchScript } from './homeScripts';
import { writeArtifacts, writeModel } from './homeArtifacts';
import { writeWorkspace } from './homeWorkspace';
import { SimProvider, writeSimProvider } from './provider';

export interface SimNodeOptions {
  /** Number of GPUs and of SGLang servers (one per GPU). Default 7. */
  gpuCount?: number;
  /** One-GPU servers the launch scripts start, on GPUs 0..serverCount-1 (the rest free for others). Default gpuCount. */
  serverCount?: number;
  /** Default 'NVIDIA B200'. */
  gpuName?: string;
  /** Default 183359 (B200). */
  gpuMemoryMiB?: number;
  /** Port of the server on GPU 0; GPU i listens on basePort + i. Default 30000. */
  basePort?: number;
  /** Default `${home}/models/Qwen3.6-27B` (created with config files and one small placeholder shard). */
  modelPath?: string;
  /** Default 'NEXTN' (MTP runs through NEXTN/EAGLE) with 3 steps, topk 1, 4 draft tokens; null = none. */
  speculativeAlgorithm?: string | null;
  /** Generation throughput of each server, token/s. Default 2000. */
  genTokPerSec?: number;
  /** SGLang log line style: 'new' (2026: `Decode batch, ...`) or 'old' (2025: `Decode batch. ...`). */
  logFormat?: 'new' | 'old';
  /** Launch with --enable-metrics (Prometheus /metrics). Default true. */
  enableMetrics?: boolean;
  /** Seconds between decode log rounds. Default 1.0. */
  decodePeriodS?: number;
  /** Defaults '570.133.20' / '12.8'. */
  driverVersion?: string;
  cudaVersion?: string;
  /** Interpreter the launch scripts run the servers with. Default 'python3'. */
  python?: string;
  /**
   * A work folder outside the home (RunPod-style `/workspace`; tests use a temp dir): the server on GPU 0
   * runs with it as its working directory, and it holds what real nodes hold that no extension list knows
   * (Makefile, Dockerfile, notes, an extensionless `run_experiment` client, a `.cu` kernel, a chat template,
   * `.hydra/config.yaml`, a LoRA checkpoint the job wrote). With it the home also gets a Hugging Face cache
   * model, a private key in `~/.ssh` and `~/.aws/credentials`.
   */
  workspace?: string;
  /**
   * The provider the node plays: 'runpod' puts RUNPOD_POD_ID and a pod-scoped RUNPOD_API_KEY in its
   * environment and the `runpodctl` stand-in on its PATH, 'vast' CONTAINER_ID, VAST_CONTAINERLABEL, CONTAINER_API_KEY
   * and `vastai` (src/sim/provider.ts). Default none (the demo node: runpod).
   */
  provider?: 'runpod' | 'vast' | null;
}

export interface SimNodeLayout {
  home: string;
  /** Server ports, index = GPU index. */
  ports: number[];
  /** `${home}/logs/sglang_gpu${i}.log`, index = GPU index. */
  logFiles: string[];
  /** `${home}/launch_all.sh`. */
  launchScript: string;
  /** `${home}/stop_all.sh` (SIGTERM by pid files, SIGKILL after 15 s). */
  stopScript: string;
  /** `${home}/launch_tuned.sh`. */
  tunedScript: string;
  /** The model directory the launch scripts pass as --model-path. */
  modelPath: string;
  /** --served-model-name of the servers. */
  servedModelName: string;
  /** `${home}/.sim/node.json` (read by the simulated nvidia-smi). */
  nodeJson: string;
  /** The work folder outside the home (when `workspace` was given). */
  workspace: string | null;
  /** Files written into the work folder and the home extras, relative paths by folder. */
  workspaceFiles: string[];
  /** The provider the node plays (its pod id, key and state file), or null. */
  provider: SimProvider | null;
  /** `${home}/.sim/run`: `server_<port>.pid` files of the live servers. */
  runDir: string;
  /**
   * Environment a local shell needs to act as this node's user: HOME, PATH with home/bin first
   * (so `nvidia-smi` is the simulated one), PYTHONPATH with the simulated sglang package,
   * VIRTUAL_ENV, and the SGLANG_SIM_* knobs.
   */
  env: Record<string, string>;
}

const DEFAULTS = {
  gpuCount: 7,
  gpuName: 'NVIDIA B200',
  gpuMemoryMiB: 183359,
  basePort: 30000,
  speculativeAlgorithm: 'NEXTN',
  genTokPerSec: 2000,
  logFormat: 'new' as const,
  enableMetrics: true,
  decodePeriodS: 1.0,
  driverVersion: '570.133.20',
  cudaVersion: '12.8',
  python: 'python3',
};

/** PCI buses of the GPUs on an HGX B200 baseboard. */
const BUS_IDS = ['1B', '43', '52', '61', '9D', 'C3', 'D1', 'DF'];

/**
 * Absolute path of the simulator's assets: `src/sim` of the repository (the simulated sglang package under
 * python/, nvidia-smi and friends under bin/). Walks up from this module's folder, so it works from src/sim
 * (ts-node), out/src/sim, out/test, dist/ and the packaged extension (which ships src/sim/python and src/sim/bin).
 */
export function simAssetsDir(): string {
  let dir = __dirname;
  for (;;) {
    for (const candidate of [dir, path.join(dir, 'src', 'sim')])
      if (existsSync(path.join(candidate, 'python', 'sglang', 'launch_server.py'))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`src/sim/python/sglang not found above ${__dirname}`);
    dir = parent;
  }
}

/** Writes the simulated node's home (idempotent: a second call rewrites the same files). */
export function buildSimHome(home: string, opts: SimNodeOptions = {}): SimNodeLayout {
  home = path.resolve(home);
  const o = { ...DEFAULTS, ...stripUndefined(opts) };
  const gpuCount = Math.max(1, Math.floor(o.gpuCount));
  const spec = opts.speculativeAlgorithm === undefined ? DEFAULTS.speculativeAlgorithm : opts.speculativeAlgorithm;
  const modelPath = path.resolve(opts.modelPath ?? path.join(home, 'models', 'Qwen3.6-27B'));
  const servedModelName = path.basename(modelPath).toLowerCase();
  const serverCount = Math.min(gpuCount, Math.max(1, Math.floor(opts.serverCount ?? gpuCount)));
  const ports = Array.from({ length: serverCount }, (_, i) => o.basePort + i);
  const logFiles = ports.map((_, i) => path.join(home, 'logs', `sglang_gpu${i}.log`));
  const w = new HomeWriter(home);
  const assets = simAssetsDir();

  for (const d of ['.sim/run', '.sim/state', 'bin', 'venv/bin', 'venv/lib', 'logs', 'completions', 'configs', 'patches']) {
    w.mkdir(d);
  }

  // --- the simulated node: GPUs for nvidia-smi, the knobs for the servers -------------------
  writeNodeJson(w, home, gpuCount, o);

  const knobs: Record<string, string> = {
    SGLANG_SIM_GEN_TPS: String(o.genTokPerSec),
    SGLANG_SIM_LOG_FORMAT: o.logFormat,
    SGLANG_SIM_DECODE_PERIOD_S: String(o.decodePeriodS),
    SGLANG_SIM_GPU_MEM_MIB: String(o.gpuMemoryMiB),
  };
  w.file(
    '.sim/env.sh',
    '# Knobs of the simulated SGLang servers (sourced by venv/bin/activate; not used by real SGLang).\n' +
      Object.entries(knobs)
        .map(([k, v]) => `export ${k}=${shq(v)}\n`)
        .join(''),
  );

  // --- tools: nvidia-smi on PATH, the sglang package in the venv ----------------------------
  writeTools(w, assets);

  for (const f of ['bin/runpodctl', 'bin/vastai', '.sim/provider']) rmSync(path.join(home, f), { recursive: true, force: true });
  const provider = opts.provider ? writeSimProvider(w, assets, gpuCount, opts.provider) : null;

  // sshd with PermitUserEnvironment reads this: login shells get the same PATH and PYTHONPATH.
  w.mkdir('.ssh', 0o700);
  const sshEnv = {
    PATH: `${home}/bin:${home}/venv/bin:/usr/local/bin:/usr/bin:/bin`,
    PYTHONPATH: `${home}/venv/lib/sglang-sim`,
    VIRTUAL_ENV: `${home}/venv`,
    ...knobs,
    ...provider?.env,
  };
  w.file(
    '.ssh/environment',
    Object.entries(sshEnv)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
    0o600,
  );

  // --- the model ------------------------------------------------------------------------------
  if (isInside(home, modelPath)) writeModel(w, path.relative(home, modelPath));

  // --- launch / stop scripts ------------------------------------------------------------------
  const modelArg = isInside(home, modelPath) ? `"$HOME/${path.relative(home, modelPath)}"` : shq(modelPath);
  const { baseFlags, tunedFlags } = serverFlags(spec, servedModelName, o.enableMetrics);
  const workspace = opts.workspace ? path.resolve(opts.workspace) : null;
  const launchArgs = { modelArg, gpuCount: serverCount, basePort: o.basePort, python: o.python, workspace };
  w.file('launch_all.sh', launchScript({ ...launchArgs, title: 'Launch', flags: baseFlags }), 0o755);
  w.file(
    'launch_tuned.sh',
    launchScript({ ...launchArgs, title: 'Launch (tuned: 96 concurrent, fp8, hierarchical cache)', flags: tunedFlags }),
    0o755,
  );
  // the scripts that need no parameter are files of their own (homeFiles/), checked by `npm run lint`
  w.copy(path.join(assets, 'homeFiles', 'stop_all.sh'), 'stop_all.sh', 0o755);

  // --- the generation job's scripts and artifacts -------------------------------------------
  w.file('generate_completions.py', generateScript(assets, o.basePort, serverCount, servedModelName), 0o755);
  w.copy(path.join(assets, 'homeFiles', 'tokenize_completions.py'), 'tokenize_completions.py', 0o755);
  w.copy(path.join(assets, 'homeFiles', 's3_utils.py'), 's3_utils.py', 0o644);
  writeArtifacts(w, ports);
  const workspaceFiles = workspace ? writeWorkspace(new HomeWriter(workspace), w, o.basePort) : [];

  return {
    home,
    ports,
    logFiles,
    launchScript: path.join(home, 'launch_all.sh'),
    stopScript: path.join(home, 'stop_all.sh'),
    tunedScript: path.join(home, 'launch_tuned.sh'),
    modelPath,
    servedModelName,
    nodeJson: path.join(home, '.sim', 'node.json'),
    workspace,
    workspaceFiles,
    provider,
    runDir: path.join(home, '.sim', 'run'),
    env: {
      HOME: home,
      // System dirs before the caller's PATH so `python3` is /usr/bin/python3 when there is one (a
      // pyenv shim would exec an absolute path and change the servers' argv[0]).
      PATH: `${home}/bin:${home}/venv/bin:/usr/local/bin:/usr/bin:/bin${process.env.PATH ? `:${process.env.PATH}` : ''}`,
      PYTHONPATH: `${home}/venv/lib/sglang-sim`,
      VIRTUAL_ENV: `${home}/venv`,
      ...knobs,
      ...provider?.env,
    },
  };
}

/** `.sim/node.json`: the GPUs nvidia-smi shows (a fresh node has no faults). */
function writeNodeJson(
  w: HomeWriter,
  home: string,
  gpuCount: number,
  o: { gpuName: string; gpuMemoryMiB: number; driverVersion: string; cudaVersion: string },
): void {
  const gpus = Array.from({ length: gpuCount }, (_, i) => ({
    index: i,
    name: o.gpuName,
    memoryTotalMiB: o.gpuMemoryMiB,
    uuid: gpuUuid(`${home}/${i}`),
    busId: `00000000:${BUS_IDS[i % BUS_IDS.length]}:00.0`,
    serial: String(1654524000000 + 1731 * (i + 1)),
    numaNode: i < Math.ceil(gpuCount / 2) ? 0 : 1,
  }));
  const node = {
    hostname: 'b200-node',
    driverVersion: o.driverVersion,
    cudaVersion: o.cudaVersion,
    failMode: null,
    gpus,
  };
  w.file('.sim/node.json', JSON.stringify(node, null, 2) + '\n');
  rmSync(path.join(home, '.sim', 'faults.json'), { force: true }); // a fresh node has no faults
}

/** nvidia-smi, sim-fault and df on PATH; the simulated sglang, router and smg packages in the venv. */
function writeTools(w: HomeWriter, assets: string): void {
  w.copy(path.join(assets, 'bin', 'nvidia-smi'), 'bin/nvidia-smi', 0o755);
  // run-time faults (sim-fault writes .sim/faults.json; df shows a nearly full disk on demand)
  w.copy(path.join(assets, 'bin', 'sim-fault'), 'bin/sim-fault', 0o755);
  w.copy(path.join(assets, 'bin', 'df'), 'bin/df', 0o755);
  w.copyDir(path.join(assets, 'python', 'sglang'), 'venv/lib/sglang-sim/sglang');
  // the simulated Model Gateway: `python3 -m sglang_router.launch_router …`, `python3 -m smg launch …`
  w.copyDir(path.join(assets, 'python', 'sglang_router'), 'venv/lib/sglang-sim/sglang_router');
  w.copyDir(path.join(assets, 'python', 'smg'), 'venv/lib/sglang-sim/smg');
  w.file('venv/bin/activate', activateScript(), 0o644);
  w.file('venv/pyvenv.cfg', 'home = /usr/bin\ninclude-system-site-packages = true\nversion = 3.11.7\n');
}

/** The flags of launch_all.sh's servers, and of launch_tuned.sh's. */
function serverFlags(
  spec: string | null | undefined,
  servedModelName: string,
  enableMetrics: boolean | undefined,
): { baseFlags: string[]; tunedFlags: string[] } {
  const specFlags = spec
    ? [`--speculative-algorithm ${spec}`, '--speculative-num-steps 3', '--speculative-eagle-topk 1', '--speculative-num-draft-tokens 4']
    : [];
  const baseFlags = [
    `--model-path "$MODEL"`,
    `--served-model-name ${servedModelName}`,
    '--host 127.0.0.1',
    '--port $PORT',
    '--mem-fraction-static 0.88',
    '--context-length 32768',
    '--reasoning-parser qwen3',
    '--trust-remote-code',
    ...specFlags,
    ...(enableMetrics ? ['--enable-metrics'] : []),
  ];
  const tunedFlags = [
    ...baseFlags,
    '--max-running-requests 96',
    '--chunked-prefill-size 8192',
    '--cuda-graph-max-bs 96',
    '--enable-hierarchical-cache',
    '--quantization fp8',
    '--kv-cache-dtype fp8_e4m3',
    '--attention-backend flashinfer',
    '--decode-log-interval 40',
  ];
  return { baseFlags, tunedFlags };
}
