#!/usr/bin/env python3
"""Generate thinking-mode completions for every prompt with the SGLang servers on this node.

Prompts are spread over the {{GPU_COUNT}} servers (ports {{FIRST_PORT}}..{{LAST_PORT}}) with a fixed
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
# the writer of the demo node's home (src/sim/homeScripts.ts) replaces these two lines with the node's own
SERVERS = ["http://127.0.0.1:%d" % p for p in range(30000, 30001)]
MODEL = "default"
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
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    if not no_upload:
        from s3_utils import upload_file
        upload_file(path, "completions/" + os.path.basename(path))
    with open(os.path.join(OUT, ".done_indices"), "a") as f:
        f.writelines("%d\n" % r["index"] for r in rows)
    log.info("wrote %s (%d rows)", os.path.basename(path), len(rows))


def write_progress(stats, total, elapsed, status):
    tmp = os.path.join(OUT, "progress.json.tmp")
    with open(tmp, "w") as f:
        json.dump(dict(stats, total=total, elapsed_s=round(elapsed), status=status), f, indent=2)
    os.replace(tmp, os.path.join(OUT, "progress.json"))


if __name__ == "__main__":
    main()
