"""Simulated ``python3 -m sglang.launch_server`` (stdlib only, no GPU).

Run exactly like the real server so the process argv is the real one:

    CUDA_VISIBLE_DEVICES=0 python3 -m sglang.launch_server --model-path /m --port 30000 ...

What it does:
  * parses SGLang's launch flags with argparse (unknown flag -> usage + exit 2);
  * refuses a model path that is not a directory (a transformers-style traceback
    and exit 1) unless SGLANG_SIM_ALLOW_MISSING_MODEL=1;
  * prints SGLang-style startup lines, then ``The server is fired up and ready to
    roll!``, then ``Decode batch`` / ``Prefill batch`` lines in the 2025 ("old")
    or 2026 ("new") format, plus uvicorn access lines;
  * serves /health, /get_server_info, /server_info, /get_model_info,
    /model_info, /v1/models, /metrics (only with --enable-metrics),
    POST /v1/chat/completions, /v1/completions and /generate;
  * writes ``$HOME/.sim/run/server_<port>.pid`` ("<pid> <gpu,...> <mem-fraction>")
    for the simulated nvidia-smi and removes it on exit; SIGTERM/SIGINT exit 0.

Simulator knobs (environment, none of them used by real SGLang):
  SGLANG_SIM_STARTUP_S        seconds from start to "fired up" (default 1.5)
  SGLANG_SIM_DECODE_PERIOD_S  seconds between decode log rounds (default 1.0)
  SGLANG_SIM_GEN_TPS          gen throughput per DP rank, token/s (default 2000)
  SGLANG_SIM_RUNNING          synthetic running requests per DP rank (default 32;
                              0 = only real in-flight HTTP requests count)
  SGLANG_SIM_LOG_FORMAT       "2026" (default; "new" is the same): decode lines end at "#queue-req: N",
                              prefill lines carry "#pending-token", "Load weight end. elapsed=...",
                              PP/EP rank tags, the 2026 watchdog/SIGQUIT wording; "2025": the late-2025
                              shapes (trailing ", ", the 2025 watchdog line); "old": early 2025
                              ("Decode batch. k: v")
  SGLANG_SIM_SCHEDULER_PROCS  "1" (default): one child process per GPU named "sglang::scheduler_TP<n>"
                              (as real schedulers are), listed by the fake nvidia-smi; "0": none
  SGLANG_SIM_LINES_PER_S      if set, emit decode lines at this rate (load tests)
  SGLANG_SIM_REQUEST_S        latency of one POST completion (default 0.2)
  SGLANG_SIM_ACCEPT_LEN       mean speculative accept length (default from steps)
  SGLANG_SIM_ALLOW_MISSING_MODEL=1  accept a --model-path that does not exist
  SGLANG_SIM_GPU_MEM_MIB      GPU memory (default: from node.json, else 183359)
  SGLANG_SIM_RANK_TAGS=always print " TP0" even on one GPU (early-2025 builds)
  SGLANG_SIM_CRASH_AFTER_S    after this many seconds print a CUDA OOM traceback
                              and exit 1 (to simulate a crashed instance)
  SGLANG_SIM_VERSION          reported version (default 0.5.11)
  SGLANG_SIM_METRICS_AUTH=1   with --api-key, /metrics also wants the key (other endpoints always do)
  SGLANG_SIM_RUN_DIR          pid-file directory (default $HOME/.sim/run)
  SIM_NODE_JSON               node description (default $HOME/.sim/node.json)
  SGLANG_LOG_MS               (real SGLang variable) append .mmm to timestamps
Run-time faults: ``<run dir>/../faults.json`` (written by ``sim-fault``, polled every decode round):
{"servers": {"<port>": {"mode": "crash" | "oom" | "nccl" | "kv-pressure" | "hang" | "hang-hard" |
"subprocess-crash" | "stall" | "dp-slow" | "accept-drop" | "health-wedged", ...}}}; see sim/bin/sim-fault.
Files: ``<run dir>/../pause_load`` or ``<run dir>/../pause_load_<port>`` existing
pauses the synthetic load (running drains to 0 and decode lines stop, as a real
idle server does); removing it resumes the load.
"""

import argparse
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from sglang import __version__

# Builtins of 2026 builds; the flag is a free string there ("Or any name registered"), so any value is accepted.
SPEC_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO"]
QUANT_METHODS = [
    "awq", "fp8", "gptq", "marlin", "gptq_marlin", "awq_marlin", "bitsandbytes", "gguf",
    "modelopt", "modelopt_fp8", "modelopt_fp4", "petit_nvfp4", "w8a8_int8", "w8a8_fp8",
    "moe_wna16", "qoq", "w4afp8", "mxfp4", "compressed-tensors",
]
KV_CACHE_DTYPES = ["auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"]
# Lines SGLang logs at INFO: gone with --log-level warning.
QUIET_DROP = re.compile(r"Decode batch|Prefill batch|ready to roll|INFO: ")


# --------------------------------------------------------------------------- helpers


def env_float(name, default):
    try:
        return float(os.environ.get(name, ""))
    except ValueError:
        return default


def home_dir():
    return os.environ.get("HOME") or os.path.expanduser("~")


def run_dir():
    return os.environ.get("SGLANG_SIM_RUN_DIR") or os.path.join(home_dir(), ".sim", "run")


def node_json():
    path = os.environ.get("SIM_NODE_JSON") or os.path.join(home_dir(), ".sim", "node.json")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def go_float(v):
    """Format a float like prometheus_client's floatToGoString."""
    v = float(v)
    if v == math.inf:
        return "+Inf"
    if v == -math.inf:
        return "-Inf"
    if math.isnan(v):
        return "NaN"
    s = repr(v)
    dot = s.find(".")
    if v > 0 and dot > 6:
        mantissa = "{0}.{1}{2}".format(s[0], s[1:dot], s[dot + 1:]).rstrip("0.")
        return "{0}e+0{1}".format(mantissa, dot - 1)
    return s


# --------------------------------------------------------------------------- argv


def build_parser():
    """The real server's flags (a subset of ServerArgs.add_cli_args), same spelling."""
    p = argparse.ArgumentParser()
    a = p.add_argument
    # Model and tokenizer
    a("--model-path", "--model", type=str, required=True, dest="model_path",
      help="The path of the model weights. This can be a local folder or a Hugging Face repo ID.")
    a("--tokenizer-path", type=str, default=None)
    a("--tokenizer-mode", type=str, default="auto", choices=["auto", "slow"])
    a("--skip-tokenizer-init", action="store_true")
    a("--load-format", type=str, default="auto")
    a("--trust-remote-code", action="store_true")
    a("--dtype", type=str, default="auto")
    a("--kv-cache-dtype", type=str, default="auto", choices=KV_CACHE_DTYPES)
    a("--quantization", type=str, default=None, choices=QUANT_METHODS)
    a("--context-length", type=int, default=None)
    a("--served-model-name", type=str, default=None)
    a("--chat-template", type=str, default=None)
    a("--revision", type=str, default=None)
    a("--is-embedding", action="store_true")
    # HTTP server
    a("--host", type=str, default="127.0.0.1")
    a("--port", type=int, default=30000)
    a("--api-key", type=str, default=None)
    a("--admin-api-key", type=str, default=None)
    a("--config", type=str, default=None, help="A YAML file of server arguments; command-line flags override it.")
    # Memory and scheduling
    a("--mem-fraction-static", type=float, default=None)
    a("--max-running-requests", type=int, default=None)
    a("--max-total-tokens", type=int, default=None)
    a("--chunked-prefill-size", type=int, default=None)
    a("--max-prefill-tokens", type=int, default=16384)
    a("--schedule-policy", type=str, default="fcfs")
    a("--schedule-conservativeness", type=float, default=1.0)
    a("--cuda-graph-max-bs", type=int, default=None)
    a("--disable-cuda-graph", action="store_true")
    a("--disable-radix-cache", action="store_true")
    a("--enable-hierarchical-cache", action="store_true")
    a("--hicache-ratio", type=float, default=2.0)
    # Parallelism
    a("--tensor-parallel-size", "--tp-size", "--tp", type=int, default=1, dest="tp_size")
    a("--data-parallel-size", "--dp-size", "--dp", type=int, default=1, dest="dp_size")
    a("--pipeline-parallel-size", "--pp-size", type=int, default=1, dest="pp_size")
    a("--expert-parallel-size", "--ep-size", "--ep", type=int, default=1, dest="ep_size")
    # 2026 parallel sizes carved out of TP (GPU count unchanged)
    a("--decode-context-parallel-size", "--dcp-size", type=int, default=1, dest="dcp_size")
    a("--attention-context-parallel-size", "--attn-cp-size", type=int, default=1, dest="attn_cp_size")
    a("--moe-data-parallel-size", "--moe-dp-size", type=int, default=1, dest="moe_dp_size")
    a("--disaggregation-mode", type=str, default="null", choices=["null", "prefill", "decode"])
    a("--enable-dp-attention", action="store_true")
    a("--nnodes", type=int, default=1)
    a("--node-rank", type=int, default=0)
    a("--dist-init-addr", type=str, default=None)
    a("--base-gpu-id", type=int, default=0)
    a("--random-seed", type=int, default=None)
    a("--stream-interval", type=int, default=1)
    a("--watchdog-timeout", type=float, default=300)
    a("--attention-backend", type=str, default=None)
    a("--sampling-backend", type=str, default=None)
    a("--grammar-backend", type=str, default=None)
    # Speculative decoding
    a("--speculative-algorithm", type=str, default=None)
    a("--speculative-draft-model-path", "--speculative-draft-model", type=str, default=None,
      dest="speculative_draft_model_path")
    a("--speculative-num-steps", type=int, default=None)
    a("--speculative-eagle-topk", type=int, default=None)
    a("--speculative-num-draft-tokens", type=int, default=None)
    a("--speculative-accept-threshold-single", type=float, default=1.0)
    a("--speculative-accept-threshold-acc", type=float, default=1.0)
    # API related
    a("--reasoning-parser", type=str, default=None)
    a("--tool-call-parser", type=str, default=None)
    # Logging and metrics
    a("--log-level", type=str, default="info")
    a("--log-level-http", type=str, default=None)
    a("--log-requests", action="store_true")
    a("--enable-metrics", action="store_true")
    a("--decode-log-interval", type=int, default=40)
    return p


# --------------------------------------------------------------------------- model


def fail_missing_model(path):
    """What transformers prints when AutoConfig cannot find the model; exit 1."""
    site = "/usr/local/lib/python3.11/dist-packages"
    sys.stdout.flush()
    sys.stderr.write(
        "Traceback (most recent call last):\n"
        "  File \"<frozen runpy>\", line 198, in _run_module_as_main\n"
        "  File \"<frozen runpy>\", line 88, in _run_code\n"
        "  File \"{site}/sglang/launch_server.py\", line 24, in <module>\n"
        "    server_args = prepare_server_args(sys.argv[1:])\n"
        "                  ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "  File \"{site}/sglang/srt/server_args.py\", line 3984, in prepare_server_args\n"
        "    return ServerArgs.from_cli_args(raw_args)\n"
        "  File \"{site}/sglang/srt/server_args.py\", line 689, in __post_init__\n"
        "    self._handle_model_specific_adjustments()\n"
        "  File \"{site}/sglang/srt/server_args.py\", line 1102, in _handle_model_specific_adjustments\n"
        "    hf_config = self.get_hf_config()\n"
        "  File \"{site}/sglang/srt/utils/hf_transformers_utils.py\", line 221, in get_config\n"
        "    config = AutoConfig.from_pretrained(\n"
        "  File \"{site}/transformers/models/auto/configuration_auto.py\", line 1197, in from_pretrained\n"
        "    config_dict, unused_kwargs = PretrainedConfig.get_config_dict(pretrained_model_name_or_path, **kwargs)\n"
        "  File \"{site}/transformers/configuration_utils.py\", line 608, in get_config_dict\n"
        "    config_dict, kwargs = cls._get_config_dict(pretrained_model_name_or_path, **kwargs)\n"
        "  File \"{site}/transformers/configuration_utils.py\", line 690, in _get_config_dict\n"
        "    raise EnvironmentError(\n"
        "OSError: Can't load the configuration of '{p}'. If you were trying to load it from "
        "'https://huggingface.co/models', make sure you don't have a local directory with the same "
        "name. Otherwise, make sure '{p}' is the correct path to a directory containing a config.json file\n"
        .format(p=path, site=site))
    sys.stderr.flush()
    sys.exit(1)


def read_model_config(path):
    try:
        with open(os.path.join(path, "config.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def model_params_b(path, cfg):
    """Parameter count in billions: from config.json if it says, else from the name (27B)."""
    if isinstance(cfg.get("num_parameters"), (int, float)):
        return float(cfg["num_parameters"]) / 1e9
    m = re.search(r"(\d+(?:\.\d+)?)[bB](?![a-zA-Z])", os.path.basename(path.rstrip("/")))
    return float(m.group(1)) if m else 8.0


# --------------------------------------------------------------------------- simulator


class Sim:
    """All state of one simulated server (shared by the HTTP threads and the log loop)."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.out_lock = threading.Lock()
        self.stop = threading.Event()
        self.ready = False
        self.start_time = time.time()
        self.rng = random.Random()
        fmt = os.environ.get("SGLANG_SIM_LOG_FORMAT", "2026").lower()
        self.fmt = fmt if fmt in ("old", "2025") else "2026"
        self.children = []
        self.period = max(0.01, env_float("SGLANG_SIM_DECODE_PERIOD_S", 1.0))
        self.gen_tps = env_float("SGLANG_SIM_GEN_TPS", 2000.0)
        self.base_running = max(0, int(env_float("SGLANG_SIM_RUNNING", 32)))
        self.request_s = max(0.0, env_float("SGLANG_SIM_REQUEST_S", 0.2))
        self.lines_per_s = env_float("SGLANG_SIM_LINES_PER_S", 0.0)
        self.tp = max(1, args.tp_size)
        self.dp = max(1, args.dp_size)
        self.quiet = (args.log_level or "info").lower() in ("warning", "warn", "error", "critical", "fatal")
        self.spec = args.speculative_algorithm
        if self.spec:
            # SGLang fills in defaults for the unset speculative knobs.
            args.speculative_num_steps = args.speculative_num_steps or 3
            args.speculative_eagle_topk = args.speculative_eagle_topk or 1
            args.speculative_num_draft_tokens = args.speculative_num_draft_tokens or 4
        steps = args.speculative_num_steps or 3
        self.accept_len_mean = env_float("SGLANG_SIM_ACCEPT_LEN", min(steps + 1.0, 1.0 + 0.63 * steps))
        self.served_name = args.served_model_name or args.model_path
        self.gpus = self._gpu_indices()
        self.cfg = read_model_config(args.model_path)
        self._size_memory()
        # Per-DP-rank live figures.
        self.level = [1.0 if self.base_running else 0.0] * self.dp
        self.running = [min(self.base_running, self.max_running_requests)] * self.dp
        self.last_tps = [0.0] * self.dp
        self.last_accept = [0.0] * self.dp
        self.last_queue = [0] * self.dp
        self.last_tokens = [0] * self.dp
        self.inflight = 0
        self.prompt_tokens_total = 0.0
        self.gen_tokens_total = 0.0
        self.requests_total = 0.0
        self.ttft = Histogram([0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0])
        self.e2e = Histogram([1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0])
        self.created = time.time()
        d = os.path.dirname(run_dir())
        self.pause_files = [os.path.join(d, "pause_load"), os.path.join(d, "pause_load_%d" % args.port)]
        self.faults_path = os.path.join(d, "faults.json")
        self.faults_mtime = None
        self.fault = {}
        self.fault_started = None

    # ----- run-time faults (sim-fault)

    def poll_fault(self):
        """The current fault of this server from faults.json (re-read only when it changed)."""
        try:
            mt = os.stat(self.faults_path).st_mtime_ns
        except OSError:
            mt = None
        if mt != self.faults_mtime:
            self.faults_mtime = mt
            f = {}
            if mt is not None:
                try:
                    with open(self.faults_path) as fh:
                        f = (json.load(fh).get("servers") or {}).get(str(self.args.port)) or {}
                except (OSError, ValueError, AttributeError):
                    f = {}
            if f.get("mode") != self.fault.get("mode"):
                self.fault_started = None
            self.fault = f if isinstance(f, dict) else {}
        return self.fault.get("mode")

    # ----- sizing

    def _gpu_indices(self):
        # GPUs on this node: tp x pp, times dp unless the DP ranks share the TP GPUs (--enable-dp-attention),
        # shared over --nnodes.
        a = self.args
        n = max(1, (self.tp * (1 if a.enable_dp_attention else self.dp) * max(1, a.pp_size)) // max(1, a.nnodes))
        visible = []
        for tok in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(","):
            tok = tok.strip()
            if tok.isdigit():
                visible.append(int(tok))
        if not visible:
            visible = list(range(self.args.base_gpu_id, self.args.base_gpu_id + n))
        return visible[:n]

    def _size_memory(self):
        a = self.args
        gpu_mib = env_float("SGLANG_SIM_GPU_MEM_MIB", 0.0)
        if not gpu_mib:
            gpus = node_json().get("gpus") or []
            idx = self.gpus[0] if self.gpus else 0
            gpu = gpus[idx] if idx < len(gpus) else (gpus[0] if gpus else {})
            gpu_mib = float(gpu.get("memoryTotalMiB") or 183359)
        self.gpu_gb = gpu_mib / 1024.0
        self.mem_fraction = a.mem_fraction_static if a.mem_fraction_static else 0.88
        bytes_per_param = 1.0 if a.quantization in ("fp8", "w8a8_fp8", "modelopt_fp8") else 2.0
        if a.quantization in ("modelopt_fp4", "mxfp4", "petit_nvfp4"):
            bytes_per_param = 0.5
        self.weight_gb = model_params_b(a.model_path, self.cfg) * 1e9 * bytes_per_param / 2**30 / self.tp
        self.draft_weight_gb = 1.62 / self.tp if self.spec else 0.0
        layers = int(self.cfg.get("num_hidden_layers") or 64)
        kv_heads = int(self.cfg.get("num_key_value_heads") or 8)
        head_dim = int(self.cfg.get("head_dim") or 128)
        kv_bytes = 1 if (a.kv_cache_dtype or "auto").startswith("fp8") else 2
        per_token = max(1, layers * max(1, kv_heads // self.tp) * head_dim * kv_bytes)  # K (= V) bytes
        self.avail_start = self.gpu_gb - 1.52
        self.avail_after_weights = self.avail_start - self.weight_gb - self.draft_weight_gb
        kv_gb = max(1.0, self.avail_after_weights - self.gpu_gb * (1 - self.mem_fraction))
        self.max_total_num_tokens = a.max_total_tokens or int(kv_gb * 2**30 / (2 * per_token))
        self.k_gb = self.max_total_num_tokens * per_token / 2**30
        self.kv_gb = 2 * self.k_gb
        self.avail_after_pool = self.avail_after_weights - self.kv_gb
        self.graph_gb = 0.0 if a.disable_cuda_graph else 1.12
        self.context_len = a.context_length or int(self.cfg.get("max_position_embeddings") or 32768)
        self.chunked_prefill_size = a.chunked_prefill_size or (16384 if self.gpu_gb > 120 else 8192)
        self.max_running_requests = a.max_running_requests or (48 if self.spec else 2048)
        self.cuda_graph_max_bs = a.cuda_graph_max_bs or (48 if self.spec else 256)

    # ----- output

    def ts(self):
        t = time.time()
        s = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
        if os.environ.get("SGLANG_LOG_MS"):
            s += ".%03d" % int((t % 1) * 1000)
        return s

    def tag(self, dp=None, tp=0):
        """Rank tags: only for dimensions larger than 1 (unless SGLANG_SIM_RANK_TAGS=always), in SGLang's
        order DP, PP, TP, EP (2026 builds print PP and EP; the sim's lines come from PP stage 0)."""
        always = os.environ.get("SGLANG_SIM_RANK_TAGS", "") == "always"
        new = self.fmt == "2026"
        t = ""
        if self.dp > 1 and dp is not None:
            t += " DP%d" % dp
        if new and self.args.pp_size > 1:
            t += " PP0"
        if self.tp > 1 or always:
            t += " TP%d" % tp
        if new and self.args.ep_size > 1:
            t += " EP%d" % (tp % self.args.ep_size)
        return t

    def line(self, msg, tag=""):
        return "[%s%s] %s\n" % (self.ts(), tag, msg)

    def write(self, text):
        if self.quiet:
            # --log-level warning (or above): SGLang's INFO lines (stats, readiness, access lines) are not printed.
            text = "".join(l for l in text.splitlines(True) if not QUIET_DROP.search(l))
            if not text:
                return
        with self.out_lock:
            try:
                sys.stdout.write(text)
                sys.stdout.flush()
            except (BrokenPipeError, ValueError):
                pass

    def log(self, msg, tag=""):
        self.write(self.line(msg, tag))

    def access(self, method, path, code, phrase, client_port=None):
        port = client_port or self.rng.randint(32768, 60999)
        self.log('INFO:     127.0.0.1:%d - "%s %s HTTP/1.1" %d %s' % (port, method, path, code, phrase))

    def sleep(self, s):
        """Sleep that ends early on SIGTERM; returns False when stopping."""
        return not self.stop.wait(s)

    # ----- startup

    def server_args_repr(self):
        items = ", ".join("%s=%r" % (k, v) for k, v in self.server_args_dict().items())
        return "server_args=ServerArgs(%s)" % items

    def startup(self):
        a = self.args
        total = max(0.0, env_float("SGLANG_SIM_STARTUP_S", 1.5))
        arch = (self.cfg.get("architectures") or ["Qwen3ForCausalLM"])[0]
        dtype = "torch.bfloat16" if a.dtype in ("auto", "bfloat16", "bf16") else "torch." + a.dtype
        ranks = [(d, t) for d in range(self.dp) for t in range(self.tp)]
        # (fraction of the startup time spent before this group, lines). The lines are built when
        # printed, so that their timestamps advance through the startup like the real ones.
        steps = []
        steps.append((0.0, lambda: [self.line(self.server_args_repr())]))
        if self.dp > 1:
            steps.append((0.02, lambda: [self.line("Launch DP%d starting at GPU #%d." % (d, self.gpus[d * self.tp] if d * self.tp < len(self.gpus) else d * self.tp)) for d in range(self.dp)]))
        steps.append((0.05, lambda: [self.line("Using default HuggingFace chat template with detected content format: string")]))
        if not a.attention_backend:
            if self.fmt == "2026":
                # 2026 main-process loggers: "[ts] INFO server_args.py:NNNN: ..." (docs notebooks 2026-02/03)
                steps.append((0.0, lambda: [self.line("INFO server_args.py:2232: Attention backend not specified. Use fa3 backend by default.")]))
            else:
                steps.append((0.0, lambda: [self.line("Attention backend not explicitly specified. Use flashinfer backend by default.", self.tag(d, t)) for d, t in ranks if t == 0]))
        steps.append((0.05, lambda: [self.line("Init torch distributed begin.", self.tag(d, t)) for d, t in ranks]))
        steps.append((0.05, lambda: [self.line("Init torch distributed ends. mem usage=%.2f GB" % (0.0 if self.tp == 1 else 0.74), self.tag(d, t)) for d, t in ranks]))
        steps.append((0.02, lambda: [self.line("Load weight begin. avail mem=%.2f GB" % self.avail_start, self.tag(d, t)) for d, t in ranks]))
        shards = 11
        for i in (0, 4, 8, 11):
            steps.append((0.06, lambda: ["Loading safetensors checkpoint shards: %3d%% Completed | %d/%d [00:%02d<00:%02d,  %.2fit/s]\n"
                                 % (i * 100 // shards, i, shards, i * 2, (shards - i) * 2, 0.52)]))
        # 2026 (sglang#21395): "Load weight end. elapsed=2.19 s, type=..."
        elapsed = "elapsed=%.2f s, " % (2.0 + self.weight_gb / 40.0) if self.fmt == "2026" else ""
        steps.append((0.03, lambda: [self.line("Load weight end. %stype=%s, dtype=%s, avail mem=%.2f GB, mem usage=%.2f GB."
                                       % (elapsed, arch, dtype, self.avail_start - self.weight_gb, self.weight_gb), self.tag(d, t)) for d, t in ranks]))
        if self.spec:
            steps.append((0.05, lambda: [self.line("Load weight end. type=%sMTP, dtype=%s, avail mem=%.2f GB, mem usage=%.2f GB."
                                           % (arch.replace("ForCausalLM", "") if arch.endswith("ForCausalLM") else arch, dtype,
                                              self.avail_after_weights, self.draft_weight_gb), self.tag(d, t)) for d, t in ranks]))
        steps.append((0.05, lambda: [self.line("KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB"
                                       % (self.max_total_num_tokens, self.k_gb, self.k_gb), self.tag(d, t)) for d, t in ranks]))
        steps.append((0.0, lambda: [self.line("Memory pool end. avail mem=%.2f GB" % self.avail_after_pool, self.tag(d, t)) for d, t in ranks]))
        if not a.disable_cuda_graph:
            bs = [b for b in [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 160, 192, 224, 256] if b <= self.cuda_graph_max_bs]
            steps.append((0.03, lambda: [self.line("Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB" % self.avail_after_pool, self.tag(d, 0)) for d in range(self.dp)]))
            steps.append((0.0, lambda: [self.line("Capture cuda graph bs %s" % bs, self.tag(d, 0)) for d in range(self.dp)]))
            steps.append((0.25, lambda: [self.line("Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB."
                                           % (11.0 + len(bs) * 0.9, self.graph_gb, self.avail_after_pool - self.graph_gb), self.tag(d, 0)) for d in range(self.dp)]))
            if self.spec:
                steps.append((0.05, lambda: [self.line("Capture draft cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB."
                                               % (4.0 + len(bs) * 0.3, 0.41, self.avail_after_pool - self.graph_gb - 0.41), self.tag(d, 0)) for d in range(self.dp)]))
        avail_end = self.avail_after_pool - self.graph_gb - (0.41 if self.spec and not a.disable_cuda_graph else 0.0)
        steps.append((0.02, lambda: [self.line("max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB"
                                       % (self.max_total_num_tokens, self.chunked_prefill_size, a.max_prefill_tokens,
                                          self.max_running_requests, self.context_len, avail_end), self.tag(d, 0)) for d in range(self.dp)]))
        steps.append((0.05, lambda: [self.line("INFO:     Started server process [%d]" % os.getpid()),
                             self.line("INFO:     Waiting for application startup."),
                             self.line("INFO:     Application startup complete."),
                             self.line("INFO:     Uvicorn running on http://%s:%d (Press CTRL+C to quit)" % (a.host, a.port))]))
        steps.append((0.1, lambda: [self.line('INFO:     127.0.0.1:%d - "GET /get_model_info HTTP/1.1" 200 OK' % self.rng.randint(32768, 60999))]))
        steps.append((0.03, lambda: [self.prefill_line(0, new_seq=1, new_tok=6, running=0, queue=0, usage=0.0)]))
        steps.append((0.05, lambda: [self.line('INFO:     127.0.0.1:%d - "POST /generate HTTP/1.1" 200 OK' % self.rng.randint(32768, 60999))]))
        weight = sum(f for f, _ in steps) or 1.0
        for frac, lines in steps:
            if not self.sleep(total * frac / weight):
                return False
            self.write("".join(lines()))
        with self.lock:
            self.ready = True
        self.log("The server is fired up and ready to roll!")
        return True

    # ----- log lines

    def kv(self, kind, pairs):
        """``Decode batch, k: v, ...`` (2026: no trailing ", "), ``Decode batch, k: v, ..., `` (2025) or
        ``Decode batch. k: v, ...`` (old)."""
        body = ", ".join("%s: %s" % kv for kv in pairs)
        if self.fmt == "old":
            return "%s batch. %s" % (kind, body)
        if self.fmt == "2026":
            return "%s batch, %s" % (kind, body)
        return "%s batch, %s, " % (kind, body)

    def prefill_line(self, dp, new_seq, new_tok, running, queue, usage):
        cached = self.rng.choice([0, 0, new_tok // 3, new_tok // 2]) if new_tok > 100 else 0
        pairs = [("#new-seq", new_seq), ("#new-token", new_tok), ("#cached-token", cached),
                 ("token usage", "%.2f" % usage), ("#running-req", running), ("#queue-req", queue)]
        if self.fmt == "2026":
            # metrics_reporter.py (2026): #pending-token after #queue-req, then the PD prefill queues
            pairs.append(("#pending-token", 0 if queue == 0 else queue * 1024))
            if self.args.disaggregation_mode == "prefill":
                pairs += [("#prealloc-req", 0), ("#inflight-req", min(running, 16))]
        if self.fmt in ("2026", "2025"):
            # cuda graph (piecewise) and input throughput, and no trailing ", " on prefill lines.
            pairs.append(("cuda graph", "False" if self.args.disable_cuda_graph else "True"))
            pairs.append(("input throughput (token/s)", "%.2f" % (new_tok / max(0.05, self.rng.uniform(0.08, 0.4)))))
            return self.line("Prefill batch, " + ", ".join("%s: %s" % kv for kv in pairs),
                             self.tag(dp if self.dp > 1 else None, 0))
        return self.line(self.kv("Prefill", pairs), self.tag(dp if self.dp > 1 else None, 0))

    def decode_line(self, dp, running, tokens, usage, tps, accept, queue, retracted=0):
        pairs = [("#running-req", running), ("#token", tokens), ("token usage", "%.2f" % usage)]
        if retracted and self.fmt != "2026":
            # 2026: "#retracted-req" is a PD decode key only (metrics_reporter.py)
            pairs.append(("#retracted-req", retracted))
        if self.spec:
            pairs.append(("accept len", "%.2f" % accept))
            if self.fmt != "old":
                steps = self.args.speculative_num_steps or 3
                pairs.append(("accept rate", "%.2f" % max(0.0, min(1.0, (accept - 1) / steps))))
        pairs.append(("cuda graph", "False" if self.args.disable_cuda_graph else "True"))
        pairs.append(("gen throughput (token/s)", "%.2f" % tps))
        pairs.append(("#queue-req", queue))
        return self.line(self.kv("Decode", pairs), self.tag(dp if self.dp > 1 else None, 0))

    # ----- load model

    def paused(self):
        return any(os.path.exists(p) for p in self.pause_files)

    def step(self, dt):
        """Advance the synthetic load by dt seconds; return the log lines for this round."""
        out = []
        mode = self.fault.get("mode")
        paused = self.paused() or self.base_running == 0
        full = min(self.base_running, self.max_running_requests)
        with self.lock:
            inflight = self.inflight
        for d in range(self.dp):
            # level: share of the configured load (1.0 steady; halves per round while paused
            # = draining, doubles back when resumed). Throughput follows the level with at most
            # +-4.5 % jitter; the running count wanders a little around it, as real batches do.
            lvl = self.level[d]
            if paused:
                lvl = lvl / 2 if lvl * full >= 2 else 0.0
            else:
                lvl = min(1.0, max(lvl * 2, 0.125))
            self.level[d] = lvl
            r = 0 if lvl == 0 else max(1, int(round(lvl * full)) + (self.rng.randint(-3, 2) if lvl >= 1 else 0))
            r = min(r, self.max_running_requests)
            self.running[d] = r
            running = r + (inflight if d == 0 else 0)
            if running == 0:
                self.last_tps[d] = 0.0
                self.last_queue[d] = 0
                continue  # an idle scheduler prints no decode lines
            tps = self.gen_tps * lvl * self.rng.uniform(0.955, 1.045) + (inflight if d == 0 else 0) * 140.0
            tokens = int(running * self.rng.uniform(2300, 2900))
            tokens = min(tokens, self.max_total_num_tokens)
            usage = tokens / float(self.max_total_num_tokens)
            accept = min((self.args.speculative_num_steps or 3) + 1.0,
                         max(1.0, self.accept_len_mean + self.rng.uniform(-0.12, 0.12)))
            queue = 0 if paused else self.rng.choice([0, 0, 0, 0, 1, 2, 3])
            retracted = 0
            if mode == "dp-slow" and (self.dp == 1 or d == int(self.fault.get("rank", 0))):
                tps *= 0.3
            elif mode == "accept-drop":
                accept = 1.0 + self.rng.uniform(0.05, 0.15)
            elif mode == "kv-pressure":
                tokens, usage, tps = self.max_total_num_tokens, 1.0, tps * 0.6
                retracted = self.rng.randint(2, 6)
                queue = 20 + self.rng.randint(0, 10)
                gained = ("#new_tokens_gained: %d, " % (retracted * 640)) if self.fmt == "2026" else ""
                out.append(self.line("KV cache pool is full. Retract requests. #retracted_reqs: %d, %s"
                                     "#new_token_ratio: 0.7000 -> 1.0000" % (retracted, gained), self.tag(d if self.dp > 1 else None, 0)))
            self.last_tps[d], self.last_accept[d], self.last_queue[d], self.last_tokens[d] = tps, accept, queue, tokens
            with self.lock:
                self.gen_tokens_total += tps * dt
            if not paused and self.rng.random() < 0.3:
                new_seq = self.rng.randint(1, 3)
                new_tok = self.rng.randint(120, 3000) * new_seq
                with self.lock:
                    self.prompt_tokens_total += new_tok
                out.append(self.prefill_line(d, new_seq, new_tok, running, queue, usage))
            out.append(self.decode_line(d, running, tokens, usage, tps, accept, queue, retracted))
            if not paused and self.rng.random() < 0.4:
                # A client's completion finishing (the synthetic load's access line).
                out.append(self.line('INFO:     127.0.0.1:%d - "POST /v1/chat/completions HTTP/1.1" 200 OK'
                                     % self.rng.randint(32768, 60999)))
                with self.lock:
                    self.requests_total += 1
                    self.ttft.observe(self.rng.uniform(0.05, 0.6))
                    self.e2e.observe(self.rng.uniform(20, 200))
        return out

    def write_state(self):
        """Tell the simulated nvidia-smi whether this server is busy (utilisation)."""
        path = state_file(self.args.port)
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path + ".tmp", "w") as f:
                json.dump({"pid": os.getpid(), "running": sum(self.running) + self.inflight, "time": time.time()}, f)
            os.replace(path + ".tmp", path)
        except OSError:
            pass

    def run_loop(self):
        crash_after = env_float("SGLANG_SIM_CRASH_AFTER_S", 0.0)
        if self.lines_per_s > 0:
            return self.run_fast_loop(crash_after)
        last = time.time()
        while self.sleep(self.period):
            now = time.time()
            mode = self.poll_fault()
            if mode in ("crash", "oom", "nccl"):
                self.crash(mode)
            if mode == "subprocess-crash":
                self.subprocess_crash()
            if mode == "hang-hard":
                self.hard_watchdog()
            if mode in ("hang", "stall"):
                self.silent_round(mode, now - last)
            else:
                self.write("".join(self.step(now - last)))
            last = now
            self.write_state()
            if crash_after and now - self.start_time > crash_after:
                self.crash()

    def run_fast_loop(self, crash_after):
        """SGLANG_SIM_LINES_PER_S: many decode lines per second, written in batches."""
        tick = 0.05
        owed = 0.0
        last = time.time()
        while self.sleep(tick):
            now = time.time()
            owed += self.lines_per_s * (now - last)
            last = now
            n = int(owed)
            owed -= n
            # n decode lines (plus the prefill/access lines that come with them), one batched write.
            lines = []
            decodes = 0
            dt = tick / max(1, n)
            while decodes < n:
                chunk = self.step(dt)
                if not chunk:
                    break  # idle: an idle server prints nothing
                decodes += sum(1 for l in chunk if "Decode batch" in l)
                lines.extend(chunk)
            self.write("".join(lines))
            self.write_state()
            if crash_after and now - self.start_time > crash_after:
                self.crash()

    def silent_round(self, mode, dt):
        """A hung or stalled scheduler: requests stay running and queued, no stat lines. A hang prints the
        watchdog's lines once (a soft watchdog: the process stays)."""
        if self.fault_started is None:
            self.fault_started = time.time()
            if mode == "hang":
                self.log("Pyspy failed to dump PID %d. Error: Permission denied" % os.getpid(), self.tag(0 if self.dp > 1 else None, 0))
                if self.fmt == "2026":
                    # srt/utils/watchdog.py: soft=True only dumps diagnostics, the process stays
                    self.log("Scheduler watchdog timeout (self.watchdog_timeout=%s, self.soft=True)" % ("%g" % self.args.watchdog_timeout),
                             self.tag(0 if self.dp > 1 else None, 0))
                else:
                    self.log("Watchdog timeout (self.watchdog_timeout=%s)" % int(self.args.watchdog_timeout), self.tag(0 if self.dp > 1 else None, 0))
            else:
                # the last stat line before the silence shows the queue building up
                for d in range(self.dp):
                    self.last_queue[d] = 12
                    self.last_tps[d] = 0.0
                    self.write(self.decode_line(d, max(1, self.running[d]), self.last_tokens[d] or 1000,
                                                (self.last_tokens[d] or 1000) / float(self.max_total_num_tokens),
                                                0.0, max(1.0, self.last_accept[d]), 12))
        for d in range(self.dp):
            self.last_queue[d] = 12
            self.last_tps[d] = 0.0

    def hard_watchdog(self):
        """The 2026 hard scheduler watchdog (srt/utils/watchdog.py, soft=False): its line, py-spy, then 5 s later the
        SIGQUIT handler kills the server (v0.5.18 wording, sglang#36081); the 2025 form in "2025"/"old"."""
        t = self.tag(0 if self.dp > 1 else None, 0)
        if self.fmt == "2026":
            self.log("Scheduler watchdog timeout (self.watchdog_timeout=%s, self.soft=False)" % ("%g" % self.args.watchdog_timeout), t)
        else:
            self.log("Watchdog timeout (self.watchdog_timeout=%s)" % int(self.args.watchdog_timeout), t)
        self.log("Pyspy failed to dump PID %d. Error: Permission denied" % os.getpid(), t)
        self.stop.wait(float(self.fault.get("delayS", 5) or 0))
        self.sigquit_exit()

    def subprocess_crash(self):
        """The 2026 subprocess watchdog (sglang PR #18582): a scheduler child dies (SIGKILL: exit code -9, as the
        OOM killer does, or exitCode=N), the watchdog names it and SIGQUITs the server."""
        code = int(self.fault.get("exitCode", -9))
        child = self.children[0] if self.children else None
        pid = child.pid if child else os.getpid() + 1
        if child:
            try:
                child.send_signal(-code if code < 0 else signal.SIGKILL)
                child.wait(2)
            except (OSError, ValueError, subprocess.TimeoutExpired):
                pass
        self.log("Subprocess scheduler_0 (pid=%d) crashed with exit code %d. Triggering SIGQUIT for cleanup..." % (pid, code))
        self.sigquit_exit()

    def sigquit_exit(self):
        with self.out_lock:
            sys.stdout.flush()
            if self.fmt == "2026":
                sys.stderr.write("[%s] SIGQUIT received. signum=None, frame=None. It usually means one child failed.\n"
                                 "[%s] No live scheduler processes found; skipping py-spy and CUDA coredump.\n" % (self.ts(), self.ts()))
            else:
                sys.stderr.write("[%s] Received sigquit from a child process. It usually means the child failed.\n" % self.ts())
            sys.stderr.flush()
        self.kill_children()
        cleanup(self.args.port)
        os._exit(1)

    def start_children(self):
        """One child per GPU named as SGLang's scheduler processes are ("sglang::scheduler_TP0", setproctitle),
        each exiting when the server goes; the fake nvidia-smi lists them as the GPUs' compute processes."""
        if os.environ.get("SGLANG_SIM_SCHEDULER_PROCS", "1") == "0":
            return
        code = "import os,sys,time\nwhile os.getppid() == %d: time.sleep(0.5)\n" % os.getpid()
        for i, _g in enumerate(self.gpus):
            d, t = (i // self.tp, i % self.tp) if not self.args.enable_dp_attention else (None, i)
            name = "sglang::scheduler" + ("_DP%d" % d if self.dp > 1 and d is not None else "") + "_TP%d" % t
            try:
                self.children.append(subprocess.Popen([name, "-c", code], executable=sys.executable,
                                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                                      stderr=subprocess.DEVNULL, close_fds=True))
            except OSError:
                break

    def kill_children(self):
        for c in self.children:
            try:
                c.kill()
            except OSError:
                pass

    def crash(self, kind="oom"):
        """Die as SGLang does: a scheduler exception (or an NCCL timeout), "Received sigquit ...", exit 1."""
        if kind == "nccl":
            self.write_crash(None, nccl=True)
        if kind == "crash":
            self.write_crash("ValueError: Unexpected token id -1 in the batch (simulated scheduler crash)")
        self.write_crash("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                         "of %.2f GiB of which 1.12 GiB is free." % self.gpu_gb)

    def write_crash(self, exc_line, nccl=False):
        """A scheduler exception (or an NCCL collective timeout) as SGLang prints it, then exit 1."""
        with self.out_lock:
            sys.stdout.flush()
            if nccl:
                sys.stderr.write(
                    "[rank0]:[E%s ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout: "
                    "WorkNCCL(SeqNum=4127, OpType=ALLREDUCE, NumelIn=8388608, NumelOut=8388608, Timeout(ms)=600000) ran for "
                    "600043 milliseconds before timing out.\n"
                    "terminate called after throwing an instance of 'c10::DistBackendError'\n"
                    "[%s] Received sigquit from a child process. It usually means the child failed.\n"
                    % (time.strftime("%m%d %H:%M:%S"), self.ts()))
                if self.fmt == "2026":
                    # torch's teardown warning (sglang#36081): printed while the server stops, not a failure
                    sys.stderr.write("[rank0]:[W%s ProcessGroupNCCL.cpp:1624] Warning: WARNING: destroy_process_group() was not "
                                     "called before program exit, which can leak resources.\n"
                                     % time.strftime("%-m%d %H:%M:%S.000000000"))
            else:
                sys.stderr.write(
                    "[%s] Scheduler hit an exception: Traceback (most recent call last):\n"
                    "  File \"/usr/local/lib/python3.11/dist-packages/sglang/srt/managers/scheduler.py\", line 2817, in run_scheduler_process\n"
                    "    scheduler.event_loop_overlap()\n"
                    "  File \"/usr/local/lib/python3.11/dist-packages/sglang/srt/managers/scheduler.py\", line 1012, in event_loop_overlap\n"
                    "    batch_result = self.run_batch(batch)\n"
                    "%s\n\n"
                    "[%s] Received sigquit from a child process. It usually means the child failed.\n"
                    % (self.ts(), exc_line, self.ts()))
            sys.stderr.flush()
        self.kill_children()
        cleanup(self.args.port)
        os._exit(1)

    # ----- HTTP payloads

    def server_args_dict(self):
        a = self.args
        return {
            "model_path": a.model_path, "tokenizer_path": a.tokenizer_path or a.model_path,
            "tokenizer_mode": a.tokenizer_mode, "skip_tokenizer_init": a.skip_tokenizer_init,
            "load_format": a.load_format, "trust_remote_code": a.trust_remote_code, "dtype": a.dtype,
            "kv_cache_dtype": a.kv_cache_dtype, "quantization": a.quantization,
            "served_model_name": self.served_name, "chat_template": a.chat_template,
            "is_embedding": a.is_embedding, "revision": a.revision, "host": a.host, "port": a.port,
            "api_key": a.api_key, "mem_fraction_static": self.mem_fraction,
            "max_running_requests": self.max_running_requests, "max_total_tokens": a.max_total_tokens,
            "chunked_prefill_size": self.chunked_prefill_size, "max_prefill_tokens": a.max_prefill_tokens,
            "schedule_policy": a.schedule_policy, "schedule_conservativeness": a.schedule_conservativeness,
            "cuda_graph_max_bs": self.cuda_graph_max_bs, "disable_cuda_graph": a.disable_cuda_graph,
            "disable_radix_cache": a.disable_radix_cache,
            "enable_hierarchical_cache": a.enable_hierarchical_cache, "hicache_ratio": a.hicache_ratio,
            "tp_size": self.tp, "dp_size": self.dp, "pp_size": a.pp_size, "ep_size": a.ep_size,
            "enable_dp_attention": a.enable_dp_attention, "base_gpu_id": a.base_gpu_id,
            "random_seed": a.random_seed, "stream_interval": a.stream_interval,
            "watchdog_timeout": a.watchdog_timeout,
            "attention_backend": a.attention_backend or "flashinfer",
            "sampling_backend": a.sampling_backend or "flashinfer",
            "grammar_backend": a.grammar_backend or "xgrammar",
            "speculative_algorithm": self.spec,
            "speculative_draft_model_path": a.speculative_draft_model_path,
            "speculative_num_steps": a.speculative_num_steps,
            "speculative_eagle_topk": a.speculative_eagle_topk,
            "speculative_num_draft_tokens": a.speculative_num_draft_tokens,
            "speculative_accept_threshold_single": a.speculative_accept_threshold_single,
            "speculative_accept_threshold_acc": a.speculative_accept_threshold_acc,
            "reasoning_parser": a.reasoning_parser, "tool_call_parser": a.tool_call_parser,
            "log_level": a.log_level, "log_level_http": a.log_level_http, "log_requests": a.log_requests,
            "enable_metrics": a.enable_metrics, "decode_log_interval": a.decode_log_interval,
            "context_length": a.context_length, "device": "cuda",
        }

    def server_info(self):
        info = self.server_args_dict()
        states = []
        for d in range(self.dp):
            st = {
                "last_gen_throughput": round(self.last_tps[d], 2),
                "memory_usage": {"weight": round(self.weight_gb + self.draft_weight_gb, 2),
                                 "kvcache": round(self.kv_gb, 2), "graph": round(self.graph_gb, 2),
                                 "token_capacity": self.max_total_num_tokens},
                "dp_rank": d,
            }
            if self.spec:
                st["avg_spec_accept_length"] = round(self.last_accept[d], 4)
            states.append(st)
        info.update({"version": __version__, "max_total_num_tokens": self.max_total_num_tokens,
                     "internal_states": states, "status": "Up" if self.ready else "Starting"})
        return info

    def loads(self):
        with self.lock:
            inflight = self.inflight
        return {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "dp_rank_count": self.dp,
                "loads": [{"dp_rank": d, "num_running_reqs": self.running[d] + (inflight if d == 0 else 0),
                           "num_waiting_reqs": self.last_queue[d], "num_used_tokens": self.last_tokens[d],
                           "token_usage": round(self.last_tokens[d] / float(self.max_total_num_tokens), 2),
                           "gen_throughput": round(self.last_tps[d], 2)} for d in range(self.dp)]}

    def model_info(self):
        return {
            "model_path": self.args.model_path,
            "tokenizer_path": self.args.tokenizer_path or self.args.model_path,
            "is_generation": True, "preferred_sampling_params": None, "weight_version": "default",
            "has_image_understanding": False, "has_audio_understanding": False,
            "model_type": self.cfg.get("model_type", "qwen3"),
            "architectures": self.cfg.get("architectures", ["Qwen3ForCausalLM"]),
        }

    def models(self):
        return {"object": "list", "data": [{
            "id": self.served_name, "object": "model", "created": int(self.created),
            "owned_by": "sglang", "root": self.served_name, "parent": None,
            "max_model_len": self.context_len}]}

    def metrics(self):
        name = self.served_name
        out = []

        new = self.fmt == "2026"

        def labels(d, extra=""):
            if new:
                # prometheus multiprocess collector: labels sorted; 2026 builds always add moe_ep_rank
                ls = {"engine_type": "unified", "model_name": name, "moe_ep_rank": "0", "pp_rank": "0", "tp_rank": "0"}
                if self.dp > 1:
                    ls["dp_rank"] = str(d)
                return "{" + ",".join('%s="%s"' % (k, ls[k]) for k in sorted(ls)) + extra + "}"
            s = 'model_name="%s",engine_type="unified",tp_rank="0",pp_rank="0"' % name
            if self.dp > 1:
                s += ',dp_rank="%d"' % d
            return "{" + s + extra + "}"

        def gauge(metric, help_text, values):
            out.append("# HELP %s %s" % (metric, help_text))
            out.append("# TYPE %s gauge" % metric)
            for d in range(self.dp):
                out.append("%s%s %s" % (metric, labels(d), go_float(values(d))))

        with self.lock:
            inflight = self.inflight
            totals = (self.prompt_tokens_total, self.gen_tokens_total, self.requests_total)
            ttft, e2e = self.ttft.snapshot(), self.e2e.snapshot()
        run = lambda d: self.running[d] + (inflight if d == 0 else 0)  # noqa: E731
        gauge("sglang:num_running_reqs", "The number of running requests.", run)
        gauge("sglang:num_used_tokens", "The number of used tokens.", lambda d: self.last_tokens[d])
        # 2026: stats.token_usage = round(get_max_pool_usage(), 2)
        gauge("sglang:token_usage", "The token usage.",
              lambda d: round(self.last_tokens[d] / float(self.max_total_num_tokens), 2 if new else 4))
        gauge("sglang:gen_throughput", "The generation throughput (token/s).", lambda d: round(self.last_tps[d], 2))
        gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", lambda d: self.last_queue[d])
        gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", lambda d: 0.31)
        gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.",
              lambda d: round(self.last_accept[d], 4) if self.spec else 0.0)
        tl = '{model_name="%s"}' % name
        for metric, help_text, v in (
                ("sglang:prompt_tokens_total", "Number of prefill tokens processed.", totals[0]),
                ("sglang:generation_tokens_total", "Number of generation tokens processed.", totals[1]),
                ("sglang:num_requests_total", "Number of requests processed.", totals[2])):
            out.append("# HELP %s %s" % (metric, help_text))
            out.append("# TYPE %s counter" % metric)
            if new:
                # metrics_collector.py: labelnames=list(labels.keys()) + ["is_streaming"]; a total is their sum
                streamed = int(v * 0.75)
                for flag, part in (("false", int(v) - streamed), ("true", streamed)):
                    out.append("%s%s %s" % (metric, labels(0, ',is_streaming="%s"' % flag), go_float(part)))
                continue
            out.append("%s%s %s" % (metric, tl, go_float(int(v))))
            out.append("%s%s %s" % (metric.replace("_total", "_created"), tl, go_float(self.created)))
        for metric, help_text, h in (
                ("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft),
                ("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", e2e)):
            out.append("# HELP %s %s" % (metric, help_text))
            out.append("# TYPE %s histogram" % metric)
            bounds, counts, total_sum = h
            for le, c in zip(bounds + [math.inf], counts):
                out.append('%s_bucket{model_name="%s",le="%s"} %s' % (metric, name, go_float(le), go_float(c)))
            out.append("%s_count%s %s" % (metric, tl, go_float(counts[-1])))
            out.append("%s_sum%s %s" % (metric, tl, go_float(total_sum)))
            out.append("%s_created%s %s" % (metric, tl, go_float(self.created)))
        return "\n".join(out) + "\n"


class Histogram:
    def __init__(self, bounds):
        self.bounds = list(bounds)
        self.counts = [0] * (len(bounds) + 1)  # cumulative, last = +Inf
        self.sum = 0.0

    def observe(self, v):
        self.sum += v
        for i, b in enumerate(self.bounds + [math.inf]):
            if v <= b:
                self.counts[i] += 1

    def snapshot(self):
        return list(self.bounds), list(self.counts), self.sum


# --------------------------------------------------------------------------- HTTP


def make_handler(sim):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uvicorn"
        sys_version = ""

        def log_message(self, *args):  # access lines are printed by us, uvicorn-style
            pass

        def send(self, code, body=b"", ctype="application/json"):
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            self.send_response(code)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            phrase = {200: "OK", 404: "Not Found", 503: "Service Unavailable", 400: "Bad Request"}.get(code, "")
            sim.access(self.command, self.path, code, phrase, self.client_address[1])

        def not_found(self):
            self.send(404, {"detail": "Not Found"})

        def unauthorized(self):
            """--api-key: every endpoint but /health and /metrics wants ``Authorization: Bearer <key>`` (SGLang's
            add_api_key_middleware); SGLANG_SIM_METRICS_AUTH=1 protects /metrics too (builds that enforce it there)."""
            key = sim.args.api_key
            path = self.path.split("?", 1)[0]
            if not key or path.startswith("/health"):
                return False
            if path.startswith("/metrics") and os.environ.get("SGLANG_SIM_METRICS_AUTH") != "1":
                return False
            if self.headers.get("Authorization") == "Bearer " + key:
                return False
            self.send(401, {"error": "Unauthorized"})
            return True

        def do_GET(self):
            path = self.path.split("?", 1)[0]
            if self.unauthorized():
                return
            if path in ("/health", "/health_generate"):
                if sim.fault.get("mode") == "health-wedged":
                    # a wedged scheduler: SGLang gives up on its health generation after ~20 s and answers 503
                    sim.stop.wait(float(sim.fault.get("delayS", 0) or 0))
                    return self.send(503, b"", "text/plain")
                self.send(200 if sim.ready and not sim.stop.is_set() else 503, b"", "text/plain")
            elif path in ("/get_server_info", "/server_info"):
                self.send(200, sim.server_info())
            elif path in ("/get_model_info", "/model_info"):
                self.send(200, sim.model_info())
            elif path == "/v1/models":
                self.send(200, sim.models())
            elif path == "/metrics" and sim.args.enable_metrics:
                self.send(200, sim.metrics(), "text/plain; version=0.0.4; charset=utf-8")
            elif path == "/v1/loads":
                # 2026: per-DP-rank load without --enable-metrics (the shape the product reads; UNVERIFIED in full)
                self.send(200, sim.loads())
            elif path == "/get_load":
                self.send(200, [{"dp_rank": d, "num_reqs": sim.running[d], "num_waiting_reqs": sim.last_queue[d],
                                 "num_tokens": sim.last_tokens[d]} for d in range(sim.dp)])
            else:
                self.not_found()

        do_HEAD = do_GET

        def do_POST(self):
            path = self.path.split("?", 1)[0]
            if self.unauthorized():
                return
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                req = json.loads(raw or b"{}")
            except ValueError:
                req = {}
            if path == "/flush_cache":
                return self.send(200, "Cache flushed.\nPlease check backend logs for more details. "
                                 "(When there are running or waiting requests, the operation will not be performed.)\n",
                                 "text/plain")
            if path not in ("/v1/chat/completions", "/v1/completions", "/generate"):
                return self.not_found()
            if not sim.ready or sim.stop.is_set():
                return self.send(503, {"error": {"message": "The server is not ready.", "type": "ServiceUnavailable"}})
            with sim.lock:
                sim.inflight += 1
            t0 = time.time()
            try:
                sim.stop.wait(sim.request_s)
            finally:
                with sim.lock:
                    sim.inflight -= 1
            self.send(200, completion_payload(sim, path, req, time.time() - t0))

    return Handler


_DATA_FAULT = {"mtime": None, "share": 0.0, "n": 0}


def data_degenerate_share(sim):
    """``sim-fault data-degenerate SHARE``: that share of the answers is the seed's ``OK.`` after an empty think block."""
    try:
        mt = os.stat(sim.faults_path).st_mtime_ns
    except OSError:
        mt = None
    if mt != _DATA_FAULT["mtime"]:
        _DATA_FAULT["mtime"] = mt
        share = 0.0
        try:
            with open(sim.faults_path) as fh:
                share = float(json.load(fh).get("dataDegenerate") or 0)
        except (OSError, ValueError, TypeError, AttributeError):
            share = 0.0
        _DATA_FAULT["share"] = min(1.0, max(0.0, share))
    return _DATA_FAULT["share"]


ANSWERS = ["Hello! This is simulated completion %d: the sum of the first n odd numbers is n squared.",
           "Simulated answer %d. TCP retransmits lost segments; UDP leaves that to the game.",
           "Answer %d from the simulated server: an LRU cache pairs a hash map with a linked list."]


def completion_payload(sim, path, req, latency):
    """A small, valid completion in the shape each endpoint returns (each answer its own, as a model's are)."""
    reasoning = "The user wants a short answer. I will answer briefly."
    share = data_degenerate_share(sim)
    with sim.lock:
        n = _DATA_FAULT["n"]
        _DATA_FAULT["n"] = n + 1
    degenerate = share > 0 and int((n + 1) * share) > int(n * share)
    answer = "OK." if degenerate else ANSWERS[n % len(ANSWERS)] % n
    if degenerate:
        reasoning = ""
    prompt_tokens = 24 + len(json.dumps(req.get("messages") or req.get("prompt") or req.get("text") or "")) // 4
    completion_tokens = 6 if degenerate else 38
    with sim.lock:
        sim.requests_total += 1
        sim.prompt_tokens_total += prompt_tokens
        sim.gen_tokens_total += completion_tokens
        sim.ttft.observe(min(latency, 0.05))
        sim.e2e.observe(latency)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens, "prompt_tokens_details": None}
    rid = uuid.uuid4().hex
    if path == "/generate":
        return {"text": ("<think>\n\n</think>\n\n" + answer) if degenerate else answer, "meta_info": {
            "id": rid, "finish_reason": {"type": "stop", "matched": 151645},
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "cached_tokens": 0,
            "spec_verify_ct": 13 if sim.spec else 0, "e2e_latency": round(latency, 4)}}
    if path == "/v1/completions":
        return {"id": rid, "object": "text_completion", "created": int(time.time()), "model": sim.served_name,
                "choices": [{"index": 0, "text": answer, "logprobs": None, "finish_reason": "stop",
                             "matched_stop": 151645}], "usage": usage}
    message = {"role": "assistant", "content": answer, "reasoning_content": None, "tool_calls": None}
    if sim.args.reasoning_parser:
        message["reasoning_content"] = reasoning or None
    return {"id": rid, "object": "chat.completion", "created": int(time.time()), "model": sim.served_name,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop",
                         "matched_stop": 151645}], "usage": usage}


# --------------------------------------------------------------------------- main


def pid_file(port):
    return os.path.join(run_dir(), "server_%d.pid" % port)


def state_file(port):
    """Live figures for the simulated nvidia-smi, kept apart from the pid files."""
    return os.path.join(os.path.dirname(run_dir()), "state", "server_%d.json" % port)


def cleanup(port):
    for p in (pid_file(port), state_file(port)):
        try:
            os.unlink(p)
        except OSError:
            pass


def config_args(argv):
    """``--config FILE.yaml`` as SGLang reads it: its keys (``model-path`` or ``model_path``) become flags
    placed BEFORE the command line's, so the command line wins. Flat ``key: value`` lines (stdlib only)."""
    path = None
    for i, a in enumerate(argv):
        # only the exact token (server_args_config_parser.py: `if arg == "--config"`); "--config=FILE" is ignored
        if a == "--config" and i + 1 < len(argv):
            path = argv[i + 1]
    if not path:
        return argv
    out = []
    with open(path) as f:
        for raw in f:
            line = re.sub(r"\s+#.*$", "", raw.rstrip("\n"))
            m = re.match(r"^([A-Za-z][A-Za-z0-9_-]*)\s*:\s*(.*?)\s*$", line)
            if not m or m.group(2) in ("", "null", "~"):
                continue
            key, val = "--" + m.group(1).replace("_", "-"), m.group(2).strip("\"'")
            if val in ("true", "True"):
                out.append(key)
            elif val in ("false", "False"):
                continue
            else:
                out += [key, val]
    return out + list(argv)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(config_args(argv))
    if not os.path.isdir(args.model_path) and os.environ.get("SGLANG_SIM_ALLOW_MISSING_MODEL") != "1":
        fail_missing_model(args.model_path)

    sim = Sim(args)

    def on_signal(signum, frame):
        sim.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    try:
        httpd = ThreadingHTTPServer((args.host, args.port), make_handler(sim))
    except OSError as e:
        sim.log("ERROR:    [Errno %d] error while attempting to bind on address ('%s', %d): %s"
                % (e.errno or 98, args.host, args.port, (e.strerror or "address already in use").lower()))
        sys.exit(1)
    httpd.daemon_threads = True

    try:
        os.makedirs(run_dir(), exist_ok=True)
        with open(pid_file(args.port), "w") as f:
            sim.start_children()
            # "<pid> <gpu,...> <mem-fraction> [<child pid per GPU>,...]"
            f.write("%d %s %s %s\n" % (os.getpid(), ",".join(str(g) for g in sim.gpus) or "0", sim.mem_fraction,
                                       ",".join(str(c.pid) for c in sim.children) or "-"))
    except OSError:
        pass

    server_thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    server_thread.start()
    try:
        if sim.startup():
            sim.write_state()
            sim.run_loop()
    finally:
        sim.log("INFO:     Shutting down")
        httpd.shutdown()
        httpd.server_close()
        sim.log("INFO:     Waiting for application shutdown.")
        sim.log("INFO:     Application shutdown complete.")
        sim.log("INFO:     Finished server process [%d]" % os.getpid())
        sim.kill_children()
        cleanup(args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
