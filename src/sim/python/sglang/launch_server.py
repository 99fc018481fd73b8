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
    POST /v1/chat/completions, /v1/completions and /generate; a rank >= 1 of a
    multi-node server (--nnodes N --node-rank R) prints its ranks' start-up lines
    and serves only a dummy /health, as SGLang's does;
  * writes ``$HOME/.sim/run/server_<port>.pid`` ("<pid> <gpu,...> <mem-fraction>")
    for the simulated nvidia-smi and removes it on exit; SIGTERM once ready drains as
    SGLang's does (``SIGTERM received … Draining requests``, /health 503) then exits 0;
    SIGINT (or SIGTERM before ready) exits 0 at once.

Simulator knobs (environment, none of them used by real SGLang):
  SGLANG_SIM_IMPORT_S         seconds of silence before the first line, no port bound (real: torch and sglang
                              imports; default 0)
  SGLANG_SIM_STARTUP_S        seconds from start to "fired up" (default 1.5)
  SGLANG_SIM_DECODE_PERIOD_S  seconds between decode log rounds (default 1.0)
  SGLANG_SIM_GEN_TPS          gen throughput per DP rank, token/s (default 2000)
  SGLANG_SIM_INPUT_TPS        input (prefill) throughput per DP rank of a PD prefill node (default 20000)
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
  SGLANG_SIM_DRAIN_S          seconds a SIGTERM drain lasts at least (default 1.0)
  SGLANG_SIM_HEALTH_S         seconds /health's generation probe takes on a healthy server (default 1.0, as
                              SGLang's 1 s poll); SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=0 (real) answers at once
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
"subprocess-crash" | "stall" | "dp-slow" | "accept-drop" | "health-wedged", ...}}}; see src/sim/bin/sim-fault.
Files: ``<run dir>/../pause_load`` or ``<run dir>/../pause_load_<port>`` existing
pauses the synthetic load (running drains to 0 and decode lines stop, as a real
idle server does); removing it resumes the load.
"""

import json
import os
import random
import signal
import socketserver
import sys
import threading
import time
from http.server import ThreadingHTTPServer

from sglang._sim.common import (QUIET_DROP, build_parser, cleanup, config_args, env_float, fail_missing_model,
                                model_params_b, node_json, pid_file, read_model_config, run_dir, state_file)
from sglang._sim.faults import FaultsMixin
from sglang._sim.handler import make_handler
from sglang._sim.payloads import Histogram, PayloadsMixin


# --------------------------------------------------------------------------- simulator


class Sim(FaultsMixin, PayloadsMixin):
    """All state of one simulated server (shared by the HTTP threads and the log loop)."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.out_lock = threading.Lock()
        self.stop = threading.Event()
        # a graceful stop (SIGTERM): /health 503 while in-flight requests finish, then exit 0
        self.draining = threading.Event()
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
        self.last_input_tps = [0.0] * self.dp
        self.last_inflight = [0] * self.dp
        self.last_bootstrap = [0] * self.dp
        self.last_retracted = [0] * self.dp
        self.retracted_total = [0] * self.dp
        # a PD decode node's prealloc and transfer queues, and its pending pre-allocated token usage
        self.last_prealloc = [0] * self.dp
        self.last_transfer = [0] * self.dp
        self.last_prealloc_usage = [0.0] * self.dp
        self.input_tps = env_float("SGLANG_SIM_INPUT_TPS", 20000.0)
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

    def lead_tp(self, dp):
        """The TP rank that logs for DP rank ``dp``: 0 of its own TP group, or, with --enable-dp-attention (the DP
        ranks live inside TP), the first TP rank of its attention group (``DP1 TP1`` for tp 2 dp 2)."""
        if self.args.enable_dp_attention and self.dp > 1:
            return dp * max(1, self.tp // self.dp)
        return 0

    def rank_tag(self, dp=0):
        """The tags of DP rank ``dp``'s logging scheduler (stat lines, its crash header, its watchdog)."""
        return self.tag(dp if self.dp > 1 else None, self.lead_tp(dp))

    def scheduler_ranks(self):
        """(dp, tp) of every scheduler on this node: tp per DP replica, or, with --enable-dp-attention, tp in all,
        DP rank = tp rank // (tp / dp)."""
        if self.args.enable_dp_attention and self.dp > 1:
            per = max(1, self.tp // self.dp)
            return [(t // per, t) for t in range(self.tp)]
        return [(d, t) for d in range(self.dp) for t in range(self.tp)]

    @property
    def prefill_node(self):
        """A PD prefill server (--disaggregation-mode prefill): Prefill lines only, running 0, inflight transfers."""
        return self.args.disaggregation_mode == "prefill"

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

    def drain(self):
        """SGLang's SIGTERM handler: log, answer /health 503, wait for in-flight requests, then stop."""
        self.log("SIGTERM received. signum=None frame=None. Draining requests and shutting down...")
        deadline = time.time() + max(0.0, env_float("SGLANG_SIM_DRAIN_S", 1.0))
        while time.time() < deadline or (self.inflight > 0 and time.time() < deadline + 30):
            if self.stop.wait(0.1):
                return
        self.stop.set()

    def sleep(self, s):
        """Sleep that ends early on SIGTERM; returns False when stopping."""
        return not self.stop.wait(s)

    # ----- startup

    def server_args_repr(self):
        items = ", ".join("%s=%r" % (k, v) for k, v in self.server_args_dict().items())
        return "server_args=ServerArgs(%s)" % items

    @property
    def secondary(self):
        """A rank >= 1 of a multi-node server (--nnodes N --node-rank R): schedulers only, a dummy /health."""
        return self.args.nnodes > 1 and self.args.node_rank > 0

    def secondary_startup(self):
        """Rank >= 1 (reference B2): per-rank start-up lines with this node's TP tags, then the dummy health server;
        no ready line and, later, no stat lines (only attn_tp_rank 0 logs them)."""
        a = self.args
        per_node = max(1, self.tp // max(1, a.nnodes))
        ranks = list(range(per_node * a.node_rank, per_node * (a.node_rank + 1)))
        total = max(0.0, env_float("SGLANG_SIM_STARTUP_S", 1.5))
        steps = [
            lambda: [self.line("Init torch distributed begin.", self.tag(None, t)) for t in ranks],
            lambda: [self.line("Init torch distributed ends. elapsed=5.54 s, mem usage=0.74 GB", self.tag(None, t)) for t in ranks],
            lambda: [self.line("Custom allreduce is disabled because this process group spans across nodes.", self.tag(None, t))
                     for t in ranks[:1]],
            lambda: [self.line("Load weight begin. avail mem=%.2f GB" % self.avail_start, self.tag(None, t)) for t in ranks],
            lambda: [self.line("KV Cache is allocated. #tokens: %d, K size: %.2f GB, V size: %.2f GB"
                               % (self.max_total_num_tokens, self.k_gb, self.k_gb), self.tag(None, t)) for t in ranks],
        ]
        for lines in steps:
            if not self.sleep(total / len(steps)):
                return False
            self.write("".join(lines()))
        with self.lock:
            self.ready = True
        self.log("Dummy health check server started in background thread at %s:%d" % (a.host, a.port))
        return True

    def secondary_loop(self):
        """Silent while the server runs; a crash fault still ends this rank."""
        while self.sleep(self.period):
            mode = self.poll_fault()
            if mode in ("crash", "oom", "nccl"):
                self.crash(mode)
            self.write_state()

    def startup(self):
        if self.secondary:
            return self.secondary_startup()
        a = self.args
        total = max(0.0, env_float("SGLANG_SIM_STARTUP_S", 1.5))
        arch = (self.cfg.get("architectures") or ["Qwen3ForCausalLM"])[0]
        dtype = "torch.bfloat16" if a.dtype in ("auto", "bfloat16", "bf16") else "torch." + a.dtype
        ranks = self.scheduler_ranks()
        # (fraction of the startup time spent before this group, lines). The lines are built when
        # printed, so that their timestamps advance through the startup like the real ones.
        steps = []
        steps.append((0.0, lambda: [self.line(self.server_args_repr())]))
        if self.dp > 1 and not a.enable_dp_attention:
            steps.append((0.02, lambda: [
                    self.line("Launch DP%d starting at GPU #%d." % (d, self.gpus[d * self.tp] if d * self.tp < len(self.gpus) else d * self.tp))
                    for d in range(self.dp)]))
        steps.append((0.05, lambda: [self.line("Using default HuggingFace chat template with detected content format: string")]))
        if not a.attention_backend:
            if self.fmt == "2026":
                # 2026 main-process loggers: "[ts] INFO server_args.py:NNNN: ..." (docs notebooks 2026-02/03)
                steps.append((0.0, lambda: [self.line("INFO server_args.py:2232: Attention backend not specified. Use fa3 backend by default.")]))
            else:
                steps.append((0.0, lambda: [self.line("Attention backend not explicitly specified. Use flashinfer backend by default.", self.tag(d, t))
                        for d, t in ranks if t == 0]))
        steps.append((0.05, lambda: [self.line("Init torch distributed begin.", self.tag(d, t)) for d, t in ranks]))
        steps.append((0.05, lambda: [self.line("Init torch distributed ends. mem usage=%.2f GB" % (0.0 if self.tp == 1 else 0.74), self.tag(d, t))
                for d, t in ranks]))
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
            bs = sorted(a.cuda_graph_bs_decode or a.cuda_graph_bs or
                        [b for b in [1, 2, 4, 8, 12, 16, 24, 32, 40, 48, 56, 64, 80, 96, 128, 160, 192, 224, 256]
                         if b <= (a.cuda_graph_max_bs_decode or self.cuda_graph_max_bs)])
            steps.append((0.03, lambda: [
                    self.line("Capture cuda graph begin. This can take up to several minutes. avail mem=%.2f GB" % self.avail_after_pool, self.rank_tag(d))
                    for d in range(self.dp)]))
            steps.append((0.0, lambda: [self.line("Capture cuda graph bs %s" % bs, self.rank_tag(d)) for d in range(self.dp)]))
            steps.append((0.25, lambda: [self.line("Capture cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB."
                                           % (11.0 + len(bs) * 0.9, self.graph_gb, self.avail_after_pool - self.graph_gb), self.rank_tag(d))
                                                   for d in range(self.dp)]))
            if self.spec:
                steps.append((0.05, lambda: [self.line("Capture draft cuda graph end. Time elapsed: %.2f s. mem usage=%.2f GB. avail mem=%.2f GB."
                                               % (4.0 + len(bs) * 0.3, 0.41, self.avail_after_pool - self.graph_gb - 0.41), self.rank_tag(d))
                                                       for d in range(self.dp)]))
        avail_end = self.avail_after_pool - self.graph_gb - (0.41 if self.spec and not a.disable_cuda_graph else 0.0)
        steps.append((0.02, lambda: [
                self.line("max_total_num_tokens=%d, chunked_prefill_size=%d, max_prefill_tokens=%d, "
                          "max_running_requests=%d, context_len=%d, available_gpu_mem=%.2f GB"
                                       % (self.max_total_num_tokens, self.chunked_prefill_size, a.max_prefill_tokens,
                                          self.max_running_requests, self.context_len, avail_end), self.rank_tag(d)) for d in range(self.dp)]))
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

    def prefill_line(self, dp, new_seq, new_tok, running, queue, usage, bootstrap=0, inflight=0, tps=None):
        cached = self.rng.choice([0, 0, new_tok // 3, new_tok // 2]) if new_tok > 100 else 0
        pairs = [("#new-seq", new_seq), ("#new-token", new_tok), ("#cached-token", cached),
                 ("token usage", "%.2f" % usage), ("#running-req", running), ("#queue-req", queue)]
        if self.fmt == "2026":
            # metrics_reporter.py (2026): #pending-token after #queue-req, then a PD prefill node's bootstrap and
            # inflight queues (#prealloc-req is a PD decode key, never on a prefill line)
            pairs.append(("#pending-token", 0 if queue == 0 else queue * 1024))
            if self.prefill_node:
                pairs += [("#bootstrap-req", bootstrap), ("#inflight-req", inflight)]
        if self.fmt in ("2026", "2025"):
            # cuda graph (piecewise) and input throughput, and no trailing ", " on prefill lines.
            pairs.append(("cuda graph", "False" if self.args.disable_cuda_graph else "True"))
            if tps is None:
                tps = new_tok / max(0.05, self.rng.uniform(0.08, 0.4))
            pairs.append(("input throughput (token/s)", "%.2f" % tps))
            return self.line("Prefill batch, " + ", ".join("%s: %s" % kv for kv in pairs),
                             self.rank_tag(dp))
        return self.line(self.kv("Prefill", pairs), self.rank_tag(dp))

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
        if self.fmt == "2026" and self.args.disaggregation_mode == "decode":
            # a PD decode node: its pre-allocation and transfer queues, and the retracted requests
            pairs += [("pre-allocated usage", "%.2f" % self.last_prealloc_usage[dp]), ("#prealloc-req", self.last_prealloc[dp]),
                      ("#transfer-req", self.last_transfer[dp]), ("#retracted-req", retracted)]
        pairs.append(("cuda graph", "False" if self.args.disable_cuda_graph else "True"))
        pairs.append(("gen throughput (token/s)", "%.2f" % tps))
        pairs.append(("#queue-req", queue))
        return self.line(self.kv("Decode", pairs), self.rank_tag(dp))

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
            self.last_retracted[d] = 0
            if running == 0:
                self.last_tps[d] = 0.0
                self.last_input_tps[d] = 0.0
                self.last_queue[d] = 0
                self.last_inflight[d] = 0
                continue  # an idle scheduler prints no decode lines
            if self.prefill_node:
                out.extend(self.prefill_round(d, running, lvl, paused, dt, mode))
                continue
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
                self.last_retracted[d] = retracted
                with self.lock:
                    self.retracted_total[d] += retracted
                queue = 20 + self.rng.randint(0, 10)
                gained = ("#new_tokens_gained: %d, " % (retracted * 640)) if self.fmt == "2026" else ""
                out.append(self.line("KV cache pool is full. Retract requests. #retracted_reqs: %d, %s"
                                     "#new_token_ratio: 0.7000 -> 1.0000" % (retracted, gained), self.rank_tag(d)))
            self.last_tps[d], self.last_accept[d], self.last_queue[d], self.last_tokens[d] = tps, accept, queue, tokens
            if self.args.disaggregation_mode == "decode":
                self.last_prealloc[d] = 0 if paused else self.rng.choice([0, 0, 1, 2, 3])
                self.last_transfer[d] = 0 if paused else self.rng.choice([0, 1, 1, 2])
                self.last_prealloc_usage[d] = self.last_prealloc[d] * 0.01
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

    def prefill_round(self, d, busy, lvl, paused, dt, mode):
        """One round of a PD prefill node's DP rank: a Prefill line (no Decode line: the requests decode on the
        decode node), its running count 0, the KV-transfer queues (#bootstrap-req, #inflight-req) carrying the load."""
        out = []
        tps = self.input_tps * lvl * self.rng.uniform(0.955, 1.045)
        if mode == "dp-slow" and (self.dp == 1 or d == int(self.fault.get("rank", 0))):
            tps *= 0.3
        new_tok = max(1, int(tps * dt))
        new_seq = max(1, min(busy, new_tok // self.rng.randint(1500, 4000)))
        queue = 0 if paused else self.rng.choice([0, 0, 1, 2, 4, 8])
        inflight = min(busy, 16)
        bootstrap = 0 if paused else self.rng.choice([0, 0, 0, 1, 2])
        tokens = min(self.max_total_num_tokens, int(inflight * self.rng.uniform(2300, 2900)))
        usage = tokens / float(self.max_total_num_tokens)
        self.last_tps[d], self.last_input_tps[d], self.last_queue[d] = 0.0, tps, queue
        self.last_tokens[d], self.last_inflight[d], self.last_bootstrap[d] = tokens, inflight, bootstrap
        with self.lock:
            self.prompt_tokens_total += new_tok
            self.gen_tokens_total += new_seq  # the first token of each request is sampled here
        out.append(self.prefill_line(d, new_seq, new_tok, 0, queue, usage, bootstrap, inflight, tps))
        if not paused and self.rng.random() < 0.4:
            # the router's request for this prefill (PD: the router posts /generate to both nodes)
            out.append(self.line('INFO:     127.0.0.1:%d - "POST /generate HTTP/1.1" 200 OK' % self.rng.randint(32768, 60999)))
            with self.lock:
                self.requests_total += 1
                self.ttft.observe(self.rng.uniform(0.05, 0.6))
                self.e2e.observe(self.rng.uniform(0.05, 0.6))
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
        if self.secondary:
            return self.secondary_loop()
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
                # (a PD prefill node's stat lines are its Prefill lines)
                decodes += sum(1 for l in chunk if ("Prefill batch" if self.prefill_node else "Decode batch") in l)
                lines.extend(chunk)
            self.write("".join(lines))
            self.write_state()
            if crash_after and now - self.start_time > crash_after:
                self.crash()


# --------------------------------------------------------------------------- main


class GrpcStub(socketserver.ThreadingTCPServer):
    """The gRPC port of a --grpc-mode server: it answers HTTP/2 only (its SETTINGS frame, then closes), as a real
    gRPC server does to an HTTP/1.1 request."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr):
        class Handler(socketserver.BaseRequestHandler):
            def handle(self):
                try:
                    self.request.settimeout(2)
                    self.request.recv(4096)
                    self.request.sendall(b"\x00\x00\x00\x04\x00\x00\x00\x00\x00")
                except OSError:
                    pass

        super().__init__(addr, Handler)



def main(argv=None):
    # a real server imports torch and sglang for seconds before its first line: alive, silent, no port yet
    time.sleep(max(0.0, env_float("SGLANG_SIM_IMPORT_S", 0.0)))
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(config_args(argv))
    if not os.path.isdir(args.model_path) and os.environ.get("SGLANG_SIM_ALLOW_MISSING_MODEL") != "1":
        fail_missing_model(args.model_path)

    sim = Sim(args)

    def on_signal(signum, frame):
        if signum == signal.SIGTERM and sim.ready and not sim.draining.is_set():
            sim.draining.set()
            threading.Thread(target=sim.drain, daemon=True).start()
            return
        sim.stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    # --grpc-mode: --port speaks gRPC (HTTP/2; an HTTP/1.1 client reads "Expected HTTP/"), and /health and /metrics
    # move to the HTTP sidecar on --metrics-http-port (none without it)
    http_port = args.port if not args.grpc_mode else args.metrics_http_port
    try:
        grpcd = GrpcStub((args.host, args.port)) if args.grpc_mode else None
        httpd = ThreadingHTTPServer((args.host, http_port), make_handler(sim)) if http_port else None
    except OSError as e:
        sim.log("ERROR:    [Errno %d] error while attempting to bind on address ('%s', %d): %s"
                % (e.errno or 98, args.host, args.port, (e.strerror or "address already in use").lower()))
        sys.exit(1)
    if httpd:
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

    for srv in (httpd, grpcd):
        if srv:
            threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True).start()
    try:
        if sim.startup():
            sim.write_state()
            sim.run_loop()
    finally:
        sim.log("INFO:     Shutting down")
        for srv in (httpd, grpcd):
            if srv:
                srv.shutdown()
                srv.server_close()
        sim.log("INFO:     Waiting for application shutdown.")
        sim.log("INFO:     Application shutdown complete.")
        sim.log("INFO:     Finished server process [%d]" % os.getpid())
        sim.kill_children()
        cleanup(args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
