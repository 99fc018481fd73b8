"""Simulated SGLang Model Gateway (stdlib only, no GPU), faithful to what a monitor reads.

Profiles (SMG_SIM_PROFILE), after the reference's table A3:
  legacy-0.1        /add_worker?url=, /remove_worker?url=, /list_workers -> {"urls": [...]}, plain-text 200/400
  rest-by-url-0.2   /workers, /workers/{url-encoded url}, id == url, connection_mode "Http", sgl_router_* metrics
  rest-by-uuid-0.3  /workers/{uuid}, connection_mode "HTTP", smg_* metrics
  smg-1.x           lower-case connection_mode, worker "status" (pending|ready|not_ready|failed|draining), drain on
                    removal (--drain-settle-secs), 409 on a duplicate URL, "details" in /get_loads

What it does: routes POST /generate, /v1/completions, /v1/chat/completions to a healthy worker (least load),
health-checks every worker (GET --health-check-endpoint every --health-check-interval-secs; 3 failures -> unhealthy,
2 successes -> healthy; smg-1.x not_ready then failed after 9 more), counts circuit-breaker failures, serves
/readiness (503 when no healthy worker; PD needs a prefill and a decode), /health and /liveness (200 always, even
with every worker down: they say nothing about the fleet), Prometheus text on --prometheus-port, and writes
tracing-style log lines (UTC, 5-wide level, target, file:line) to stdout and, with --log-dir, a daily file.
POST /workers and DELETE /workers/{id} answer 202 at once and apply after SMG_SIM_JOB_DELAY_S (default 0.5).

Simulator knobs (none used by the real gateway):
  SMG_SIM_PROFILE      one of the four above
  SMG_SIM_JOB_DELAY_S  delay before a queued add/remove applies
  SMG_SIM_REQUEST_LOG  file: one JSON line per admin request and per applied job, {"t": epoch seconds, ...}
  SMG_SIM_VERSION      version string printed in the banner
"""

import argparse
import json
import os
import re
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROFILES = ("legacy-0.1", "rest-by-url-0.2", "rest-by-uuid-0.3", "smg-1.x")
VERSIONS = {"legacy-0.1": "0.1.9", "rest-by-url-0.2": "0.2.3", "rest-by-uuid-0.3": "0.3.2", "smg-1.x": "1.9.0"}
TARGETS = {
    "legacy-0.1": "sglang_router_rs",
    "rest-by-url-0.2": "sglang_router_rs",
    "rest-by-uuid-0.3": "smg",
    "smg-1.x": "smg",
}
LOG_NAMES = {"legacy-0.1": "sgl-router", "rest-by-url-0.2": "sgl-router", "rest-by-uuid-0.3": "smg", "smg-1.x": "smg"}


def setproctitle(title):
    """What setproctitle does on Linux: overwrite the argv area, so /proc/PID/cmdline reads ``title`` only."""
    try:
        with open("/proc/self/stat", "rb") as f:
            st = f.read()
        fields = st[st.rindex(b")") + 2:].split()
        a0, a1 = int(fields[45]), int(fields[46])
        n = a1 - a0
        b = title.encode()[: n - 1]
        with open("/proc/self/mem", "r+b", buffering=0) as m:
            m.seek(a0)
            m.write(b + b"\0" * (n - len(b)))
    except (OSError, ValueError, IndexError):
        pass
    try:
        import ctypes

        ctypes.CDLL(None).prctl(15, title.split("\0")[0].encode()[:15], 0, 0, 0)
    except Exception:  # noqa: BLE001 - the title is cosmetic
        pass


def parse_args(argv, profile):
    p = argparse.ArgumentParser(prog="sglang_router.launch_router")
    p.add_argument("--host", default="127.0.0.1" if profile == "legacy-0.1" else "0.0.0.0")
    p.add_argument("--port", type=int, default=30000)
    p.add_argument("--worker-urls", nargs="*", default=[])
    p.add_argument("--policy", default="cache_aware")
    p.add_argument("--pd-disaggregation", action="store_true")
    p.add_argument("--prefill", nargs="+", action="append", default=[])
    p.add_argument("--decode", nargs=1, action="append", default=[])
    p.add_argument("--prefill-policy", default=None)
    p.add_argument("--decode-policy", default=None)
    p.add_argument("--prometheus-port", type=int, default=29000)
    p.add_argument("--prometheus-host", default="127.0.0.1" if profile == "legacy-0.1" else "0.0.0.0")
    p.add_argument("--log-dir", default=None)
    p.add_argument("--log-level", default="info")
    p.add_argument("--health-check-interval-secs", type=float, default=60)
    p.add_argument("--health-check-timeout-secs", type=float, default=5)
    p.add_argument("--health-failure-threshold", type=int, default=3)
    p.add_argument("--health-success-threshold", type=int, default=2)
    p.add_argument("--health-check-endpoint", default="/health")
    p.add_argument("--disable-health-check", action="store_true")
    p.add_argument("--remove-unhealthy-workers", action="store_true")
    p.add_argument("--drain-settle-secs", type=float, default=5)
    p.add_argument("--cb-failure-threshold", type=int, default=10)
    p.add_argument("--api-key", default=None)
    p.add_argument("--request-timeout-secs", type=float, default=1800)
    args, _unknown = p.parse_known_args(argv)
    return args


class Gateway:
    def __init__(self, args, profile):
        self.args = args
        self.profile = profile
        self.version = os.environ.get("SMG_SIM_VERSION", VERSIONS[profile])
        self.lock = threading.RLock()
        self.workers = []  # dicts, in registration order
        self.jobs = {}  # id -> job_status dict (pending/processing/failed)
        self.rr = 0
        self.cb_outcomes = {}
        self.requests_total = 0
        self.delay = float(os.environ.get("SMG_SIM_JOB_DELAY_S", "0.5"))
        self.request_log = os.environ.get("SMG_SIM_REQUEST_LOG")
        self.log_file = None
        if args.log_dir:
            os.makedirs(args.log_dir, exist_ok=True)
            name = "%s.%s" % (LOG_NAMES[profile], time.strftime("%Y-%m-%d", time.gmtime()))
            self.log_file = open(os.path.join(args.log_dir, name), "a", buffering=1)

    # ------------------------------------------------------------------ logs
    def log(self, level, message, where="src/server.rs:412", target=None):
        line = "%s %5s %s: %s: %s" % (
            time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
            level,
            target or (TARGETS[self.profile] + "::server"),
            where,
            message,
        )
        print(line, flush=True)
        if self.log_file:
            self.log_file.write(line + "\n")

    def record(self, **event):
        if not self.request_log:
            return
        event["t"] = time.time()
        with self.lock, open(self.request_log, "a") as f:
            f.write(json.dumps(event) + "\n")

    # ------------------------------------------------------------------ registry
    def new_worker(self, url, worker_type="regular", bootstrap_port=None):
        wid = url if self.profile in ("legacy-0.1", "rest-by-url-0.2") else str(uuid.uuid4())
        return {
            "id": wid,
            "url": url,
            "worker_type": worker_type,
            "bootstrap_port": bootstrap_port,
            "healthy": True,
            "status": "ready",
            "fails": 0,
            "succ": 0,
            "load": 0,
            "processed": 0,
            "cb_fail": 0,
            "cb_state": 0,
        }

    def find(self, key):
        with self.lock:
            for w in self.workers:
                if w["id"] == key or w["url"] == key:
                    return w
        return None

    def check(self, url):
        try:
            with urllib.request.urlopen(url + self.args.health_check_endpoint, timeout=self.args.health_check_timeout_secs) as r:
                return r.status, None
        except urllib.error.HTTPError as e:
            return e.code, None
        except Exception as e:  # noqa: BLE001
            return None, e

    def worker_info(self, w):
        cm = {"rest-by-url-0.2": "Http", "rest-by-uuid-0.3": "HTTP", "smg-1.x": "http"}.get(self.profile, "Http")
        info = {
            "id": w["id"],
            "url": w["url"],
            "model_id": "default" if self.profile != "smg-1.x" else None,
            "priority": 50,
            "cost": 1.0,
            "worker_type": w["worker_type"],
            "is_healthy": w["healthy"],
            "load": w["load"],
            "connection_mode": cm,
        }
        if w["bootstrap_port"] is not None:
            info["bootstrap_port"] = w["bootstrap_port"]
        if self.profile == "smg-1.x":
            del info["model_id"]
            info["models"] = []
            info["status"] = w["status"]
            info["runtime_type"] = "sglang"
        if self.profile == "rest-by-uuid-0.3":
            info["disable_health_check"] = bool(self.args.disable_health_check)
        job = self.jobs.get(w["id"])
        if job:
            info["job_status"] = job
        return info

    def routable(self):
        with self.lock:
            return [w for w in self.workers if w["healthy"] and w["status"] == "ready" and w["cb_state"] != 1]

    # ------------------------------------------------------------------ jobs
    def queue_add(self, url, worker_type, bootstrap_port):
        w = self.new_worker(url, worker_type, bootstrap_port)
        job = {"job_type": "AddWorker", "worker_url": url, "status": "pending", "message": None, "timestamp": int(time.time())}
        with self.lock:
            self.jobs[w["id"]] = job

        def run():
            time.sleep(self.delay / 2)
            job["status"] = "processing"
            time.sleep(self.delay / 2)
            code, err = self.check(url)
            with self.lock:
                if code == 200:
                    w["status"] = "ready"
                    self.workers.append(w)
                    self.jobs.pop(w["id"], None)
                    self.log(" INFO", "Worker %s is healthy" % url, "src/core/worker_manager.rs:880")
                    self.record(event="added", url=url, id=w["id"])
                else:
                    job["status"] = "failed"
                    job["message"] = "Worker %s failed health check: %s" % (url, err or "status %s" % code)
                    self.log(" WARN", "Failed to contact worker %s: %s" % (url, err or code), "src/core/worker_manager.rs:902")
                    self.record(event="add-failed", url=url, id=w["id"])

        threading.Thread(target=run, daemon=True).start()
        return w["id"]

    def queue_remove(self, w):
        job = {"job_type": "RemoveWorker", "worker_url": w["url"], "status": "pending", "message": None, "timestamp": int(time.time())}
        with self.lock:
            self.jobs[w["id"]] = job

        def run():
            time.sleep(self.delay)
            job["status"] = "processing"
            if self.profile == "smg-1.x" and self.args.drain_settle_secs > 0 and w["status"] == "ready":
                with self.lock:
                    w["status"] = "draining"
                self.log(" INFO", "Draining 1 worker(s) for %ss before removal" % int(self.args.drain_settle_secs),
                         "model_gateway/src/workflow/steps/local/drain_workers.rs:57")
                time.sleep(self.args.drain_settle_secs)
            self.remove_now(w)

        threading.Thread(target=run, daemon=True).start()

    def remove_now(self, w):
        with self.lock:
            if w in self.workers:
                self.workers.remove(w)
            self.jobs.pop(w["id"], None)
        self.log(" INFO", "Removed worker %s" % w["url"], "src/core/worker_manager.rs:960")
        self.record(event="removed", url=w["url"], id=w["id"])

    # ------------------------------------------------------------------ health
    def health_loop(self):
        a = self.args
        while True:
            time.sleep(max(0.05, a.health_check_interval_secs))
            if a.disable_health_check:
                continue
            for w in list(self.workers):
                code, err = self.check(w["url"])
                ok = code == 200
                with self.lock:
                    if ok:
                        w["fails"] = 0
                        w["succ"] += 1
                        if not w["healthy"] and w["succ"] >= a.health_success_threshold and w["status"] != "draining":
                            w["healthy"] = True
                            w["status"] = "ready"
                        continue
                    w["succ"] = 0
                    w["fails"] += 1
                    fails = w["fails"]
                health_url = w["url"] + a.health_check_endpoint
                if err is None:
                    self.log(" WARN", "HTTP health check returned non-success status for %s: %s" % (health_url, code),
                             "src/core/worker.rs:512", TARGETS[self.profile] + "::core::worker")
                else:
                    self.log(" WARN", "HTTP health check failed for %s: %r" % (health_url, str(err)),
                             "src/core/worker.rs:520", TARGETS[self.profile] + "::core::worker")
                if self.profile in ("rest-by-uuid-0.3", "smg-1.x"):
                    self.log(" WARN", "Health probe failed worker_url=%s error=%s" % (w["url"], err or code),
                             "src/core/worker_manager.rs:1031", TARGETS[self.profile] + "::core::worker_manager")
                with self.lock:
                    if fails >= a.health_failure_threshold and w["healthy"]:
                        w["healthy"] = False
                        if self.profile == "smg-1.x" and w["status"] != "draining":
                            w["status"] = "not_ready"
                    if (self.profile == "smg-1.x" and w["status"] == "not_ready"
                            and fails >= a.health_failure_threshold * 4):
                        w["status"] = "failed"
                        if a.remove_unhealthy_workers:
                            threading.Thread(target=self.remove_now, args=(w,), daemon=True).start()

    # ------------------------------------------------------------------ answers
    def readiness(self):
        with self.lock:
            healthy = [w for w in self.workers if w["healthy"]]
            total = len(self.workers)
        if self.args.pd_disaggregation:
            ok = any(w["worker_type"] == "prefill" for w in healthy) and any(w["worker_type"] == "decode" for w in healthy)
        else:
            ok = len(healthy) > 0
        if ok:
            return 200, {"status": "ready", "healthy_workers": len(healthy), "total_workers": total}
        return 503, {"status": "not ready", "reason": "insufficient healthy workers"}

    def metrics(self):
        p = "sgl_router_" if self.profile in ("legacy-0.1", "rest-by-url-0.2") else "smg_"
        out = []
        with self.lock:
            ws = list(self.workers)
            if p == "sgl_router_":
                out.append("# TYPE sgl_router_active_workers gauge")
                out.append("sgl_router_active_workers %d" % sum(1 for w in ws if w["healthy"]))
                out.append("# TYPE sgl_router_requests_total counter")
                out.append('sgl_router_requests_total{route="/generate"} %d' % self.requests_total)
                for name, key in (("worker_health", None), ("running_requests", "load"), ("processed_requests_total", "processed"),
                                  ("cb_state", "cb_state")):
                    out.append("# TYPE sgl_router_%s gauge" % name)
                    for w in ws:
                        v = (1 if w["healthy"] else 0) if key is None else w[key]
                        out.append('sgl_router_%s{worker="%s"} %d' % (name, w["url"], v))
                for w in ws:
                    out.append('sgl_router_policy_decisions_total{policy="%s",worker="%s"} %d' % (self.args.policy, w["url"], w["processed"]))
            else:
                out.append("# TYPE smg_worker_pool_size gauge")
                out.append('smg_worker_pool_size{worker_type="regular",connection_mode="http",model="default"} %d' % len(ws))
                out.append("# TYPE smg_http_requests_total counter")
                out.append('smg_http_requests_total{method="POST",path="/generate"} %d' % self.requests_total)
                for name, key in (("worker_health", None), ("worker_requests_active", "load"), ("worker_cb_state", "cb_state"),
                                  ("worker_cb_consecutive_failures", "cb_fail")):
                    out.append("# TYPE smg_%s gauge" % name)
                    for w in ws:
                        v = (1 if w["healthy"] else 0) if key is None else w[key]
                        out.append('smg_%s{worker="%s"} %d' % (name, w["url"], v))
                for w in ws:
                    out.append('smg_worker_selection_total{worker_type="%s",policy="%s",worker="%s"} %d'
                               % (w["worker_type"], self.args.policy, w["url"], w["processed"]))
            out.append("# TYPE smg_sim_unknown_metric gauge" if p == "smg_" else "# TYPE sgl_router_tree_size gauge")
            out.append(("smg_sim_unknown_metric 1" if p == "smg_" else "sgl_router_tree_size 0"))
        return "\n".join(out) + "\n"

    def route(self, path, body, headers):
        cands = self.routable()
        if not cands:
            return 503, {"error": {"type": "Service Unavailable", "code": "no_available_workers",
                                   "message": "All workers are unavailable (circuit breaker open or unhealthy)", "param": None}}
        with self.lock:
            if self.args.policy == "round_robin":
                self.rr += 1
                w = cands[self.rr % len(cands)]
            else:
                w = min(cands, key=lambda x: (x["load"], x["processed"]))
            w["load"] += 1
            self.requests_total += 1
        try:
            req = urllib.request.Request(w["url"] + path, data=body, headers={"content-type": "application/json"}, method="POST")
            try:
                with urllib.request.urlopen(req, timeout=self.args.request_timeout_secs) as r:
                    code, data = r.status, r.read()
            except urllib.error.HTTPError as e:
                code, data = e.code, e.read()
            except Exception as e:  # noqa: BLE001
                code, data = 502, json.dumps({"error": {"type": "Bad Gateway", "code": "upstream_error", "message": str(e)}}).encode()
        finally:
            with self.lock:
                w["load"] -= 1
                w["processed"] += 1
        with self.lock:
            if code in (408, 429, 500, 502, 503, 504):
                w["cb_fail"] += 1
                if w["cb_fail"] >= self.args.cb_failure_threshold and w["cb_state"] == 0:
                    w["cb_state"] = 1
                    self.log(" INFO", "Circuit breaker state transition: closed -> open", "src/core/circuit_breaker.rs:201")
            else:
                w["cb_fail"] = 0
        return code, data


def make_handler(gw):
    a = gw.args
    prof = gw.profile
    rest = prof != "legacy-0.1"
    uuid_re = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send(self, code, body, ctype="application/json", extra=None):
            if isinstance(body, (dict, list)):
                body = json.dumps(body).encode()
            elif isinstance(body, str):
                body = body.encode()
            self.send_response(code)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            for k, v in (extra or {}).items():
                self.send_header(k, v)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            level = " INFO" if code < 400 else (" WARN" if code < 500 else "ERROR")
            what = "finished processing request" if code < 400 else (
                "request failed with client error" if code < 500 else "request failed with server error")
            self.log_request_line(level, what, code)

        def log_request_line(self, level, what, code):
            gw.log(level, "%s method=%s uri=%s status_code=%d" % (what, self.command, self.path, code),
                   "src/middleware.rs:381", TARGETS[prof] + "::response")

        def admin(self, **extra):
            gw.record(method=self.command, path=self.path, **extra)

        def auth_ok(self, path):
            if not a.api_key or path in ("/health", "/liveness", "/readiness", "/get_server_info", "/v1/models", "/health_generate"):
                return True
            if self.headers.get("Authorization") == "Bearer " + a.api_key:
                return True
            self.send(401, b"", "text/plain")
            return False

        def body(self):
            n = int(self.headers.get("content-length") or 0)
            return self.rfile.read(n) if n else b""

        def do_GET(self):
            path, _, query = self.path.partition("?")
            if not self.auth_ok(path):
                return
            if path in ("/health", "/liveness"):
                return self.send(200, "OK", "text/plain")
            if path == "/readiness":
                code, body = gw.readiness()
                return self.send(code, body)
            if path == "/list_workers" and not rest:
                with gw.lock:
                    return self.send(200, {"urls": [w["url"] for w in gw.workers]})
            if path == "/workers" and rest:
                with gw.lock:
                    infos = [gw.worker_info(w) for w in gw.workers]
                stats = {k + "_count": sum(1 for i in infos if i["worker_type"] == k) for k in ("prefill", "decode", "regular")}
                return self.send(200, {"workers": infos, "total": len(infos), "stats": stats})
            if path.startswith("/workers/") and rest:
                key = urllib.parse.unquote(path[len("/workers/"):])
                w = gw.find(key)
                if w:
                    return self.send(200, gw.worker_info(w))
                job = gw.jobs.get(key)
                if job:
                    return self.send(200, {"id": key, "url": job["worker_url"], "job_status": job})
                return self.send(404, {"error": "Worker not found", "code": "WORKER_NOT_FOUND"})
            if path == "/get_server_info":
                if prof in ("rest-by-url-0.2", "rest-by-uuid-0.3"):
                    return self.send(200, {"router_manager": True, "routers_count": 1, "workers_count": len(gw.workers)})
                cands = gw.routable()
                if not cands:
                    return self.send(503, {"error": {"type": "Service Unavailable", "code": "no_workers", "message": "No workers"}})
                try:
                    with urllib.request.urlopen(cands[0]["url"] + "/get_server_info", timeout=5) as r:
                        return self.send(r.status, r.read())
                except Exception as e:  # noqa: BLE001
                    return self.send(502, {"error": str(e)})
            if path == "/v1/models":
                if prof in ("legacy-0.1", "rest-by-url-0.2"):
                    return self.send(200, {"models": ["default"]})
                if not gw.workers:
                    return self.send(503, "No models available", "text/plain")
                return self.send(200, {"object": "list", "data": [{"id": "default", "object": "model", "created": 0, "owned_by": "local"}]})
            if path == "/get_loads":
                with gw.lock:
                    ws = [{"worker": w["url"], "load": w["load"]} for w in gw.workers]
                    if prof == "smg-1.x":
                        for x, w in zip(ws, gw.workers):
                            x["details"] = {"timestamp": int(time.time()), "dp_rank_count": 1,
                                            "loads": [{"dp_rank": 0, "num_running_reqs": w["load"], "num_waiting_reqs": 0}]}
                return self.send(200, {"workers": ws})
            if path == "/engine_metrics" and prof != "legacy-0.1":
                return self.send(200, "", "text/plain")
            return self.send(404, b"", "text/plain")

        def do_HEAD(self):
            return self.do_GET()

        def do_POST(self):
            path, _, query = self.path.partition("?")
            if not self.auth_ok(path):
                return
            raw = self.body()
            q = urllib.parse.parse_qs(query)
            if path == "/add_worker" and not rest:
                url = (q.get("url") or [""])[0]
                self.admin(url=url)
                if not url:
                    return self.send(400, "Missing url parameter", "text/plain")
                code, err = gw.check(url)
                if code != 200:
                    return self.send(400, "Failed to add worker %s: health check failed" % url, "text/plain")
                with gw.lock:
                    if not gw.find(url):
                        gw.workers.append(gw.new_worker(url))
                gw.record(event="added", url=url, id=url)
                return self.send(200, "Successfully added worker: %s" % url, "text/plain")
            if path == "/remove_worker" and not rest:
                url = (q.get("url") or [""])[0]
                self.admin(url=url)
                w = gw.find(url)
                if not w:
                    return self.send(400, "Worker %s not found" % url, "text/plain")
                gw.remove_now(w)
                return self.send(200, "Successfully removed worker: %s" % url, "text/plain")
            if path == "/workers" and rest:
                try:
                    spec = json.loads(raw or b"{}")
                    url = spec["url"]
                except (ValueError, KeyError, TypeError):
                    return self.send(400, {"error": "Invalid worker spec: url is required", "code": "BAD_REQUEST"})
                self.admin(url=url)
                if prof == "smg-1.x" and gw.find(url):
                    return self.send(409, {"error": "Worker %s already exists" % url, "code": "WORKER_ALREADY_EXISTS"})
                wid = gw.queue_add(url, spec.get("worker_type") or "regular", spec.get("bootstrap_port"))
                body = {"status": "accepted", "worker_id": wid, "message": "Worker addition queued for background processing"}
                extra = {}
                if prof != "rest-by-url-0.2":
                    body["url"] = url
                    body["location"] = "/workers/" + wid
                    extra["Location"] = "/workers/" + wid
                return self.send(202, body, extra=extra)
            if path in ("/generate", "/v1/completions", "/v1/chat/completions"):
                code, data = gw.route(path, raw, self.headers)
                return self.send(code, data)
            if path == "/flush_cache":
                return self.send(200, {"status": "success", "message": "Cache flushed", "workers_flushed": len(gw.workers),
                                       "total_http_workers": len(gw.workers), "total_workers": len(gw.workers)})
            return self.send(404, b"", "text/plain")

        def do_DELETE(self):
            path = self.path.partition("?")[0]
            if not self.auth_ok(path):
                return
            if not (rest and path.startswith("/workers/")):
                return self.send(404, b"", "text/plain")
            key = urllib.parse.unquote(path[len("/workers/"):])
            self.admin(key=key)
            if prof in ("rest-by-uuid-0.3", "smg-1.x") and not uuid_re.match(key):
                return self.send(400, {"error": "Invalid worker id %s: expected a UUID" % key, "code": "BAD_REQUEST"})
            w = gw.find(key)
            if not w or (prof != "rest-by-url-0.2" and w["id"] != key):
                return self.send(404, {"error": "Worker %s not found" % key, "code": "WORKER_NOT_FOUND"})
            gw.queue_remove(w)
            return self.send(202, {"status": "accepted", "worker_id": w["id"], "message": "Worker removal queued for background processing"})

    return Handler


def metrics_handler(gw):
    class H(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.split("?")[0] != "/metrics":
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()
                return
            body = gw.metrics().encode()
            self.send_response(200)
            self.send_header("content-type", "text/plain; version=0.0.4")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return H


def main(argv, profile, title=None):
    if profile not in PROFILES:
        print("SMG_SIM_PROFILE must be one of %s" % ", ".join(PROFILES), file=sys.stderr)
        return 2
    args = parse_args(argv, profile)
    gw = Gateway(args, profile)
    if title:
        setproctitle(title)
    if profile == "rest-by-uuid-0.3":
        print("WARNING: This copy of sgl-model-gateway is DEPRECATED", file=sys.stderr, flush=True)
    name = "smg" if profile == "smg-1.x" else "sglang-router"
    print("  %s  version %s\n  listening %s:%d\n  mode %s" % (name, gw.version, args.host, args.port,
          "PD" if args.pd_disaggregation else "Regular"), flush=True)
    print("Policy: %s" % args.policy, flush=True)
    urls = [(u, "regular", None) for u in args.worker_urls]
    urls += [(x[0], "prefill", int(x[1]) if len(x) > 1 and x[1] != "none" else None) for x in args.prefill]
    urls += [(x[0], "decode", None) for x in args.decode]
    mode = "PrefillDecode" if args.pd_disaggregation else "Regular"
    gw.log(" INFO", "Starting router on %s:%d | mode: %s | policy: %s | max_payload: 512MB" % (args.host, args.port, mode, args.policy))
    gw.log(" INFO", "Initializing workers for routing mode: %s" % mode)
    for url, kind, bport in urls:
        w = gw.new_worker(url, kind, bport)
        code = None
        deadline = time.time() + 30
        while time.time() < deadline:
            code, _ = gw.check(url)
            if code == 200:
                break
            time.sleep(0.3)
        w["healthy"] = code == 200
        w["status"] = "ready" if code == 200 else "pending"
        if code == 200:
            gw.log(" INFO", "Worker %s is healthy" % url, "src/core/worker_manager.rs:880")
        gw.workers.append(w)
    gw.log(" INFO", "Workers initialized: %d total, %d healthy" % (len(gw.workers), sum(1 for w in gw.workers if w["healthy"])))
    gw.log(" INFO", "Rate limiting is disabled (max_concurrent_requests = -1)")
    if profile in ("legacy-0.1", "rest-by-url-0.2"):
        gw.log(" INFO", "Started health checker for workers with %ds interval" % int(args.health_check_interval_secs))
    gw.log(" INFO", "Router ready | workers: %s" % json.dumps([w["url"] for w in gw.workers]))
    mhost = "127.0.0.1" if args.prometheus_host in ("0.0.0.0", "") else args.prometheus_host
    msrv = ThreadingHTTPServer((mhost, args.prometheus_port), metrics_handler(gw))
    threading.Thread(target=msrv.serve_forever, daemon=True).start()
    gw.log(" INFO", "Metrics server listening on %s:%d (/metrics)" % (mhost, args.prometheus_port))
    threading.Thread(target=gw.health_loop, daemon=True).start()
    host = "127.0.0.1" if args.host in ("0.0.0.0", "") else args.host
    srv = ThreadingHTTPServer((host, args.port), make_handler(gw))
    srv.daemon_threads = True
    gw.log(" INFO", "Starting server on %s:%d" % (args.host, args.port))
    import signal

    def term(*_):
        gw.log(" INFO", "Received terminate signal, starting graceful shutdown")
        threading.Thread(target=srv.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, term)
    signal.signal(signal.SIGINT, term)
    srv.serve_forever()
    return 0
