/**
 * Builds the home directory of the simulated GPU node (demo node and integration tests).
 *
 * The home looks like the seeds' rented 7x B200 node: launch_all.sh / launch_tuned.sh starting one
 * SGLang server per GPU (ports base+i, logs/sglang_gpu{i}.log), a venv, the generation scripts,
 * completions/progress.json, .done_indices, batch files, logs/generate.log, configs and a patch.
 * The "SGLang" is sim/python/sglang (run as `python3 -m sglang.launch_server ...`, so the argv is
 * the real one) and `nvidia-smi` is sim/bin/nvidia-smi reading `.sim/node.json`. Both are stdlib
 * Python 3. Nothing is started here and nothing is written outside `home`.
 *
 * No `vscode` import: used by the CLI demo, the extension's demo command and the tests.
 */
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

export interface SimNodeOptions {
  /** Number of GPUs and of SGLang servers (one per GPU). Default 7. */
  gpuCount?: number;
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
 * Absolute path of the repository's `sim/` folder (the simulated sglang package and nvidia-smi).
 * Walks up from this module's folder, so it works from src/sim (ts-node), out/src/sim, out/test and dist/.
 */
export function simAssetsDir(): string {
  let dir = __dirname;
  for (;;) {
    const candidate = path.join(dir, 'sim');
    if (existsSync(path.join(candidate, 'python', 'sglang', 'launch_server.py'))) return candidate;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`sim/python/sglang not found above ${__dirname}`);
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
  const ports = Array.from({ length: gpuCount }, (_, i) => o.basePort + i);
  const logFiles = ports.map((_, i) => path.join(home, 'logs', `sglang_gpu${i}.log`));
  const w = new HomeWriter(home);
  const assets = simAssetsDir();

  for (const d of ['.sim/run', '.sim/state', 'bin', 'venv/bin', 'venv/lib', 'logs', 'completions', 'configs', 'patches']) {
    w.mkdir(d);
  }

  // --- the simulated node: GPUs for nvidia-smi, the knobs for the servers -------------------
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
  w.copy(path.join(assets, 'bin', 'nvidia-smi'), 'bin/nvidia-smi', 0o755);
  // run-time faults (sim-fault writes .sim/faults.json; df shows a nearly full disk on demand)
  w.copy(path.join(assets, 'bin', 'sim-fault'), 'bin/sim-fault', 0o755);
  w.copy(path.join(assets, 'bin', 'df'), 'bin/df', 0o755);
  w.copyDir(path.join(assets, 'python', 'sglang'), 'venv/lib/sglang-sim/sglang');
  w.file('venv/bin/activate', activateScript(), 0o644);
  w.file('venv/pyvenv.cfg', 'home = /usr/bin\ninclude-system-site-packages = true\nversion = 3.11.7\n');

  // sshd with PermitUserEnvironment reads this: login shells get the same PATH and PYTHONPATH.
  w.mkdir('.ssh', 0o700);
  const sshEnv = {
    PATH: `${home}/bin:${home}/venv/bin:/usr/local/bin:/usr/bin:/bin`,
    PYTHONPATH: `${home}/venv/lib/sglang-sim`,
    VIRTUAL_ENV: `${home}/venv`,
    ...knobs,
  };
  w.file('.ssh/environment', Object.entries(sshEnv).map(([k, v]) => `${k}=${v}\n`).join(''), 0o600);

  // --- the model ------------------------------------------------------------------------------
  if (isInside(home, modelPath)) writeModel(w, path.relative(home, modelPath));

  // --- launch / stop scripts ------------------------------------------------------------------
  const modelArg = isInside(home, modelPath) ? `"$HOME/${path.relative(home, modelPath)}"` : shq(modelPath);
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
    ...(o.enableMetrics ? ['--enable-metrics'] : []),
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
  const workspace = opts.workspace ? path.resolve(opts.workspace) : null;
  const launchArgs = { modelArg, gpuCount, basePort: o.basePort, python: o.python, workspace };
  w.file('launch_all.sh', launchScript({ ...launchArgs, title: 'Launch', flags: baseFlags }), 0o755);
  w.file(
    'launch_tuned.sh',
    launchScript({ ...launchArgs, title: 'Launch (tuned: 96 concurrent, fp8, hierarchical cache)', flags: tunedFlags }),
    0o755,
  );
  w.file('stop_all.sh', STOP_SCRIPT, 0o755);

  // --- the generation job's scripts and artifacts -------------------------------------------
  w.file('generate_completions.py', generateScript(o.basePort, gpuCount, servedModelName), 0o755);
  w.file('tokenize_completions.py', TOKENIZE_SCRIPT, 0o755);
  w.file('s3_utils.py', S3_UTILS);
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
    runDir: path.join(home, '.sim', 'run'),
    env: {
      HOME: home,
      // System dirs before the caller's PATH so `python3` is /usr/bin/python3 when there is one (a
      // pyenv shim would exec an absolute path and change the servers' argv[0]).
      PATH: `${home}/bin:${home}/venv/bin:/usr/local/bin:/usr/bin:/bin${process.env.PATH ? `:${process.env.PATH}` : ''}`,
      PYTHONPATH: `${home}/venv/lib/sglang-sim`,
      VIRTUAL_ENV: `${home}/venv`,
      ...knobs,
    },
  };
}

// ------------------------------------------------------------------------------------ helpers

/** All writes go through this, so nothing lands outside the home. */
class HomeWriter {
  constructor(readonly home: string) {}

  private abs(rel: string): string {
    const p = path.resolve(this.home, rel);
    if (!isInside(this.home, p)) throw new Error(`refusing to write outside the sim home: ${p}`);
    return p;
  }

  mkdir(rel: string, mode?: number): string {
    const p = this.abs(rel);
    mkdirSync(p, { recursive: true });
    if (mode !== undefined) chmodSync(p, mode);
    return p;
  }

  file(rel: string, content: string | Buffer, mode = 0o644): void {
    const p = this.abs(rel);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, content);
    chmodSync(p, mode); // writeFileSync's mode only applies when the file is created
  }

  copy(src: string, rel: string, mode: number): void {
    const p = this.abs(rel);
    mkdirSync(path.dirname(p), { recursive: true });
    cpSync(src, p);
    chmodSync(p, mode);
  }

  /** Replaces the directory with a fresh copy (no stale files, no __pycache__). */
  copyDir(src: string, rel: string): void {
    const p = this.abs(rel);
    rmSync(p, { recursive: true, force: true });
    cpSync(src, p, { recursive: true, filter: (s) => !/(__pycache__|\.pyc$)/.test(s) });
  }
}

function isInside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}

/** POSIX single-quoting. */
function shq(s: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

/** A stable GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx UUID. */
function gpuUuid(seed: string): string {
  const h = createHash('md5').update(seed).digest('hex');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Small deterministic PRNG (mulberry32) so repeated builds write identical files. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** `YYYY-MM-DD HH:MM:SS` of a UTC epoch-ms value (the artifacts use fixed 2026 dates). */
function stamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

// ------------------------------------------------------------------------------------ scripts

function activateScript(): string {
  return `# This file must be used with "source venv/bin/activate" (or ". venv/bin/activate"); POSIX sh.
# Simulated venv: the sglang package is the GPU-free simulator under venv/lib/sglang-sim.
if [ -n "\${VIRTUAL_ENV:-}" ] && [ "\${VIRTUAL_ENV}" != "$HOME/venv" ]; then
    echo "warning: replacing the active virtualenv \${VIRTUAL_ENV}" >&2
fi
VIRTUAL_ENV="$HOME/venv"
export VIRTUAL_ENV
PATH="$HOME/venv/bin:$HOME/bin:$PATH"
export PATH
PYTHONPATH="$HOME/venv/lib/sglang-sim\${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONPATH
if [ -f "$HOME/.sim/env.sh" ]; then
    . "$HOME/.sim/env.sh"
fi
`;
}

function launchScript(a: {
  title: string;
  modelArg: string;
  gpuCount: number;
  basePort: number;
  python: string;
  flags: string[];
  workspace: string | null;
}): string {
  const flagLines = a.flags.map((f) => `    ${f} \\\n`).join('');
  // POSIX sh body (the demo runs it with /bin/sh); setsid + nohup + </dev/null so the servers
  // outlive the SSH session that ran this script and the session can close at once.
  return `#!/bin/bash
# ${a.title}: one independent SGLang server per GPU (data parallel by hand).
# GPU i -> port ${a.basePort}+i, log logs/sglang_gpu$i.log.
. "$HOME/venv/bin/activate"

MODEL=${a.modelArg}
NUM_GPUS=${a.gpuCount}
BASE_PORT=${a.basePort}
mkdir -p "$HOME/logs"
cd "$HOME" || exit 1

i=0
while [ "$i" -lt "$NUM_GPUS" ]; do
  PORT=$((BASE_PORT + i))
  cd "$HOME"
${a.workspace ? `  if [ "$i" -eq 0 ]; then cd ${shq(a.workspace)} || exit 1; fi\n` : ''}  CUDA_VISIBLE_DEVICES=$i setsid nohup ${shq(a.python)} -m sglang.launch_server \\
${flagLines}    > "$HOME/logs/sglang_gpu$i.log" 2>&1 < /dev/null &
  echo "GPU $i -> port $PORT (pid $!) log: logs/sglang_gpu$i.log"
  i=$((i + 1))
done
echo "Launched $NUM_GPUS servers; each log says 'The server is fired up and ready to roll!' when ready."
`;
}

const STOP_SCRIPT = `#!/bin/bash
# Stop the SGLang servers started by launch_all.sh / launch_tuned.sh: SIGTERM, then SIGKILL after 15 s.
# POSIX sh body. Servers are found by their pid files ($HOME/.sim/run/server_<port>.pid: "<pid> <gpu>"),
# which a server removes when it has shut down.
stopping=""
for f in "$HOME"/.sim/run/server_*.pid; do
  [ -f "$f" ] || continue
  read -r pid _rest < "$f" || continue
  if kill "$pid" 2>/dev/null; then
    echo "stopping pid $pid ($(basename "$f" .pid))"
    stopping="$stopping $f"
  else
    rm -f "$f"  # stale: the process is gone
  fi
done
n=0
left="$stopping"
while [ -n "$left" ] && [ "$n" -lt 150 ]; do
  sleep 0.1
  n=$((n + 1))
  still=""
  for f in $left; do
    [ -f "$f" ] && still="$still $f"
  done
  left="$still"
done
for f in $left; do
  read -r pid _rest < "$f" 2>/dev/null && kill -9 "$pid" 2>/dev/null && echo "killed pid $pid (did not stop within 15 s)"
  rm -f "$f"
done
count=0
for f in $stopping; do count=$((count + 1)); done
echo "stopped $count server(s)"
`;

function generateScript(basePort: number, gpuCount: number, model: string): string {
  return `#!/usr/bin/env python3
"""Generate thinking-mode completions for every prompt with the SGLang servers on this node.

Prompts are spread over the ${gpuCount} servers (ports ${basePort}..${basePort + gpuCount - 1}) with a fixed
concurrency. Finished rows go to completions/batch_NNNNNN.jsonl (500 rows each), every batch is
uploaded to S3 (s3_utils.py) and its indices appended to completions/.done_indices, so a restart
resumes where the last run stopped. Progress: completions/progress.json and logs/generate.log.
"""
import argparse
import json
import logging
import os
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

HOME = os.path.expanduser("~")
OUT = os.path.join(HOME, "completions")
SERVERS = ["http://127.0.0.1:%d" % p for p in range(${basePort}, ${basePort + gpuCount})]
MODEL = "${model}"
BATCH = 500

log = logging.getLogger("generate")


def chat(server, prompt, max_tokens):
    body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": prompt}],
                       "max_tokens": max_tokens, "temperature": 0.6, "top_p": 0.95,
                       "chat_template_kwargs": {"enable_thinking": True}}).encode()
    req = urllib.request.Request(server + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=1800) as r:
        return json.load(r)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prompts", default=os.path.join(HOME, "prompts.jsonl"))
    ap.add_argument("--concurrency", type=int, default=96)
    ap.add_argument("--max-tokens", type=int, default=16384)
    ap.add_argument("--no-upload", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(filename=os.path.join(HOME, "logs", "generate.log"), level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(message)s")
    done_path = os.path.join(OUT, ".done_indices")
    done = set()
    if os.path.exists(done_path):
        done = {int(x) for x in open(done_path) if x.strip()}
    prompts = [json.loads(line) for line in open(args.prompts)]
    todo = [(i, p) for i, p in enumerate(prompts) if i not in done]
    log.info("Loaded %d prompts from %s (resuming: %d done, %d to go)", len(prompts), args.prompts, len(done), len(todo))
    lock = threading.Lock()
    rows, stats = [], {"completed": len(done), "failed": 0, "output_tokens": 0}
    t0 = time.time()

    def work(item):
        i, p = item
        server = SERVERS[i % len(SERVERS)]
        for attempt in (1, 2, 3):
            try:
                r = chat(server, p["prompt"], args.max_tokens)
                break
            except Exception as e:  # noqa: BLE001 - retried, then counted as failed
                log.warning("request %d to %s failed: %s (attempt %d/3)", i, server[-6:], e, attempt)
        else:
            with lock:
                stats["failed"] += 1
            return
        msg = r["choices"][0]["message"]
        with lock:
            rows.append({"index": i, "prompt": p["prompt"], "reasoning": msg.get("reasoning_content"),
                         "completion": msg["content"], "output_tokens": r["usage"]["completion_tokens"],
                         "finish_reason": r["choices"][0]["finish_reason"]})
            stats["completed"] += 1
            stats["output_tokens"] += r["usage"]["completion_tokens"]
            if len(rows) >= BATCH:
                flush(rows[:BATCH], args.no_upload)
                del rows[:BATCH]
            write_progress(stats, len(prompts), time.time() - t0, "running")

    with ThreadPoolExecutor(args.concurrency) as pool:
        list(pool.map(work, todo))
    if rows:
        flush(rows, args.no_upload)
    write_progress(stats, len(prompts), time.time() - t0, "done")
    log.info("done: %d completed, %d failed", stats["completed"], stats["failed"])


def flush(rows, no_upload):
    n = len([f for f in os.listdir(OUT) if f.startswith("batch_")])
    path = os.path.join(OUT, "batch_%06d.jsonl" % n)
    with open(path, "w") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\\n")
    if not no_upload:
        from s3_utils import upload_file
        upload_file(path, "completions/" + os.path.basename(path))
    with open(os.path.join(OUT, ".done_indices"), "a") as f:
        f.writelines("%d\\n" % r["index"] for r in rows)
    log.info("wrote %s (%d rows)", os.path.basename(path), len(rows))


def write_progress(stats, total, elapsed, status):
    tmp = os.path.join(OUT, "progress.json.tmp")
    with open(tmp, "w") as f:
        json.dump(dict(stats, total=total, elapsed_s=round(elapsed), status=status), f, indent=2)
    os.replace(tmp, os.path.join(OUT, "progress.json"))


if __name__ == "__main__":
    main()
`;
}

const TOKENIZE_SCRIPT = `#!/usr/bin/env python3
"""Tokenize the generated completions for DFlash drafter training (chat template + loss mask)."""
import argparse
import glob
import json
import os

from transformers import AutoTokenizer


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default=os.path.expanduser("~/models/Qwen3.6-27B"))
    ap.add_argument("--input", default=os.path.expanduser("~/completions"))
    ap.add_argument("--output", default=os.path.expanduser("~/tokenized"))
    ap.add_argument("--max-len", type=int, default=32768)
    args = ap.parse_args()
    tok = AutoTokenizer.from_pretrained(args.model, trust_remote_code=True)
    os.makedirs(args.output, exist_ok=True)
    short = 0
    for path in sorted(glob.glob(os.path.join(args.input, "batch_*.jsonl"))):
        out = os.path.join(args.output, os.path.basename(path))
        with open(path) as f, open(out, "w") as g:
            for line in f:
                row = json.loads(line)
                prompt = tok.apply_chat_template([{"role": "user", "content": row["prompt"]}],
                                                 tokenize=False, add_generation_prompt=True)
                answer = "<think>\\n%s\\n</think>\\n\\n%s<|im_end|>" % (row.get("reasoning") or "", row["completion"])
                p_ids = tok(prompt, add_special_tokens=False)["input_ids"]
                a_ids = tok(answer, add_special_tokens=False)["input_ids"]
                ids = (p_ids + a_ids)[: args.max_len]
                mask = ([0] * len(p_ids) + [1] * len(a_ids))[: args.max_len]
                if sum(mask) <= 6:
                    short += 1  # empty answers: the bug that made the first dataset useless
                g.write(json.dumps({"index": row["index"], "input_ids": ids, "loss_mask": mask}) + "\\n")
        print("tokenized", os.path.basename(path))
    print("samples with loss_mask sum <= 6:", short)


if __name__ == "__main__":
    main()
`;

const S3_UTILS = `"""S3 helpers for the generation job. Credentials come from the standard AWS chain
(environment, ~/.aws/credentials, instance role); nothing secret is stored here."""
import os

BUCKET = os.environ.get("S3_BUCKET", "train-dflash-qwen36-27b")
ENDPOINT = os.environ.get("S3_ENDPOINT_URL")  # e.g. a MinIO/R2 endpoint; None = AWS


def client():
    import boto3  # imported lazily: the generation script runs without it when --no-upload

    return boto3.client("s3", endpoint_url=ENDPOINT)


def upload_file(path, key, bucket=BUCKET):
    client().upload_file(path, bucket, key)
    return "s3://%s/%s" % (bucket, key)


def list_prefix(prefix, bucket=BUCKET):
    """(key, size) of every object under prefix, following continuation tokens."""
    paginator = client().get_paginator("list_objects_v2")
    for page in paginator.paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            yield obj["Key"], obj["Size"]


def exists(key, bucket=BUCKET):
    try:
        client().head_object(Bucket=bucket, Key=key)
        return True
    except Exception:  # noqa: BLE001 - botocore ClientError 404
        return False
`;

// ------------------------------------------------------------------------------------ model + artifacts

function writeModel(w: HomeWriter, rel: string): void {
  const config = {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    hidden_size: 5120,
    intermediate_size: 17408,
    num_hidden_layers: 64,
    num_attention_heads: 40,
    num_key_value_heads: 8,
    head_dim: 128,
    max_position_embeddings: 262144,
    num_nextn_predict_layers: 1,
    rope_theta: 10000000,
    rms_norm_eps: 1e-6,
    vocab_size: 151936,
    bos_token_id: 151643,
    eos_token_id: 151645,
    tie_word_embeddings: false,
    torch_dtype: 'bfloat16',
    transformers_version: '4.57.1',
  };
  w.file(`${rel}/config.json`, JSON.stringify(config, null, 2) + '\n');
  w.file(
    `${rel}/generation_config.json`,
    JSON.stringify({ bos_token_id: 151643, eos_token_id: [151645, 151643], do_sample: true, temperature: 0.6, top_k: 20, top_p: 0.95 }, null, 2) + '\n',
  );
  w.file(
    `${rel}/tokenizer_config.json`,
    JSON.stringify(
      {
        tokenizer_class: 'Qwen2Tokenizer',
        model_max_length: 262144,
        eos_token: '<|im_end|>',
        pad_token: '<|endoftext|>',
        bos_token: null,
        add_bos_token: false,
        clean_up_tokenization_spaces: false,
        split_special_tokens: false,
      },
      null,
      2,
    ) + '\n',
  );
  // One 1 MiB placeholder shard (deterministic bytes); the real one would be ~5 GB.
  const rand = prng(27);
  const shard = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < shard.length; i += 4) shard.writeUInt32LE(Math.floor(rand() * 4294967296), i);
  w.file(`${rel}/model-00001-of-00011.safetensors`, shard);
}

const TOPICS = [
  'Prove that the square root of 2 is irrational.',
  'Write a Python function that merges overlapping intervals.',
  'Explain the difference between TCP and UDP for a game server.',
  'How many trailing zeros does 100! have?',
  'Summarize the causes of the 1929 stock market crash.',
  'Implement an LRU cache in Rust.',
  'What is the expected number of coin flips to get two heads in a row?',
  'Translate "the early bird catches the worm" into French and explain the idiom.',
];

function writeArtifacts(w: HomeWriter, ports: number[]): void {
  const t0 = Date.UTC(2026, 3, 4, 2, 14, 7); // the run started 2026-04-04 02:14:07
  const total = 913786;
  const progress = {
    completed: 902087,
    failed: 2199,
    total,
    output_tokens: 1640000000,
    elapsed_s: 62820,
    req_per_s: 14.36,
    status: 'running',
    uploaded_batches: 1805,
    uploaded_bytes: 7784628224,
    batch_size: 500,
    concurrency: 96,
    servers: ports.map((p) => `http://127.0.0.1:${p}`),
    s3_prefix: 's3://train-dflash-qwen36-27b/completions/',
    started_at: new Date(t0).toISOString().replace('.000', ''),
    updated_at: new Date(t0 + 62820_000).toISOString().replace('.000', ''),
  };
  w.file('completions/progress.json', JSON.stringify(progress, null, 2) + '\n');

  // .done_indices: a few thousand indices, in completion order, with two gaps (failed prompts).
  const gaps = new Set<number>([1733, ...Array.from({ length: 8 }, (_, k) => 2950 + k)]);
  const done: string[] = [];
  for (let i = 0; i < 4012; i++) if (!gaps.has(i)) done.push(String(i));
  w.file('completions/.done_indices', done.join('\n') + '\n');

  // A handful of small batch files (what the S3 prefix holds).
  const rand = prng(1805);
  for (let b = 0; b < 5; b++) {
    const rows: string[] = [];
    for (let r = 0; r < 20; r++) {
      const index = b * 20 + r;
      const topic = TOPICS[index % TOPICS.length];
      const tokens = 400 + Math.floor(rand() * 3600);
      rows.push(
        JSON.stringify({
          index,
          prompt: topic,
          reasoning: `Let me think about this step by step. ${topic} First I restate the problem, then check the edge cases.`,
          completion: `Here is a concise answer to: ${topic}`,
          output_tokens: tokens,
          finish_reason: 'stop',
          server: `http://127.0.0.1:${ports[index % ports.length]}`,
        }),
      );
    }
    w.file(`completions/batch_${pad(b, 6)}.jsonl`, rows.join('\n') + '\n');
  }

  // logs/generate.log: the client's log over the 17.45 h run.
  const lines: string[] = [];
  const ms = (t: number) => `${stamp(t)},${pad(Math.floor(t % 1000), 3)}`;
  lines.push(`${ms(t0)} INFO Loaded ${total} prompts from /root/prompts.jsonl (resuming: 0 done, ${total} to go)`);
  lines.push(`${ms(t0 + 3)} INFO Servers: ${ports.map((p) => `:${p}`).join(' ')} | concurrency 96 | batch 500 | s3://train-dflash-qwen36-27b/completions/`);
  const lrand = prng(62820);
  let batch = 0;
  for (let s = 300; s <= 62820; s += 300) {
    const t = t0 + s * 1000 + Math.floor(lrand() * 900);
    const completed = Math.min(902087, Math.round((902087 * s) / 62820));
    const failed = Math.round((2199 * s) / 62820);
    while ((batch + 1) * 500 <= completed) {
      const tb = t0 + Math.round(((batch + 1) * 500 * 62820) / 902087) * 1000;
      if (batch % 50 === 0 || batch >= 1800) {
        lines.push(`${ms(tb)} INFO uploaded batch_${pad(batch, 6)}.jsonl (500 rows, ${(3.9 + lrand() * 0.6).toFixed(1)} MB) -> s3://train-dflash-qwen36-27b/completions/batch_${pad(batch, 6)}.jsonl`);
      }
      batch++;
    }
    if (s % 7200 === 2100) {
      const port = ports[Math.floor(lrand() * ports.length)];
      lines.push(`${ms(t - 40_000)} WARNING request ${completed - 17} to :${port} failed: ReadTimeout (attempt 1/3), retrying`);
    }
    const rate = completed / s;
    const eta = Math.max(0, Math.round((total - completed) / Math.max(rate, 1e-9)));
    lines.push(
      `${ms(t)} INFO progress ${completed}/${total} (${((100 * completed) / total).toFixed(1)}%) | ${rate.toFixed(2)} req/s | ` +
        `${((1640000000 * s) / 62820 / 1e9).toFixed(2)}B tok | failed ${failed} | eta ${Math.floor(eta / 3600)}h${pad(Math.floor((eta % 3600) / 60), 2)}m`,
    );
  }
  lines.sort(); // every line starts with its timestamp: sorting puts them in time order
  w.file('logs/generate.log', lines.join('\n') + '\n');

  w.file(
    'nohup.out',
    'nohup: ignoring input\n' +
      `Loaded ${total} prompts; resuming from .done_indices\n` +
      `progress 902087/${total} (98.7%) | 14.36 req/s | 1.64B tok | failed 2199\n`,
  );

  w.file(
    'configs/dflash_qwen36.yaml',
    `# DFlash drafter for Qwen3.6-27B, trained on the thinking-mode completions generated on this node.
target_model: /root/models/Qwen3.6-27B
draft:
  num_layers: 1
  hidden_size: 5120
  block_size: 16
  share_embeddings: true
  share_lm_head: true
data:
  train: s3://train-dflash-qwen36-27b/tokenized/
  max_len: 32768
  loss_mask: assistant_only
  min_loss_tokens: 32   # drop the empty "thinking\\n\\nresponse\\nOK." samples
train:
  lr: 3.0e-4
  warmup_steps: 500
  epochs: 2
  micro_batch_tokens: 65536
  grad_accum: 4
  bf16: true
  seed: 42
eval:
  every_steps: 1000
  spec_decode_bench:
    speculative_algorithm: DFLASH
    speculative_num_draft_tokens: 16
`,
  );

  w.file(
    'patches/sglang-mtp-fix.patch',
    `diff --git a/python/sglang/srt/speculative/eagle_worker.py b/python/sglang/srt/speculative/eagle_worker.py
index 3f1c2ab..9d04e7c 100644
--- a/python/sglang/srt/speculative/eagle_worker.py
+++ b/python/sglang/srt/speculative/eagle_worker.py
@@ -212,7 +212,10 @@ class EAGLEWorker(TpModelWorker):
         # Share the embedding and lm_head with the target model (MTP / NEXTN drafts)
-        embed, head = self.target_worker.model_runner.model.get_embed_and_head()
-        self.draft_model_runner.model.set_embed_and_head(embed, head)
+        embed, head = self.target_worker.model_runner.model.get_embed_and_head()
+        if self.hot_token_id is not None:
+            head = head.clone()
+            head.data = head.data[self.hot_token_id]
+        self.draft_model_runner.model.set_embed_and_head(embed, head)
 
         # Init attention backend and cuda graphs
         self.draft_model_runner.server_args.disable_cuda_graph = (
             backup_disable_cuda_graph
`,
  );
}

// ------------------------------------------------------------------------------------ work folder outside the home

/** The client that keeps generating: talks to a server port and appends to out/results.jsonl (kept open). */
const RUN_EXPERIMENT = `#!/usr/bin/env python3
"""Generation client: POSTs prompts to the SGLang server and appends each answer to out/results.jsonl.

Runs until killed (or --max-seconds); the output file stays open, as a real client's does.
"""
import argparse
import json
import os
import time
import urllib.request

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "out", "results.jsonl"))
ap.add_argument("--period", type=float, default=0.5)
ap.add_argument("--max-seconds", type=float, default=900)
args = ap.parse_args()
os.makedirs(os.path.dirname(args.out), exist_ok=True)
t0 = time.time()
i = 0
with open(args.out, "a", buffering=1) as out:
    while time.time() - t0 < args.max_seconds:
        body = json.dumps({"text": "prompt %d" % i, "sampling_params": {"max_new_tokens": 16}}).encode()
        try:
            req = urllib.request.Request("http://127.0.0.1:%d/generate" % args.port, body, {"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=10) as r:
                ans = json.load(r)
            out.write(json.dumps({"index": i, "answer": ans.get("text", "")}) + "\\n")
        except Exception as e:  # noqa: BLE001 - the server may be stopping
            out.write(json.dumps({"index": i, "error": str(e)}) + "\\n")
        i += 1
        time.sleep(args.period)
`;

function writeWorkspace(ws: HomeWriter, home: HomeWriter, basePort: number): string[] {
  const files: Array<[HomeWriter, string, string | Buffer, number?]> = [
    [ws, 'Makefile', 'all: kernels\n\nkernels:\n\tnvcc -O3 -arch=sm_100 -o kernels/attn kernels/attn.cu\n'],
    [ws, 'Dockerfile', 'FROM lmsysorg/sglang:v0.5.11-cu128\nWORKDIR /workspace\nCOPY . .\n'],
    [ws, 'notes', 'Run 3: MTP accept length 2.7 at 96 concurrent; fp8 KV is fine for the drafter data.\n'],
    [ws, 'run_experiment', RUN_EXPERIMENT, 0o755],
    [ws, 'kernels/attn.cu', '__global__ void attn(const float* q, float* o, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) o[i] = q[i];\n}\n'],
    [ws, 'templates/chat_template.jinja', "{% for m in messages %}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }}<|im_end|>\\n{% endfor %}"],
    [ws, '.hydra/config.yaml', `server:\n  port: ${basePort}\nclient:\n  concurrency: 96\n`],
    [ws, 'checkpoints/drafter-lora/adapter_config.json', JSON.stringify({ r: 16, lora_alpha: 32, target_modules: ['q_proj', 'v_proj'] }) + '\n'],
    [ws, 'checkpoints/drafter-lora/adapter_model.safetensors', detBytes(64 * 1024, 17)],
    [ws, 'out/.keep', ''],
    [home, '.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/c1899de/config.json', '{"model_type": "qwen3"}\n'],
    [home, '.cache/huggingface/hub/models--Qwen--Qwen3-0.6B/snapshots/c1899de/model.safetensors', detBytes(32 * 1024, 5)],
    [
      home,
      '.ssh/id_ed25519',
      // Assembled at run time: the packaged .vsix carries this module, and vsce refuses a package whose
      // text holds something that looks like a private key or an AWS secret (these are fake).
      ['-----BEGIN', 'OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END', 'OPENSSH PRIVATE KEY-----\n'].join(' '),
      0o600,
    ],
    [home, '.aws/credentials', ['[default]', ['aws_access_key_id = AKIA', 'SIMULATEDKEY0001'].join(''), ['aws_secret_access_key', 'simulatedSecretAccessKey0000000000000000'].join(' = '), ''].join('\n'), 0o600],
  ];
  const out: string[] = [];
  for (const [w, rel, content, mode] of files) {
    w.file(rel, content, mode ?? 0o644);
    out.push(path.join(w.home, rel));
  }
  return out;
}

function detBytes(n: number, seed: number): Buffer {
  const r = prng(seed);
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = Math.floor(r() * 256);
  return b;
}
