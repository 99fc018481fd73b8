"""What salvage needs of the node guard, read only: nothing is written, no folder is made.

Fed on stdin by the client with a PAYLOAD line first (`python3 -`); answers one `@@<nonce>@@ {json}` line:
whether a guard was set up and runs, its `--to` folder (resolved, so salvage never lists the copy), its S3 place,
and the files it verified there (path, size, mtime, sha256), for the client to check in S3 itself.
"""
import base64, json, os, sys

GUARD_DIR = os.path.join(os.path.expanduser("~"), ".gpu-sessions", "guard")


def read_json(name, default):
    try:
        fd = os.open(os.path.join(GUARD_DIR, name), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


def running(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = f.read().split(b"\0")
    except (OSError, ValueError, TypeError):
        return False
    return any(a.endswith(b"guard.py") for a in argv) and b"run" in argv


def seen(limit):
    cfg = read_json("config.json", None)
    if not isinstance(cfg, dict):
        return {"guard": False}
    st = read_json("state.json", {})
    pid = st.get("pid") if isinstance(st, dict) else None
    out = {"guard": True, "running": isinstance(pid, int) and pid > 0 and running(pid), "to": None, "s3": None,
           "verified": [], "more": 0}
    to = cfg.get("to")
    s3 = cfg.get("s3") if isinstance(cfg.get("s3"), dict) else None
    if isinstance(to, str) and to:
        out["to"] = os.path.realpath(os.path.expanduser(to))
        return out
    if not s3:
        return out
    settings = cfg.get("settings") if isinstance(cfg.get("settings"), dict) else {}
    out["s3"] = {"bucket": s3.get("bucket"), "prefix": s3.get("prefix"), "endpoint": settings.get("s3Endpoint")}
    target = "s3://%s/%s" % (s3.get("bucket"), s3.get("prefix"))
    verified = read_json("verified.json", {})
    rows = []
    for path, v in (verified.items() if isinstance(verified, dict) else []):
        if isinstance(v, dict) and v.get("target") == target:
            rows.append([path, v.get("size"), v.get("mtime"), v.get("sha256"), v.get("at")])
    out["more"] = max(0, len(rows) - limit)
    out["verified"] = rows[:limit]
    return out


def main():
    payload = json.loads(base64.b64decode(globals()["PAYLOAD"]).decode("utf-8"))
    res = seen(int(payload.get("limit", 200000)))
    sys.stdout.write("@@%s@@ %s\n" % (payload["nonce"], json.dumps(res, ensure_ascii=True)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
