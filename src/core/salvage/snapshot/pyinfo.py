# The Python facts of a snapshot (snapshotScript.ts runs it with `python -c`, in the server's environment):
# interpreter, distributions, the key packages' versions, first without importing anything, then by importing the
# ones still unknown. Prints one JSON line per state; the caller keeps the last complete one.
import sys, os, re, json
out = {"version": sys.version.split()[0], "executable": sys.executable, "prefix": sys.prefix, "packages": {}, "dists": [], "errors": []}
try:
    import importlib.metadata as md
except Exception:
    md = None
dists = {}
if md is not None:
    try:
        for d in md.distributions():
            try:
                n = d.metadata["Name"]
                if n and d.version:
                    dists.setdefault(re.sub(r"[-_.]+", "-", n).lower(), (n, d.version))
            except Exception:
                pass
    except Exception as e:
        out["errors"].append("importlib.metadata: %s" % e)
else:
    out["errors"].append("importlib.metadata is not available (Python < 3.8)")
out["dists"] = sorted("%s==%s" % v for v in dists.values())[:20000]
try:
    import importlib.util as iu
except Exception:
    iu = None
def locations(mod):
    try:
        spec = iu.find_spec(mod) if iu else None
    except Exception:
        return None
    if spec is None:
        return None
    locs = list(spec.submodule_search_locations or [])
    if not locs and spec.origin:
        locs = [os.path.dirname(spec.origin)]
    return locs
def read_var(locs, files, var):
    pat = re.compile(r"^" + var + r"\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", re.M)
    for l in locs:
        for f in files:
            try:
                with open(os.path.join(l, f), encoding="utf-8", errors="replace") as fh:
                    m = pat.search(fh.read(200000))
                if m:
                    return m.group(1)
            except OSError:
                pass
    return None
UNKNOWN = "installed (version unknown)"
to_import = {}
def version(dist_names, mod):
    for n in dist_names:
        d = dists.get(n)
        if d:
            return d[1]
    locs = locations(mod)
    if locs is None:
        return None
    v = read_var(locs, ("version.py", "_version.py", "__init__.py"), "__version__")
    if v:
        return v
    return UNKNOWN
P = out["packages"]
P["sglang"] = version(["sglang"], "sglang")
P["sgl-kernel"] = version(["sgl-kernel"], "sgl_kernel")
P["torch"] = version(["torch"], "torch")
tl = locations("torch")
P["torch.cuda"] = read_var(tl, ("version.py",), "cuda") if tl else None
P["flashinfer"] = version(["flashinfer-python", "flashinfer"], "flashinfer")
P["transformers"] = version(["transformers"], "transformers")
P["vllm"] = version(["vllm"], "vllm")
P["triton"] = version(["triton", "pytorch-triton"], "triton")
P["flash-attn"] = version(["flash-attn"], "flash_attn")
P["xgrammar"] = version(["xgrammar"], "xgrammar")
for k, (n, v) in sorted(dists.items()):
    if k.startswith("nvidia-") or k in ("cuda-python", "cuda-bindings") or k.startswith("cupy-"):
        P[k] = v
# Everything known without importing anything is printed first; the caller takes the last complete line,
# so an import that hangs (killed by timeout) or crashes costs only its own version.
sys.stdout.write(json.dumps(out) + "\n")
sys.stdout.flush()
MODS = {"sglang": "sglang", "sgl-kernel": "sgl_kernel", "flashinfer": "flashinfer", "xgrammar": "xgrammar"}
changed = False
for key, mod in MODS.items():
    if P.get(key) != UNKNOWN:
        continue
    try:
        m = __import__(mod)
        v = getattr(m, "__version__", None)
        if v:
            P[key] = str(v)
            changed = True
    except BaseException as e:
        out["errors"].append("import %s: %s" % (mod, str(e)[:200]))
        changed = True
if changed:
    sys.stdout.write("\n" + json.dumps(out) + "\n")
