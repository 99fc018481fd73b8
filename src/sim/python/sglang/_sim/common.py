"""Flags, constants and files of the simulated SGLang server."""

import argparse
import json
import math
import os
import re
import sys


# Builtins of 2026 builds; the flag is a free string there ("Or any name registered"), so any value is accepted.
SPEC_ALGORITHMS = ["EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM", "DFLASH", "DSPARK", "UNO"]
QUANT_METHODS = [
    "awq", "fp8", "gptq", "marlin", "gptq_marlin", "awq_marlin", "bitsandbytes", "gguf",
    "modelopt", "modelopt_fp8", "modelopt_fp4", "petit_nvfp4", "w8a8_int8", "w8a8_fp8",
    "moe_wna16", "qoq", "w4afp8", "mxfp4", "compressed-tensors",
    # 2026 (Ascend ModelSlim checkpoints)
    "modelslim",
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
    # gRPC mode (behind the Model Gateway): gRPC on --port, health and metrics on an HTTP sidecar
    a("--grpc-mode", action="store_true")
    a("--metrics-http-port", type=int, default=None)
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
    a("--cuda-graph-bs", type=int, nargs="+", default=None)
    # 0.5.20: separate decode and prefill CUDA-graph batch sizes
    a("--cuda-graph-max-bs-decode", type=int, default=None)
    a("--cuda-graph-max-bs-prefill", type=int, default=None)
    a("--cuda-graph-bs-decode", type=int, nargs="+", default=None)
    a("--cuda-graph-bs-prefill", type=int, nargs="+", default=None)
    a("--disable-cuda-graph", action="store_true")
    a("--disable-radix-cache", action="store_true")
    a("--enable-hierarchical-cache", action="store_true")
    a("--hicache-ratio", type=float, default=2.0)
    # Parallelism
    a("--tensor-parallel-size", "--tp-size", "--tp", type=int, default=1, dest="tp_size")
    a("--data-parallel-size", "--dp-size", "--dp", type=int, default=1, dest="dp_size")
    a("--pipeline-parallel-size", "--pp-size", type=int, default=1, dest="pp_size")
    # with these two, argparse's prefix matching refuses "--pp" as ambiguous, as it does for the real server
    a("--pp-max-micro-batch-size", type=int, default=None)
    a("--pp-async-batch-depth", type=int, default=0)
    a("--expert-parallel-size", "--ep-size", "--ep", type=int, default=1, dest="ep_size")
    # 2026 parallel sizes carved out of TP (GPU count unchanged)
    a("--decode-context-parallel-size", "--dcp-size", type=int, default=1, dest="dcp_size")
    a("--attention-context-parallel-size", "--attn-cp-size", type=int, default=1, dest="attn_cp_size")
    a("--moe-data-parallel-size", "--moe-dp-size", type=int, default=1, dest="moe_dp_size")
    a("--dwdp-size", type=int, default=1)
    # 2026: --moe-a2a-backend replaces --enable-deepep-moe (PR #38375); a free string here, choices vary by build
    a("--moe-a2a-backend", type=str, default="none")
    a("--moe-runner-backend", type=str, default="auto")
    a("--disaggregation-mode", type=str, default="null", choices=["null", "prefill", "decode"])
    a("--disaggregation-transfer-backend", type=str, default="mooncake")
    a("--disaggregation-bootstrap-port", type=int, default=8998)
    a("--tokenizer-worker-num", type=int, default=1)
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
    a("--enable-mfu-metrics", action="store_true")
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
            if val.startswith("[") and val.endswith("]"):
                # a flow list (cuda-graph-bs: [1, 2, 4, 8]) becomes --key v1 v2 ..., as SGLang's merger does
                out += [key] + [v.strip().strip("\"'") for v in val[1:-1].split(",") if v.strip()]
                continue
            if val in ("true", "True"):
                out.append(key)
            elif val in ("false", "False"):
                continue
            else:
                out += [key, val]
    return out + list(argv)
