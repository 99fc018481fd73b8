"""HTTP payloads of the simulated server (mixed into Sim)."""

import math
import os
import time
from sglang import __version__
from sglang._sim.common import go_float


class PayloadsMixin:
    """What Sim answers on its HTTP endpoints: server args and info, loads, models, /metrics."""


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
            "pp_max_micro_batch_size": a.pp_max_micro_batch_size, "dwdp_size": a.dwdp_size,
            "cuda_graph_bs": a.cuda_graph_bs, "cuda_graph_bs_decode": a.cuda_graph_bs_decode,
            "cuda_graph_bs_prefill": a.cuda_graph_bs_prefill, "moe_a2a_backend": a.moe_a2a_backend,
            "tokenizer_worker_num": a.tokenizer_worker_num, "disaggregation_mode": a.disaggregation_mode,
            "disaggregation_transfer_backend": a.disaggregation_transfer_backend,
            "enable_mfu_metrics": a.enable_mfu_metrics,
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
                     "internal_states": states,
                     # 2026 builds report "ready" (the 2026 CI sample); older ones "Up"
                     "status": ("ready" if self.fmt == "2026" else "Up") if self.ready else "Starting"})
        return info

    def loads(self):
        with self.lock:
            inflight = self.inflight
        return {"timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "dp_rank_count": self.dp,
                "loads": [{"dp_rank": d, "num_running_reqs": self.reported_running(d, inflight),
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

    def reported_running(self, d, inflight):
        """Running requests as SGLang reports them: a PD prefill node runs none (its requests wait in the
        bootstrap and inflight queues, then decode elsewhere)."""
        if self.prefill_node:
            return 0
        return self.running[d] + (inflight if d == 0 else 0)

    def metrics(self):
        if self.fmt != "2026":
            return self.metrics_2025()
        name = self.served_name
        out = []
        with self.lock:
            inflight = self.inflight
            totals = (self.prompt_tokens_total, self.gen_tokens_total, self.requests_total)
            ttft, e2e = self.ttft.snapshot(), self.e2e.snapshot()
            retracted_total = list(self.retracted_total)
        ep = max(1, self.args.ep_size)
        pids = [c.pid for c in self.children]

        def labels(d=None, **extra):
            """prometheus_client's exposition sorts every sample's labels (le, is_streaming, pid included); 2026
            builds always carry engine_type, model_name, moe_ep_rank, pp_rank, tp_rank (the rank that logs)."""
            tp = self.lead_tp(d or 0)
            ls = {"engine_type": "unified", "model_name": name, "moe_ep_rank": str(tp % ep), "pp_rank": "0",
                  "tp_rank": str(tp)}
            if d is not None and self.dp > 1:
                ls["dp_rank"] = str(d)
            ls.update(extra)
            return "{" + ",".join('%s="%s"' % (k, ls[k]) for k in sorted(ls)) + "}"

        def head(metric, help_text, kind):
            out.append("# HELP %s %s" % (metric, help_text))
            out.append("# TYPE %s %s" % (metric, kind))

        def gauge(metric, help_text, values, pid=False):
            # multiprocess_mode "mostrecent" drops the pid label; the default ("all") keeps it
            head(metric, help_text, "gauge")
            for d in range(self.dp):
                extra = {"pid": str(pids[d * len(pids) // self.dp] if pids else os.getpid())} if pid else {}
                out.append("%s%s %s" % (metric, labels(d, **extra), go_float(values(d))))

        usage = lambda d: round(self.last_tokens[d] / float(self.max_total_num_tokens), 2)  # noqa: E731
        decode_node = self.args.disaggregation_mode == "decode"
        gauge("sglang:num_running_reqs", "The number of running requests.", lambda d: self.reported_running(d, inflight))
        gauge("sglang:num_used_tokens", "The number of used tokens.", lambda d: self.last_tokens[d])
        # stats.token_usage = round(get_max_pool_usage(), 2): the max over the pools, each pool on its own too
        gauge("sglang:token_usage", "The token usage.", usage)
        gauge("sglang:full_token_usage", "The token usage for full attention layers.", usage)
        gauge("sglang:swa_token_usage", "The token usage for SWA layers.", lambda d: 0.0)
        gauge("sglang:mamba_usage", "The usage of the mamba cache.", lambda d: 0.0)
        gauge("sglang:gen_throughput", "The generation throughput (token/s).", lambda d: round(self.last_tps[d], 2))
        gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.", lambda d: self.last_queue[d])
        gauge("sglang:cache_hit_rate", "The prefix cache hit rate.", lambda d: 0.31)
        gauge("sglang:spec_accept_length", "The average acceptance length of speculative decoding.",
              lambda d: round(self.last_accept[d], 4) if self.spec else 0.0)
        gauge("sglang:num_retracted_reqs", "The number of retracted requests.", lambda d: self.last_retracted[d], pid=True)
        # PD queues (0 on a unified server): a prefill node's bootstrap/inflight, a decode node's prealloc/transfer
        gauge("sglang:num_prefill_prealloc_queue_reqs", "The number of requests in the prefill prealloc queue.",
              lambda d: self.last_bootstrap[d])
        gauge("sglang:num_prefill_inflight_queue_reqs", "The number of requests in the prefill inflight queue.",
              lambda d: self.last_inflight[d])
        gauge("sglang:num_decode_prealloc_queue_reqs", "The number of requests in the decode prealloc queue.",
              lambda d: self.last_prealloc[d] if decode_node else 0)
        gauge("sglang:num_decode_transfer_queue_reqs", "The number of requests in the decode transfer queue.",
              lambda d: self.last_transfer[d] if decode_node else 0)
        gauge("sglang:pending_prealloc_token_usage", "The token usage for pending preallocated tokens (not preallocated yet).",
              lambda d: round(self.last_prealloc_usage[d], 2) if decode_node else 0.0)
        head("sglang:num_retracted_requests_total", "The number of retracted requests.", "counter")
        for d in range(self.dp):
            out.append("sglang:num_retracted_requests_total%s %s" % (labels(d), go_float(float(retracted_total[d]))))
        for metric, help_text, v in (
                ("sglang:prompt_tokens_total", "Number of prefill tokens processed.", totals[0]),
                ("sglang:generation_tokens_total", "Number of generation tokens processed.", totals[1]),
                ("sglang:num_requests_total", "Number of requests processed.", totals[2])):
            # metrics_collector.py: labelnames=list(labels.keys()) + ["is_streaming"]; a total is their sum.
            # Multiprocess mode: no _created samples.
            head(metric, help_text, "counter")
            streamed = int(v * 0.75)
            for flag, part in (("false", int(v) - streamed), ("true", streamed)):
                out.append("%s%s %s" % (metric, labels(0, is_streaming=flag), go_float(part)))
        for metric, help_text, h in (
                ("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.", ttft),
                ("sglang:e2e_request_latency_seconds", "Histogram of End-to-end request latency in seconds", e2e)):
            # the multiprocess collector: _sum, then the buckets, then _count; no _created
            head(metric, help_text, "histogram")
            bounds, counts, total_sum = h
            out.append("%s_sum%s %s" % (metric, labels(), go_float(total_sum)))
            for le, c in zip(bounds + [math.inf], counts):
                out.append("%s_bucket%s %s" % (metric, labels(le=go_float(le)), go_float(float(c))))
            out.append("%s_count%s %s" % (metric, labels(), go_float(float(counts[-1]))))
        return "\n".join(out) + "\n"

    def metrics_2025(self):
        """The 2025 shapes: model_name first, unsorted, {model_name}-only histograms and counters with _created."""
        name = self.served_name
        out = []

        def labels(d):
            s = 'model_name="%s",engine_type="unified",tp_rank="0",pp_rank="0"' % name
            if self.dp > 1:
                s += ',dp_rank="%d"' % d
            return "{" + s + "}"

        def gauge(metric, help_text, values):
            out.append("# HELP %s %s" % (metric, help_text))
            out.append("# TYPE %s gauge" % metric)
            for d in range(self.dp):
                out.append("%s%s %s" % (metric, labels(d), go_float(values(d))))

        with self.lock:
            inflight = self.inflight
            totals = (self.prompt_tokens_total, self.gen_tokens_total, self.requests_total)
            ttft, e2e = self.ttft.snapshot(), self.e2e.snapshot()
        gauge("sglang:num_running_reqs", "The number of running requests.", lambda d: self.reported_running(d, inflight))
        gauge("sglang:num_used_tokens", "The number of used tokens.", lambda d: self.last_tokens[d])
        gauge("sglang:token_usage", "The token usage.", lambda d: round(self.last_tokens[d] / float(self.max_total_num_tokens), 4))
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
