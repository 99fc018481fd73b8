"""Ending the rental from the node (`--when-done stop|terminate`), by shared/reference/providers.md.

Only the node's own scoped key is used (RunPod's pod key, Vast's per-instance key), only in the environment of
the one command; the exit status and the "stopped" sentence are never trusted: the status words are read back.
Returns {"ok": bool, "provider": ..., "why": ...}. Python 3 stdlib only.
"""
import json, os, subprocess


def node_env():
    """The session's environment, then /etc/rp_environment, /etc/environment, /proc/1/environ."""
    env = {}
    try:
        with open("/proc/1/environ", "rb") as f:
            for kv in f.read().split(b"\0"):
                k, _, v = kv.decode("utf-8", "replace").partition("=")
                if k:
                    env[k] = v
    except OSError:
        pass
    for name in ("/etc/environment", "/etc/rp_environment"):
        try:
            with open(name) as f:
                for line in f:
                    line = line.strip()
                    if line.startswith("export "):
                        line = line[7:]
                    k, sep, v = line.partition("=")
                    if sep and k.replace("_", "").isalnum():
                        env[k] = v.strip().strip("'\"")
        except OSError:
            pass
    env.update(os.environ)
    return env


def run(argv, extra_env, timeout=60):
    env = dict(os.environ)
    env.update(extra_env)
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=timeout,
                           stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as e:
        return 127, "", str(e)
    return r.returncode, r.stdout.decode("utf-8", "replace")[:65536], r.stderr.decode("utf-8", "replace")[:4096]


def runpod(action, env):
    pod = env.get("RUNPOD_POD_ID")
    key = {"RUNPOD_API_KEY": env["RUNPOD_API_KEY"]} if env.get("RUNPOD_API_KEY") else {}
    if action == "stop" and env.get("RUNPOD_VOLUME_ID"):
        return {"ok": False, "provider": "runpod", "why": "a pod with a network volume can only be terminated"}
    v2 = ["runpodctl", "pod", "stop" if action == "stop" else "delete", pod]
    legacy = ["runpodctl", "stop" if action == "stop" else "remove", "pod", pod]
    code, out, err = run(v2, key)
    if code != 0 and "unknown command" in (out + err).lower():
        code, out, err = run(legacy, key)
    # read the status back (before the container dies)
    code2, out2, err2 = run(["runpodctl", "pod", "get", pod], key)
    status = None
    try:
        status = json.loads(out2).get("desiredStatus")
    except (ValueError, AttributeError):
        if "404" in err2:
            status = "GONE"
    ok = status in (("EXITED", "TERMINATED", "GONE") if action == "stop" else ("TERMINATED", "GONE"))
    return {"ok": ok, "provider": "runpod", "status": status, "why": None if ok else "the pod's status is %s" % status}


def vast(action, env):
    inst = env.get("CONTAINER_ID")
    key = {"VAST_API_KEY": env.get("CONTAINER_API_KEY", "")}
    if action == "stop":
        run(["vastai", "stop", "instance", inst], key)
    else:
        run(["vastai", "destroy", "instance", inst, "-y"], key)
    code, out, err = run(["vastai", "show", "instance", inst, "--raw"], key)
    status = None
    try:
        o = json.loads(out)
        if o.get("instances", 0) is None:
            status = "gone"
        else:
            status = o.get("cur_state") if o.get("cur_state") == "unloaded" else o.get("actual_status")
    except (ValueError, AttributeError):
        pass
    ok = status in (("stopped", "gone", "unloaded") if action == "stop" else ("gone", "unloaded"))
    return {"ok": ok, "provider": "vast", "status": status, "why": None if ok else "the instance's status is %s" % status}


def end_rental(action):
    env = node_env()
    if env.get("RUNPOD_POD_ID"):
        return runpod(action, env)
    if env.get("CONTAINER_ID") and env.get("CONTAINER_API_KEY"):
        return vast(action, env)
    return {"ok": False, "provider": None, "why": "no provider this guard can end the rental of (RunPod, Vast.ai)"}
