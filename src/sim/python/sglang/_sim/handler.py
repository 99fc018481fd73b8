"""The HTTP request handler of the simulated server."""

import json
import os
import time
import uuid
from http.server import BaseHTTPRequestHandler
from sglang._sim.common import env_float


def health_generation():
    """SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION (real SGLang, on by default): off, /health answers 200 at once."""
    return os.environ.get("SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION", "true").strip().lower() not in ("0", "false", "no", "off")


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
            if sim.secondary:
                # rank >= 1: SGLang's dummy health server (launch_dummy_health_check_server), nothing else
                if path in ("/health", "/health_generate", "/ping"):
                    return self.send(200 if sim.ready and not sim.stop.is_set() else 503, b"", "text/plain")
                return self.not_found()
            if path in ("/health", "/health_generate"):
                if sim.fault.get("mode") == "health-wedged":
                    # a wedged scheduler: SGLang gives up on its health generation after ~20 s and answers 503
                    sim.stop.wait(float(sim.fault.get("delayS", 0) or 0))
                    return self.send(503, b"", "text/plain")
                up = sim.ready and not sim.stop.is_set() and not sim.draining.is_set()
                if up and (path == "/health_generate" or health_generation()):
                    # http_server.py: a 1-token generation, then `await asyncio.sleep(1)` before it looks for the
                    # output, so a healthy server answers after about 1 s (503 at once while starting or draining)
                    sim.stop.wait(max(0.0, env_float("SGLANG_SIM_HEALTH_S", 1.0)))
                    up = sim.ready and not sim.stop.is_set() and not sim.draining.is_set()
                self.send(200 if up else 503, b"", "text/plain")
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
            if sim.secondary:
                return self.not_found()
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
