/**
 * The node-side snapshot script: POSIX sh on stdin with nonce-delimited sections, each bounded, missing tools recorded as errors.
 */
import { hostFactsScript } from '../node/hostFacts';
import { shPidLive } from '../remote/pidLive';
import { sectionPrologue } from '../remote/sections';
import { shq } from '../util/quote';
import { SNAPSHOT_LIMITS } from './snapshotTypes';

const PY_INFO = String.raw`
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
`;

/** Environment variables of the server copied into the shell that runs its Python (same packages). */
const PY_ENV_VARS = ['PYTHONPATH', 'PYTHONHOME', 'PYTHONUSERBASE', 'PYTHONNOUSERSITE', 'VIRTUAL_ENV', 'CONDA_PREFIX'];

export function buildSnapshotScript(nonce: string, serverPids: number[]): string {
  const pids = serverPids.filter((p) => Number.isInteger(p) && p > 0).map((p) => String(p));
  const L = SNAPSHOT_LIMITS;
  return `
${sectionPrologue(nonce)}
export LC_ALL=C
have() { command -v "$1" >/dev/null 2>&1; }
T=$(mktemp -d 2>/dev/null || { mkdir -p "/tmp/gs.$$" && echo "/tmp/gs.$$"; })
TO60=""; TO30=""
if have timeout; then TO60="timeout 60"; TO30="timeout 30"; fi
getenv() { [ -r "/proc/$1/environ" ] && tr '\\000' '\\n' < "/proc/$1/environ" 2>/dev/null | grep -m1 "^$2=" | cut -d= -f2-; }
pyenv_from() {
  [ -n "$1" ] || return 0
  # \`python -m\` puts the working directory on sys.path: run where the server runs.
  c=$(readlink "/proc/$1/cwd" 2>/dev/null) && [ -n "$c" ] && cd "$c" 2>/dev/null
  [ -r "/proc/$1/environ" ] || return 0
  for v in ${PY_ENV_VARS.join(' ')}; do
    val=$(getenv "$1" "$v")
    if [ -n "$val" ]; then export "$v=$val"; else unset "$v"; fi
  done
}
ispy() { case "\${1##*/}" in python|python[0-9]*|pypy*) return 0;; esac; return 1; }
pyfor() {
  p=$1
  a0=$(head -c 4096 "/proc/$p/cmdline" 2>/dev/null | tr '\\000' '\\n' | head -n 1)
  r=""
  case "$a0" in
    '') ;;
    /*) r=$a0 ;;
    */*) r="$(readlink "/proc/$p/cwd" 2>/dev/null)/$a0" ;;
    *) pp=$(getenv "$p" PATH); r=$( [ -n "$pp" ] && PATH=$pp; command -v "$a0" 2>/dev/null ) ;;
  esac
  if [ -n "$r" ] && [ -x "$r" ] && [ -f "$r" ]; then
    if ispy "$r"; then printf '%s' "$r"; return; fi
    # A console script (sglang serve): its shebang names the interpreter.
    sb=$(head -c 512 "$r" 2>/dev/null | head -n 1)
    case "$sb" in
      '#!'*) i=\${sb#??}; set -- $i
        if [ "\${1##*/}" = env ]; then
          [ "$2" = "-S" ] && shift; i=$( pp=$(getenv "$p" PATH); [ -n "$pp" ] && PATH=$pp; command -v "$2" 2>/dev/null )
        else i=$1; fi
        if [ -n "$i" ] && ispy "$i"; then printf '%s' "$i"; return; fi ;;
    esac
  fi
  readlink "/proc/$p/exe" 2>/dev/null
}
( if have nvidia-smi; then $TO30 nvidia-smi -q >"$T/q" 2>&1; echo $? >"$T/qrc"; else echo "nvidia-smi: command not found" >"$T/q"; echo 127 >"$T/qrc"; fi ) &
( if have nvidia-smi; then $TO30 nvidia-smi topo -m >"$T/t" 2>&1; echo $? >"$T/trc"; fi ) &
sec tools; for x in nvidia-smi timeout lscpu nvcc df python3; do have "$x" && echo "$x"; done
${hostFactsScript(L.small)}
sec lscpu; lscpu 2>/dev/null | head -c ${L.small}
sec disks; df -kP 2>/dev/null | head -c ${L.small}
sec nvcc; if have nvcc; then nvcc --version 2>&1 | head -c 4096
elif [ -x /usr/local/cuda/bin/nvcc ]; then /usr/local/cuda/bin/nvcc --version 2>&1 | head -c 4096; fi
SP=${pids.length ? pids[0] : '""'}
PY=""
if [ -n "$SP" ] && [ -d "/proc/$SP" ]; then PY=$(pyfor "$SP"); ispy "$PY" || PY=""; fi
[ -n "$PY" ] || PY=$(command -v python3 2>/dev/null)
[ -n "$PY" ] || PY=$(command -v python 2>/dev/null)
sec python; printf '%s' "$PY"
sec pyinfo
if [ -n "$PY" ]; then ( pyenv_from "$SP"; $TO60 "$PY" -c ${shq(PY_INFO)} 2>"$T/pye" | head -c ${L.pyInfo}; echo $? >"$T/pyrc" ); fi
sec pyinfoerr; head -c 4096 "$T/pye" 2>/dev/null
sec pipfreeze
if [ -n "$PY" ]; then
  ( pyenv_from "$SP"; PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 $TO60 "$PY" -m pip freeze --all >"$T/pf" 2>"$T/pfe"; echo $? >"$T/pfrc" )
  head -c ${L.pipFreeze} "$T/pf" 2>/dev/null
fi
sec pipfreezerc; cat "$T/pfrc" 2>/dev/null
sec pipfreezeerr; head -c 4096 "$T/pfe" 2>/dev/null
${pids
  .map(
    (p) => `sec srv:${p}:alive; ${shPidLive(Number(p))} && echo yes
sec srv:${p}:cmdline; head -c ${L.cmdline} /proc/${p}/cmdline 2>/dev/null
sec srv:${p}:environ; head -c ${L.environ} /proc/${p}/environ 2>/dev/null
sec srv:${p}:cwd; readlink /proc/${p}/cwd 2>/dev/null
sec srv:${p}:exe; readlink /proc/${p}/exe 2>/dev/null
sec srv:${p}:python; ${shPidLive(Number(p))} && pyfor ${p}`,
  )
  .join('\n')}
wait
sec smiq; head -c ${L.smiQ} "$T/q" 2>/dev/null
sec smiqrc; cat "$T/qrc" 2>/dev/null
sec topo; head -c ${L.topology} "$T/t" 2>/dev/null
sec toporc; cat "$T/trc" 2>/dev/null
rm -rf "$T"
sec end
`;
}

// ------------------------------------------------------------------------------------ parsing
