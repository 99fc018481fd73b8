/**
 * Parsing the snapshot output: nvidia-smi -q, environ, cmdline, pip freeze; everything redacted before it leaves.
 */
import { GpuState, classifySmiFailure } from '../../node/nvidiaSmi';
import { parseFlags, sglangLaunchIndex } from '../../sglang/serverArgv';
import { parseDf } from '../../node/probe';
import { parseHostFacts } from '../../node/hostFacts';
import { firstLine, splitSections } from '../../remote/sections';
import { REDACTED, isSecretName, redactArgv, redactEnv, redactText, scrubKnownSecrets } from '../../util/redact';
import { KEY_PACKAGES, SmiQGpu, SnapshotCore, SnapshotServer } from './snapshotTypes';

function intOrNull(s: string | undefined | null): number | null {
  if (s === undefined || s === null) return null;
  const t = s.trim();
  if (!/^-?\d+$/.test(t)) return null;
  return Number(t);
}

/** `nvidia-smi -q`: driver and CUDA versions and one entry per `GPU <bus id>` block. */
function parseSmiQ(text: string): {
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
function parseEnviron(raw: string): Record<string, string> {
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
export const RAW_SECRETS = new WeakMap<object, string[]>();
export const API_KEYS = new WeakMap<object, string>();

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

type Sections = Map<string, string>;

/** The last non-blank line of a section (trimmed by the caller), or undefined. */
function lastLine(section: string | undefined): string | undefined {
  return (section ?? '')
    .split('\n')
    .filter((l) => l.trim())
    .slice(-1)[0];
}

/** GPUs: `nvidia-smi -q` (its failure classified), the topology and nvcc's release. Problems go to `errors`. */
function parseGpus(s: Sections, tools: Set<string>, errors: string[]): SnapshotCore['gpus'] {
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
  const nvcc = /release\s+([^\n]+)/.exec(s.get('nvcc') ?? '')?.[1]?.trim() ?? null;
  return {
    smiQ: redactText(smiQ),
    topology: redactText(topology),
    driverVersion: q.driverVersion,
    cudaVersion: q.cudaVersion,
    gpuState,
    gpuMessage,
    devices: q.gpus,
    nvcc,
  };
}

/** What the interpreter reported of itself (snapshotScript's Python). */
interface PyInfo {
  version?: string;
  executable?: string;
  prefix?: string;
  packages?: Record<string, string | null>;
  dists?: string[];
  errors?: string[];
}

/** The interpreter (the first server's, else python3 on PATH) and its report: the last complete JSON line. */
function parsePython(s: Sections, errors: string[]): { pyPath: string | null; pyInfo: PyInfo } {
  const pyPath = (s.get('python') ?? '').trim() || null;
  let pyInfo: PyInfo = {};
  if (!pyPath) {
    errors.push('No Python interpreter found (no SGLang server interpreter, no python3 on PATH).');
    return { pyPath, pyInfo };
  }
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
    const err = lastLine(s.get('pyinfoerr'));
    errors.push(`${pyPath} could not report its version and packages${err ? `: ${err.trim()}` : ''}.`);
  }
  for (const e of pyInfo.errors ?? []) errors.push(`python: ${e}`);
  return { pyPath, pyInfo };
}

/** The key packages first (null: not installed), then the others the interpreter reported. */
function keyPackagesOf(pyInfo: PyInfo): Record<string, string | null> {
  const keyPackages: Record<string, string | null> = {};
  for (const k of KEY_PACKAGES) keyPackages[k] = pyInfo.packages?.[k] ?? null;
  for (const [k, v] of Object.entries(pyInfo.packages ?? {})) if (!(k in keyPackages)) keyPackages[k] = v ?? null;
  return keyPackages;
}

/** `pip freeze` (redacted), or importlib.metadata's list when pip failed. */
function parsePipFreeze(
  s: Sections,
  pyPath: string | null,
  pyInfo: PyInfo,
  errors: string[],
): Pick<SnapshotCore, 'pipFreeze' | 'pipFreezeSource'> {
  const pfrc = intOrNull(firstLine(s.get('pipfreezerc')));
  if (!pyPath) return { pipFreeze: [], pipFreezeSource: null };
  if (pfrc === 0) {
    const lines = (s.get('pipfreeze') ?? '')
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean);
    return { pipFreeze: lines.map(redactPipLine), pipFreezeSource: 'pip' };
  }
  const why = pfrc === 124 ? 'timed out after 60 s' : (firstLine(lastLine(s.get('pipfreezeerr'))) ?? `exit ${pfrc ?? '?'}`);
  const dists = pyInfo.dists?.length ? pyInfo.dists : null;
  errors.push(`pip freeze failed with ${pyPath} (${why})${dists ? '; the package list comes from importlib.metadata' : ''}.`);
  return dists ? { pipFreeze: dists.map(redactPipLine), pipFreezeSource: 'importlib.metadata' } : { pipFreeze: [], pipFreezeSource: null };
}

interface ServersRead {
  servers: SnapshotServer[];
  /** Secret values of their argv and environment, to scrub from everything. */
  rawSecrets: string[];
  apiKeys: Array<[SnapshotServer, string]>;
}

/** One server per pid asked for: its argv, environment (redacted), cwd, interpreter; what could not be read. */
function parseServers(s: Sections, serverPids: number[], errors: string[]): ServersRead {
  const r: ServersRead = { servers: [], rawSecrets: [], apiKeys: [] };
  for (const pid of serverPids.filter((p) => Number.isInteger(p) && p > 0)) {
    const alive = (s.get(`srv:${pid}:alive`) ?? '').trim() === 'yes';
    const argvRaw = parseCmdline(s.get(`srv:${pid}:cmdline`) ?? '');
    const envRaw = parseEnviron(s.get(`srv:${pid}:environ`) ?? '');
    if (!alive) errors.push(`Server pid ${pid}: no such process (it exited before the snapshot).`);
    else if (argvRaw.length === 0) errors.push(`Server pid ${pid}: /proc/${pid}/cmdline is not readable.`);
    if (alive && Object.keys(envRaw).length === 0)
      errors.push(`Server pid ${pid}: /proc/${pid}/environ is not readable (another user's process?).`);
    r.rawSecrets.push(...secretValues(argvRaw, envRaw));
    const at = sglangLaunchIndex(argvRaw);
    const flags = parseFlags(at >= 0 ? argvRaw.slice(at) : argvRaw);
    const server: SnapshotServer = {
      pid,
      port: intOrNull(typeof flags.port === 'string' ? flags.port : null) ?? 30000,
      host: typeof flags.host === 'string' ? flags.host : '127.0.0.1',
      argv: redactArgv(argvRaw),
      env: redactEnv(envRaw),
      cwd: (s.get(`srv:${pid}:cwd`) ?? '').trim() || null,
      python: (s.get(`srv:${pid}:python`) ?? '').trim() || null,
      exe: (s.get(`srv:${pid}:exe`) ?? '').trim() || null,
      alive,
    };
    const key = apiKeyOf(argvRaw);
    if (key) r.apiKeys.push([server, key]);
    r.servers.push(server);
  }
  return r;
}

/** The CPU from the host facts, lscpu filling in what they lack. */
function cpuOf(host: ReturnType<typeof parseHostFacts>, lscpu: string): SnapshotCore['cpu'] {
  const lsField = (name: string) => new RegExp(`^${name}:\\s*(.+)$`, 'm').exec(lscpu)?.[1]?.trim() ?? null;
  return {
    model: host.cpuModel ?? lsField('Model name'),
    cores: host.cpuCores ?? intOrNull(lsField('CPU\\(s\\)')),
    sockets: intOrNull(lsField('Socket\\(s\\)')),
    threadsPerCore: intOrNull(lsField('Thread\\(s\\) per core')),
    numaNodes: intOrNull(lsField('NUMA node\\(s\\)')),
  };
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
  // the order of `errors` is the order of the sections: GPUs, Python, pip, servers
  const gpus = parseGpus(s, tools, errors);
  const { pyPath, pyInfo } = parsePython(s, errors);
  const pip = parsePipFreeze(s, pyPath, pyInfo, errors);
  const srv = parseServers(s, serverPids, errors);
  const core: SnapshotCore = {
    takenAt: new Date().toISOString(),
    node: nodeName,
    hostname: host.hostname,
    os: host.os,
    kernel: host.kernel,
    uptimeS: host.uptimeS,
    cpu: cpuOf(host, s.get('lscpu') ?? ''),
    memory: { totalKiB: host.memTotalKiB, availableKiB: host.memAvailableKiB, swapTotalKiB: host.swapTotalKiB },
    disks: parseDf(s.get('disks') ?? ''),
    gpus,
    python: { version: pyInfo.version ?? null, executable: pyInfo.executable ?? pyPath, prefix: pyInfo.prefix ?? null },
    ...pip,
    keyPackages: keyPackagesOf(pyInfo),
    servers: srv.servers,
    errors: errors.map(redactText),
  };
  const scrubbed = scrubKnownSecrets(core, srv.rawSecrets);
  RAW_SECRETS.set(scrubbed, srv.rawSecrets);
  scrubbed.servers.forEach((x, i) => {
    const k = srv.apiKeys.find(([orig]) => orig === srv.servers[i])?.[1];
    if (k) API_KEYS.set(x, k);
  });
  return scrubbed;
}

/**
 * The snapshot's remote part as a remote-operation description: ONE exec of a POSIX sh script fed on
 * stdin. `serverPids`: the SGLang servers to record (argv, environment, cwd, interpreter); the first
 * one's interpreter is the Python whose packages are listed (else python3 on PATH).
 */
