/**
 * The environment snapshot of a node, for salvage ("save environment notes" before a node is shut
 * down): GPUs (`nvidia-smi -q`, topology), driver/CUDA, CPU/RAM/disks, OS/kernel, the Python of the
 * SGLang servers with `pip freeze` and the key packages, each server's exact argv, environment and
 * working directory, its /server_info and /metrics, and how the node was reached over SSH.
 *
 * Gathered in ONE exec: a POSIX sh script on stdin (`sh -s`) like the probe, with nonce-delimited
 * sections, every section bounded in size, missing tools recorded as errors (never fatal). Then the
 * servers' HTTP endpoints are read through the pooled SSH connection. Everything is redacted before it
 * leaves this module: argv, environment, server info, metrics, free text, pip freeze lines.
 */
import { errorMessage } from '../util/errors';
import { fetchServerInfo, httpGet, metricsSummary, parseMetrics } from '../sglang/endpoints';
import type { RemoteOperation } from '../remote/operation';
import { runOperation } from '../remote/operation';
import { GpuState, classifySmiFailure } from '../node/nvidiaSmi';
import { parseFlags, sglangLaunchIndex } from '../sglang/serverArgv';
import { DiskInfo, parseDf } from '../node/probe';
import { hostFactsScript, parseHostFacts } from '../node/hostFacts';
import { firstLine, sectionPrologue, sectionedOperation, splitSections } from '../remote/sections';
import { shq } from '../remote/quote';
import { REDACTED, isSecretName, redactArgv, redactEnv, redactText, redactValue, scrubKnownSecrets } from '../util/redact';
import type { Transport } from '../ssh/transport';
import { mdFence, mdText } from '../util/terminal';

export interface SmiQGpu {
  /** PCI bus id, the `GPU 00000000:1B:00.0` heading of `nvidia-smi -q`. */
  busId: string;
  name: string | null;
  uuid: string | null;
  serial: string | null;
  vbios: string | null;
  architecture: string | null;
  persistenceMode: string | null;
  memoryTotalMiB: number | null;
  memoryUsedMiB: number | null;
}

export interface SnapshotServer {
  pid: number;
  port: number;
  host: string;
  /** Full argv from /proc/PID/cmdline, redacted. */
  argv: string[];
  /** From /proc/PID/environ, redacted. */
  env: Record<string, string>;
  cwd: string | null;
  /** The interpreter that runs it (venv-aware: argv[0] resolved on the process's PATH, else /proc/PID/exe). */
  python: string | null;
  /** readlink /proc/PID/exe. */
  exe: string | null;
  /** The process existed when the snapshot was taken. */
  alive: boolean;
}

export interface EnvSnapshot {
  takenAt: string;
  node: string;
  ssh: {
    host?: string;
    port?: number;
    user?: string;
    hostKeyFingerprint?: string;
    hostKeyType?: string;
    proxyJump?: string;
    transport?: string;
  };
  hostname: string | null;
  os: string | null;
  kernel: string | null;
  uptimeS: number | null;
  cpu: { model: string | null; cores: number | null; sockets: number | null; threadsPerCore: number | null; numaNodes: number | null };
  memory: { totalKiB: number | null; availableKiB: number | null; swapTotalKiB: number | null };
  disks: DiskInfo[];
  gpus: {
    /** `nvidia-smi -q`, raw (redacted). */
    smiQ: string;
    /** `nvidia-smi topo -m`, raw without terminal colour codes. */
    topology: string;
    driverVersion: string | null;
    cudaVersion: string | null;
    gpuState: GpuState;
    gpuMessage: string | null;
    /** Parsed from `nvidia-smi -q`. */
    devices: SmiQGpu[];
    /** `nvcc --version` release line, when a CUDA toolkit is on PATH. */
    nvcc: string | null;
  };
  python: { version: string | null; executable: string | null; prefix: string | null };
  pipFreeze: string[];
  /** Where pipFreeze came from: `pip freeze`, or importlib.metadata when pip is missing. */
  pipFreezeSource: 'pip' | 'importlib.metadata' | null;
  /** sglang, sgl-kernel, torch, torch.cuda, flashinfer, transformers, vllm, triton, flash-attn, xgrammar, nvidia-* CUDA libraries. */
  keyPackages: Record<string, string | null>;
  servers: SnapshotServer[];
  /** Per port: /server_info (or /get_server_info), redacted. */
  serverInfo: Record<string, unknown>;
  /** Per port: raw /metrics text, redacted. */
  metrics: Record<string, string>;
  errors: string[];
}

export type SnapshotCore = Omit<EnvSnapshot, 'ssh' | 'serverInfo' | 'metrics'>;

/** Size limits of the sections (bytes). */
export const SNAPSHOT_LIMITS = {
  smiQ: 4 * 1024 * 1024,
  topology: 256 * 1024,
  pipFreeze: 1024 * 1024,
  pyInfo: 2 * 1024 * 1024,
  cmdline: 64 * 1024,
  environ: 256 * 1024,
  small: 64 * 1024,
} as const;

export const KEY_PACKAGES = [
  'sglang',
  'sgl-kernel',
  'torch',
  'torch.cuda',
  'flashinfer',
  'transformers',
  'vllm',
  'triton',
  'flash-attn',
  'xgrammar',
];

/**
 * Run by the node's Python: version, executable, prefix, every installed distribution (the pip freeze
 * fallback) and the key packages' versions — from distribution metadata, else from the package's source
 * (`__version__ = "..."`), else (light packages only) by importing it. Prints one JSON line.
 */
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
        if [ "\${1##*/}" = env ]; then [ "$2" = "-S" ] && shift; i=$( pp=$(getenv "$p" PATH); [ -n "$pp" ] && PATH=$pp; command -v "$2" 2>/dev/null ); else i=$1; fi
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
sec nvcc; if have nvcc; then nvcc --version 2>&1 | head -c 4096; elif [ -x /usr/local/cuda/bin/nvcc ]; then /usr/local/cuda/bin/nvcc --version 2>&1 | head -c 4096; fi
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
if [ -n "$PY" ]; then ( pyenv_from "$SP"; PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 $TO60 "$PY" -m pip freeze --all >"$T/pf" 2>"$T/pfe"; echo $? >"$T/pfrc" ); head -c ${L.pipFreeze} "$T/pf" 2>/dev/null; fi
sec pipfreezerc; cat "$T/pfrc" 2>/dev/null
sec pipfreezeerr; head -c 4096 "$T/pfe" 2>/dev/null
${pids
  .map(
    (p) => `sec srv:${p}:alive; [ -d /proc/${p} ] && echo yes
sec srv:${p}:cmdline; head -c ${L.cmdline} /proc/${p}/cmdline 2>/dev/null
sec srv:${p}:environ; head -c ${L.environ} /proc/${p}/environ 2>/dev/null
sec srv:${p}:cwd; readlink /proc/${p}/cwd 2>/dev/null
sec srv:${p}:exe; readlink /proc/${p}/exe 2>/dev/null
sec srv:${p}:python; [ -d /proc/${p} ] && pyfor ${p}`,
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

function intOrNull(s: string | undefined | null): number | null {
  if (s === undefined || s === null) return null;
  const t = s.trim();
  if (!/^-?\d+$/.test(t)) return null;
  return Number(t);
}

/** `nvidia-smi -q`: driver and CUDA versions and one entry per `GPU <bus id>` block. */
export function parseSmiQ(text: string): {
  driverVersion: string | null;
  cudaVersion: string | null;
  attachedGpus: number | null;
  gpus: SmiQGpu[];
} {
  const gpus: SmiQGpu[] = [];
  let driverVersion: string | null = null;
  let cudaVersion: string | null = null;
  let attached: number | null = null;
  let cur: SmiQGpu | null = null;
  let section = '';
  for (const raw of text.split(/\r?\n/)) {
    const head = /^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$/.exec(raw);
    if (head) {
      cur = {
        busId: head[1],
        name: null,
        uuid: null,
        serial: null,
        vbios: null,
        architecture: null,
        persistenceMode: null,
        memoryTotalMiB: null,
        memoryUsedMiB: null,
      };
      gpus.push(cur);
      section = '';
      continue;
    }
    const indent = raw.length - raw.trimStart().length;
    const kv = /^\s*([^:]+?)\s*:\s?(.*)$/.exec(raw);
    if (!kv) {
      if (raw.trim() && indent > 0 && indent <= 4) section = raw.trim();
      continue;
    }
    const key = kv[1].trim();
    const value = kv[2].trim();
    if (!cur) {
      if (/^Driver Version$/i.test(key)) driverVersion = value || null;
      else if (/^CUDA(?: Driver| UMD)? Version$/i.test(key)) cudaVersion = value || null;
      else if (/^Attached GPUs$/i.test(key)) attached = intOrNull(value);
      continue;
    }
    if (indent <= 4) {
      section = '';
      switch (key) {
        case 'Product Name':
          cur.name = value || null;
          break;
        case 'GPU UUID':
          cur.uuid = value || null;
          break;
        case 'Serial Number':
          cur.serial = value || null;
          break;
        case 'VBIOS Version':
          cur.vbios = value || null;
          break;
        case 'Product Architecture':
          cur.architecture = value || null;
          break;
        case 'Persistence Mode':
          cur.persistenceMode = value || null;
          break;
      }
    } else if (/^FB Memory Usage$/i.test(section)) {
      const mib = /^(\d+)\s*MiB$/i.exec(value);
      if (key === 'Total') cur.memoryTotalMiB = mib ? Number(mib[1]) : null;
      if (key === 'Used') cur.memoryUsedMiB = mib ? Number(mib[1]) : null;
    }
  }
  return { driverVersion, cudaVersion, attachedGpus: attached, gpus };
}

/** NUL-separated /proc/PID/environ → object (the first `=` separates; entries without one are skipped). */
export function parseEnviron(raw: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of raw.split('\0')) {
    const eq = e.indexOf('=');
    if (eq <= 0) continue;
    const k = e.slice(0, eq);
    if (!(k in env)) env[k] = e.slice(eq + 1);
  }
  return env;
}

function parseCmdline(raw: string): string[] {
  const parts = raw.split('\0');
  if (parts.length && parts[parts.length - 1] === '') parts.pop();
  return parts;
}

/** Secret values found by name (env values, secret flag values), kept only in memory to scrub their repeats. */
function secretValues(argv: string[], env: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(env)) if (isSecretName(k) && v) out.push(v);
  for (let i = 0; i < argv.length; i++) {
    const m = /^(--?[A-Za-z][A-Za-z0-9_.-]*)(?:=([\s\S]*))?$/.exec(argv[i]);
    if (!m || !isSecretName(m[1])) continue;
    if (m[2] !== undefined) out.push(m[2]);
    else if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) out.push(argv[i + 1]);
  }
  // Repeats are scrubbed everywhere, so skip what would wipe ordinary text: short values, paths, placeholders.
  return out.filter(
    (s) =>
      s.length >= 8 && !/^(~|\.{0,2})\/[A-Za-z0-9_./-]*$/.test(s) && !/^\$\{?[A-Za-z_]/.test(s) && !/^(none|null|true|false)$/i.test(s),
  );
}

/** In-memory only: raw secrets of a parsed snapshot and API keys of its servers (never serialised). */
const RAW_SECRETS = new WeakMap<object, string[]>();
const API_KEYS = new WeakMap<object, string>();

function apiKeyOf(argv: string[]): string | undefined {
  const at = sglangLaunchIndex(argv);
  const flags = parseFlags(at >= 0 ? argv.slice(at) : argv);
  const k = flags['api-key'];
  return typeof k === 'string' && k ? k : undefined;
}

/** pip freeze lines: `pkg @ git+https://user:token@host/...` and index URLs lose their credentials. */
function redactPipLine(l: string): string {
  return redactText(l).replace(/(:\/\/)([^\s:@/]{12,})@/g, `$1${REDACTED}@`);
}

export function parseSnapshotOutput(nodeName: string, text: string, nonce: string, serverPids: number[]): SnapshotCore {
  const s = splitSections(text, nonce);
  const errors: string[] = [];
  const tools = new Set(
    (s.get('tools') ?? '')
      .split('\n')
      .map((x) => x.trim())
      .filter(Boolean),
  );

  const host = parseHostFacts((k) => s.get(k));
  const lscpu = s.get('lscpu') ?? '';
  const lsField = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'm').exec(lscpu)?.[1]?.trim() ?? null;

  // GPUs
  const smiQ = (s.get('smiq') ?? '').replace(/\s+$/, '');
  const qrc = intOrNull(firstLine(s.get('smiqrc')));
  const q = parseSmiQ(smiQ);
  let gpuState: GpuState = 'ok';
  let gpuMessage: string | null = null;
  if (qrc !== 0) {
    const c = classifySmiFailure(qrc, smiQ);
    gpuState = c.state;
    gpuMessage = qrc === 124 ? 'nvidia-smi -q did not finish within 30 s (a hung GPU or driver?).' : c.message;
    errors.push(`nvidia-smi -q: ${gpuMessage}`);
  } else if (q.gpus.length === 0) {
    gpuState = 'no-gpu';
    gpuMessage = 'nvidia-smi -q listed no GPU.';
  }

  const topology = (s.get('topo') ?? '').replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replace(/\s+$/, '');
  const trc = intOrNull(firstLine(s.get('toporc')));
  if (tools.has('nvidia-smi') && trc !== 0) errors.push(`nvidia-smi topo -m failed (exit ${trc ?? '?'}): ${firstLine(topology) ?? ''}`);
  const nvccText = s.get('nvcc') ?? '';
  const nvcc = /release\s+([^\n]+)/.exec(nvccText)?.[1]?.trim() ?? null;

  // Python
  const pyPath = (s.get('python') ?? '').trim() || null;
  let pyInfo: {
    version?: string;
    executable?: string;
    prefix?: string;
    packages?: Record<string, string | null>;
    dists?: string[];
    errors?: string[];
  } = {};
  if (!pyPath) {
    errors.push('No Python interpreter found (no SGLang server interpreter, no python3 on PATH).');
  } else {
    // The last complete JSON line (a later one adds versions found by importing).
    let parsed = false;
    for (const l of (s.get('pyinfo') ?? '').split('\n').reverse()) {
      if (!l.trim().startsWith('{')) continue;
      try {
        pyInfo = JSON.parse(l);
        parsed = true;
        break;
      } catch {
        /* cut off: try the previous line */
      }
    }
    if (!parsed) {
      const err = (s.get('pyinfoerr') ?? '')
        .split('\n')
        .filter((l) => l.trim())
        .slice(-1)[0];
      errors.push(`${pyPath} could not report its version and packages${err ? `: ${err.trim()}` : ''}.`);
    }
    for (const e of pyInfo.errors ?? []) errors.push(`python: ${e}`);
  }
  const keyPackages: Record<string, string | null> = {};
  for (const k of KEY_PACKAGES) keyPackages[k] = pyInfo.packages?.[k] ?? null;
  for (const [k, v] of Object.entries(pyInfo.packages ?? {})) if (!(k in keyPackages)) keyPackages[k] = v ?? null;

  let pipFreeze: string[] = [];
  let pipFreezeSource: SnapshotCore['pipFreezeSource'] = null;
  const pfrc = intOrNull(firstLine(s.get('pipfreezerc')));
  if (pyPath) {
    if (pfrc === 0) {
      pipFreeze = (s.get('pipfreeze') ?? '')
        .split('\n')
        .map((l) => l.trim())
        .filter(Boolean);
      pipFreezeSource = 'pip';
    } else {
      const why =
        pfrc === 124
          ? 'timed out after 60 s'
          : (firstLine(
              (s.get('pipfreezeerr') ?? '')
                .split('\n')
                .filter((l) => l.trim())
                .slice(-1)[0],
            ) ?? `exit ${pfrc ?? '?'}`);
      errors.push(
        `pip freeze failed with ${pyPath} (${why})${pyInfo.dists?.length ? '; the package list comes from importlib.metadata' : ''}.`,
      );
      if (pyInfo.dists?.length) {
        pipFreeze = pyInfo.dists;
        pipFreezeSource = 'importlib.metadata';
      }
    }
  }
  pipFreeze = pipFreeze.map(redactPipLine);

  // Servers
  const rawSecrets: string[] = [];
  const servers: SnapshotServer[] = [];
  const apiKeys: Array<[SnapshotServer, string]> = [];
  for (const pid of serverPids.filter((p) => Number.isInteger(p) && p > 0)) {
    const alive = (s.get(`srv:${pid}:alive`) ?? '').trim() === 'yes';
    const argvRaw = parseCmdline(s.get(`srv:${pid}:cmdline`) ?? '');
    const envRaw = parseEnviron(s.get(`srv:${pid}:environ`) ?? '');
    if (!alive) errors.push(`Server pid ${pid}: no such process (it exited before the snapshot).`);
    else if (argvRaw.length === 0) errors.push(`Server pid ${pid}: /proc/${pid}/cmdline is not readable.`);
    if (alive && Object.keys(envRaw).length === 0)
      errors.push(`Server pid ${pid}: /proc/${pid}/environ is not readable (another user's process?).`);
    rawSecrets.push(...secretValues(argvRaw, envRaw));
    const at = sglangLaunchIndex(argvRaw);
    const flags = parseFlags(at >= 0 ? argvRaw.slice(at) : argvRaw);
    const port = intOrNull(typeof flags.port === 'string' ? flags.port : null) ?? 30000;
    const server: SnapshotServer = {
      pid,
      port,
      host: typeof flags.host === 'string' ? flags.host : '127.0.0.1',
      argv: redactArgv(argvRaw),
      env: redactEnv(envRaw),
      cwd: (s.get(`srv:${pid}:cwd`) ?? '').trim() || null,
      python: (s.get(`srv:${pid}:python`) ?? '').trim() || null,
      exe: (s.get(`srv:${pid}:exe`) ?? '').trim() || null,
      alive,
    };
    const key = apiKeyOf(argvRaw);
    if (key) apiKeys.push([server, key]);
    servers.push(server);
  }

  const core: SnapshotCore = {
    takenAt: new Date().toISOString(),
    node: nodeName,
    hostname: host.hostname,
    os: host.os,
    kernel: host.kernel,
    uptimeS: host.uptimeS,
    cpu: {
      model: host.cpuModel ?? lsField('Model name'),
      cores: host.cpuCores ?? intOrNull(lsField('CPU\\(s\\)')),
      sockets: intOrNull(lsField('Socket\\(s\\)')),
      threadsPerCore: intOrNull(lsField('Thread\\(s\\) per core')),
      numaNodes: intOrNull(lsField('NUMA node\\(s\\)')),
    },
    memory: { totalKiB: host.memTotalKiB, availableKiB: host.memAvailableKiB, swapTotalKiB: host.swapTotalKiB },
    disks: parseDf(s.get('disks') ?? ''),
    gpus: {
      smiQ: redactText(smiQ),
      topology: redactText(topology),
      driverVersion: q.driverVersion,
      cudaVersion: q.cudaVersion,
      gpuState,
      gpuMessage,
      devices: q.gpus,
      nvcc,
    },
    python: { version: pyInfo.version ?? null, executable: pyInfo.executable ?? pyPath, prefix: pyInfo.prefix ?? null },
    pipFreeze,
    pipFreezeSource,
    keyPackages,
    servers,
    errors: errors.map(redactText),
  };
  const scrubbed = scrubKnownSecrets(core, rawSecrets);
  RAW_SECRETS.set(scrubbed, rawSecrets);
  scrubbed.servers.forEach((srv, i) => {
    const k = apiKeys.find(([orig]) => orig === servers[i])?.[1];
    if (k) API_KEYS.set(srv, k);
  });
  return scrubbed;
}

/**
 * The snapshot's remote part as a remote-operation description: ONE exec of a POSIX sh script fed on
 * stdin. `serverPids`: the SGLang servers to record (argv, environment, cwd, interpreter); the first
 * one's interpreter is the Python whose packages are listed (else python3 on PATH).
 */
export function snapshotOperation(nodeName: string, serverPids: number[]): RemoteOperation<SnapshotCore> {
  return sectionedOperation({
    name: 'snapshot',
    what: 'The environment snapshot',
    node: nodeName,
    script: (nonce) => buildSnapshotScript(nonce, serverPids),
    parse: (text, nonce) => parseSnapshotOutput(nodeName, text, nonce, serverPids),
    timeoutMs: 180_000,
    maxOutputBytes: 64 * 1024 * 1024,
    cleanStderr: redactText,
  });
}

function sshDetails(t: Transport): EnvSnapshot['ssh'] {
  const d = t.describe();
  const str = (k: string) => (typeof d[k] === 'string' && d[k] !== '' ? (d[k] as string) : undefined);
  const out: EnvSnapshot['ssh'] = {};
  if (str('host')) out.host = str('host');
  if (typeof d.port === 'number') out.port = d.port;
  if (str('user')) out.user = str('user');
  if (str('hostKeyFingerprint')) out.hostKeyFingerprint = str('hostKeyFingerprint');
  if (str('hostKeyType')) out.hostKeyType = str('hostKeyType');
  if (str('proxyJump')) out.proxyJump = str('proxyJump');
  if (str('transport')) out.transport = str('transport');
  return out;
}

/**
 * The whole snapshot: the remote script, then /server_info and /metrics of every server through the
 * pooled connection, SSH details from the transport. Everything is redacted; repeats of secret values
 * found by name (environment, --api-key) are scrubbed wherever they appear.
 */
export async function takeSnapshot(
  t: Transport,
  nodeName: string,
  servers: Array<{ pid: number; port: number; host: string; enableMetrics?: boolean }>,
): Promise<EnvSnapshot> {
  const core = await runOperation(
    t,
    snapshotOperation(
      nodeName,
      servers.map((s) => s.pid),
    ),
  );
  const rawSecrets = RAW_SECRETS.get(core) ?? [];
  const errors = [...core.errors];
  for (const srv of core.servers) {
    const given = servers.find((x) => x.pid === srv.pid);
    if (given) {
      srv.port = given.port;
      srv.host = given.host;
    }
  }
  const serverInfo: Record<string, unknown> = {};
  const metrics: Record<string, string> = {};
  const seen = new Set<number>();
  await Promise.all(
    servers.map(async (given) => {
      if (seen.has(given.port)) return;
      seen.add(given.port);
      const srv = core.servers.find((x) => x.pid === given.pid);
      const apiKey = srv ? API_KEYS.get(srv) : undefined;
      const info = await fetchServerInfo(t, given.host, given.port, { apiKey });
      if (info.info) serverInfo[String(given.port)] = redactValue(info.info);
      else errors.push(`Server info of port ${given.port}: ${info.error ?? 'no answer'}`);
      const wantMetrics = given.enableMetrics ?? (srv ? srv.argv.includes('--enable-metrics') : true);
      if (!wantMetrics) return;
      try {
        const r = await httpGet(t, given.host, given.port, '/metrics', { timeoutMs: 15_000, maxBytes: 4 * 1024 * 1024 });
        if (r.status === 200) metrics[String(given.port)] = redactText(r.body) + (r.truncated ? '\n# [truncated at 4 MiB]\n' : '');
        else
          errors.push(`Metrics of port ${given.port}: HTTP ${r.status}${r.status === 404 ? ' (launched without --enable-metrics?)' : ''}`);
      } catch (e) {
        errors.push(`Metrics of port ${given.port}: ${errorMessage(e)}`);
      }
    }),
  );
  const snap: EnvSnapshot = {
    takenAt: core.takenAt,
    node: core.node,
    ssh: sshDetails(t),
    hostname: core.hostname,
    os: core.os,
    kernel: core.kernel,
    uptimeS: core.uptimeS,
    cpu: core.cpu,
    memory: core.memory,
    disks: core.disks,
    gpus: core.gpus,
    python: core.python,
    pipFreeze: core.pipFreeze,
    pipFreezeSource: core.pipFreezeSource,
    keyPackages: core.keyPackages,
    servers: core.servers,
    serverInfo: sortKeys(serverInfo),
    metrics: sortKeys(metrics),
    errors: errors.map(redactText),
  };
  return scrubKnownSecrets(snap, rawSecrets);
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => Number(a) - Number(b) || (a < b ? -1 : a > b ? 1 : 0)));
}

// ------------------------------------------------------------------------------------ markdown

const fence = mdFence;

function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '—';
  return mdText(String(v));
}

function table(head: string[], rows: unknown[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join(
    '\n',
  );
}

function kib(n: number | null): string | null {
  if (n === null || !Number.isFinite(n)) return null;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

function shWord(a: string): string {
  return shq(a);
}

/** argv as a readable shell command: one `--flag value` per line. */
export function renderCommand(argv: string[], envPrefix: Record<string, string> = {}): string {
  const prefix = Object.entries(envPrefix).map(([k, v]) => `${k}=${shWord(v)}`);
  const firstFlag = argv.findIndex((a, i) => i > 0 && a.startsWith('--'));
  const head = (firstFlag < 0 ? argv : argv.slice(0, firstFlag)).map(shWord);
  const lines = [[...prefix, ...head].join(' ')];
  if (firstFlag >= 0) {
    const rest = argv.slice(firstFlag);
    for (let i = 0; i < rest.length; i++) {
      const a = rest[i];
      if (a.startsWith('--') && !a.includes('=') && rest[i + 1] !== undefined && !rest[i + 1].startsWith('--')) {
        lines.push(`  ${shWord(a)} ${shWord(rest[i + 1])}`);
        i++;
      } else lines.push(`  ${shWord(a)}`);
    }
  }
  return lines.join(' \\\n');
}

const NOTABLE_ENV =
  /^(CUDA_|NCCL_|SGLANG_|HF_|HUGGING|TRANSFORMERS_|TORCH|TRITON_|FLASHINFER_|VIRTUAL_ENV$|CONDA_PREFIX$|PYTHONPATH$|LD_LIBRARY_PATH$|PATH$|OMP_NUM_THREADS$|NVIDIA_|VLLM_|UCX_|GLOO_|MASTER_)/;

export function renderSnapshotMarkdown(s: EnvSnapshot): string {
  const out: string[] = [];
  const gpuNames = new Map<string, number>();
  for (const g of s.gpus.devices) gpuNames.set(g.name ?? 'unknown GPU', (gpuNames.get(g.name ?? 'unknown GPU') ?? 0) + 1);
  const gpuSummary = [...gpuNames.entries()].map(([n, c]) => `${c}× ${n}`).join(', ') || (s.gpus.gpuMessage ?? 'none');
  const kp = s.keyPackages;

  // Every string from the node goes through mdText (escaped text), fence() (code) or cell() (table cells).
  const t = (v: string | null | undefined, dflt: string) => (v === null || v === undefined ? dflt : mdText(v));
  out.push(`# Environment of ${mdText(s.node)}`, '');
  out.push(`Taken ${s.takenAt} by GPU Sessions. Tokens, keys and passwords are redacted (${REDACTED}).`, '');
  out.push('## Summary', '');
  out.push(
    table(
      ['', ''],
      [
        ['Hostname', s.hostname],
        ['OS', s.os],
        ['Kernel', s.kernel],
        [
          'CPU',
          [
            s.cpu.model,
            s.cpu.cores !== null ? `${s.cpu.cores} logical CPUs` : null,
            s.cpu.sockets !== null ? `${s.cpu.sockets} socket(s)` : null,
            s.cpu.numaNodes !== null ? `${s.cpu.numaNodes} NUMA node(s)` : null,
          ]
            .filter(Boolean)
            .join(', '),
        ],
        ['RAM', s.memory.totalKiB !== null ? `${kib(s.memory.totalKiB)} total, ${kib(s.memory.availableKiB) ?? '?'} available` : null],
        ['GPUs', gpuSummary],
        ['NVIDIA driver', s.gpus.driverVersion],
        ['CUDA (driver)', s.gpus.cudaVersion],
        ['CUDA toolkit (nvcc)', s.gpus.nvcc],
        ['Python', s.python.version ? `${s.python.version} (${s.python.executable ?? '?'})` : s.python.executable],
        ['SGLang', kp['sglang']],
        ['PyTorch', kp['torch'] ? `${kp['torch']}${kp['torch.cuda'] ? ` (CUDA ${kp['torch.cuda']})` : ''}` : null],
        ['SGLang servers', s.servers.length ? s.servers.map((x) => x.port).join(', ') : 'none'],
      ],
    ),
    '',
  );

  out.push('## GPUs', '');
  if (s.gpus.gpuState !== 'ok') out.push(`**${t(s.gpus.gpuState, '')}**: ${t(s.gpus.gpuMessage, '')}`, '');
  if (s.gpus.devices.length) {
    out.push(
      table(
        ['#', 'Name', 'Memory', 'Bus ID', 'UUID', 'VBIOS', 'Persistence'],
        s.gpus.devices.map((g, i) => [
          i,
          g.name,
          g.memoryTotalMiB !== null ? `${g.memoryTotalMiB} MiB` : null,
          g.busId,
          g.uuid,
          g.vbios,
          g.persistenceMode,
        ]),
      ),
      '',
    );
  }
  out.push(
    `Driver ${t(s.gpus.driverVersion, 'unknown')}, CUDA ${t(s.gpus.cudaVersion, 'unknown')}${s.gpus.nvcc ? `, toolkit ${mdText(s.gpus.nvcc)}` : ''}.`,
    '',
  );
  if (s.gpus.topology) out.push('### Topology (`nvidia-smi topo -m`)', '', fence(s.gpus.topology, 'text'), '');

  out.push('## CPU, memory, disks', '');
  out.push(
    `- CPU: ${t(s.cpu.model, 'unknown')}; ${s.cpu.cores ?? '?'} logical CPUs${s.cpu.sockets !== null ? `, ${s.cpu.sockets} socket(s)` : ''}${s.cpu.threadsPerCore !== null ? `, ${s.cpu.threadsPerCore} thread(s) per core` : ''}${s.cpu.numaNodes !== null ? `, ${s.cpu.numaNodes} NUMA node(s)` : ''}`,
  );
  out.push(
    `- Memory: ${kib(s.memory.totalKiB) ?? 'unknown'} total, ${kib(s.memory.availableKiB) ?? 'unknown'} available${s.memory.swapTotalKiB ? `, swap ${kib(s.memory.swapTotalKiB)}` : ''}`,
  );
  out.push(
    `- OS: ${t(s.os, 'unknown')}; kernel ${t(s.kernel, 'unknown')}${s.uptimeS !== null ? `; up ${s.uptimeS >= 172_800 ? `${(s.uptimeS / 86400).toFixed(1)} days` : `${(s.uptimeS / 3600).toFixed(1)} hours`}` : ''}`,
    '',
  );
  if (s.disks.length) {
    out.push(
      table(
        ['Mount', 'Filesystem', 'Size', 'Used', 'Available'],
        s.disks.map((d) => [d.mount, d.filesystem, kib(d.sizeKiB), kib(d.usedKiB), kib(d.availKiB)]),
      ),
      '',
    );
  }

  out.push('## Python', '');
  out.push(`- Interpreter: ${t(s.python.executable, 'none found')}${s.python.version ? ` (Python ${mdText(s.python.version)})` : ''}`);
  if (s.python.prefix) out.push(`- Prefix: ${mdText(s.python.prefix)}`);
  out.push('');
  const pkgRows = Object.entries(kp).filter(([k, v]) => v !== null || KEY_PACKAGES.includes(k));
  if (pkgRows.length)
    out.push(
      table(
        ['Package', 'Version'],
        pkgRows.map(([k, v]) => [k, v ?? 'not installed']),
      ),
      '',
    );
  if (s.pipFreeze.length) {
    out.push(
      `<details><summary>${s.pipFreezeSource === 'importlib.metadata' ? 'Installed distributions (importlib.metadata; pip is missing)' : 'pip freeze'} — ${s.pipFreeze.length} lines</summary>`,
      '',
      fence(s.pipFreeze.join('\n'), 'text'),
      '',
      '</details>',
      '',
    );
  }

  out.push('## SGLang servers', '');
  if (!s.servers.length) out.push('None running.', '');
  for (const srv of s.servers) {
    out.push(`### Port ${srv.port} (pid ${srv.pid}${srv.alive ? '' : ', exited'})`, '');
    const info = s.serverInfo[String(srv.port)] as Record<string, unknown> | undefined;
    const facts: string[] = [];
    if (info) {
      if (info.version) facts.push(`SGLang ${String(info.version)}`);
      if (info.model_path) facts.push(`model ${String(info.model_path)}`);
      if (info.max_total_num_tokens) facts.push(`${String(info.max_total_num_tokens)} KV tokens`);
    }
    const m = s.metrics[String(srv.port)];
    if (m) {
      const sum = metricsSummary(parseMetrics(m));
      if (sum.genThroughput !== null) facts.push(`${sum.genThroughput.toFixed(1)} tok/s at snapshot`);
      if (sum.runningReqs !== null) facts.push(`${sum.runningReqs} running request(s)`);
    }
    if (facts.length) out.push(`- ${mdText(facts.join('; '))}`);
    out.push(`- Working directory: ${t(srv.cwd, 'unknown')}`);
    out.push(`- Python: ${t(srv.python ?? srv.exe, 'unknown')}`, '');
    const envPrefix: Record<string, string> = {};
    if (srv.env.CUDA_VISIBLE_DEVICES !== undefined) envPrefix.CUDA_VISIBLE_DEVICES = srv.env.CUDA_VISIBLE_DEVICES;
    const cmd = srv.argv.length ? renderCommand(srv.argv, envPrefix) : '# argv not readable';
    out.push(fence(`${srv.cwd ? `cd ${shq(srv.cwd)}\n` : ''}${cmd}`, 'sh'), '');
    const notable = Object.entries(srv.env)
      .filter(([k]) => NOTABLE_ENV.test(k))
      .sort(([a], [b]) => (a < b ? -1 : 1));
    if (notable.length) out.push('Notable environment:', '', fence(notable.map(([k, v]) => `${k}=${shq(v)}`).join('\n'), 'sh'), '');
    const all = Object.entries(srv.env).sort(([a], [b]) => (a < b ? -1 : 1));
    if (all.length)
      out.push(
        `<details><summary>Full environment (${all.length} variables)</summary>`,
        '',
        fence(all.map(([k, v]) => `${k}=${shq(v)}`).join('\n'), 'sh'),
        '',
        '</details>',
        '',
      );
  }

  out.push('## SSH', '');
  out.push(
    table(
      ['', ''],
      [
        ['Host', s.ssh.host],
        ['Port', s.ssh.port],
        ['User', s.ssh.user],
        ...(s.ssh.proxyJump ? [['ProxyJump', s.ssh.proxyJump]] : []),
        ['Host key', s.ssh.hostKeyFingerprint ? `${s.ssh.hostKeyType ?? ''} ${s.ssh.hostKeyFingerprint}`.trim() : null],
      ],
    ),
    '',
  );
  if (s.ssh.host)
    out.push(
      fence(
        `ssh ${s.ssh.port && s.ssh.port !== 22 ? `-p ${s.ssh.port} ` : ''}${s.ssh.user ? `${shq(s.ssh.user)}@` : ''}${shq(s.ssh.host)}`,
        'sh',
      ),
      '',
    );

  if (s.errors.length) {
    out.push('## Problems while taking the snapshot', '');
    for (const e of s.errors) out.push(`- ${mdText(e)}`);
    out.push('');
  }
  if (s.gpus.smiQ) out.push('<details><summary><code>nvidia-smi -q</code></summary>', '', fence(s.gpus.smiQ, 'text'), '', '</details>', '');
  const ports = Object.keys(s.serverInfo);
  if (ports.length) {
    out.push(
      '<details><summary>Server info (JSON, per port)</summary>',
      '',
      fence(JSON.stringify(s.serverInfo, null, 2), 'json'),
      '',
      '</details>',
      '',
    );
  }
  return redactText(out.join('\n'));
}
