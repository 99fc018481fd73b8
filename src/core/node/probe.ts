/**
 * The probe: everything the tree shows about a node, gathered in ONE exec (one SSH round trip).
 * The script is POSIX sh fed on stdin (`sh -s`), so the remote argv stays short and no name we
 * did not write is ever part of a command line unquoted. Output sections are delimited by markers
 * that carry a per-probe nonce, so no file name can forge a section.
 */
import { nodeScript } from '../util/nodeScripts';
import { shq } from '../util/quote';
import { firstLine, sectionPrologue, sectionedOperation, splitSections } from '../remote/sections';

export { splitSections };
import type { RemoteOperation } from '../remote/operation';
import {
  COMPUTE_APPS_ARGS,
  GPU_QUERY_ARGS,
  GpuInfo,
  GpuProcess,
  GpuState,
  LostGpu,
  classifySmiFailure,
  parseLostGpus,
  parseComputeApps,
  parseGpuQuery,
  parseSmiBanner,
} from './nvidiaSmi';
import { NodeProgress, parseProgressSection, progressScript } from './progressRead';
import { HostFacts, hostFactsScript, parseHostFacts } from './hostFacts';
import { ProviderInfo, parseProviderSection, providerScript } from '../provider/detect';
import { SglangServer, findServers, parseProcRecords, parsePsLines } from '../sglang/serverArgv';
import { Gateway, gatewayProbeScript, parseGatewaySection } from '../gateway/discover';

export type ArtifactKind = 'log' | 'launch-script' | 'script' | 'python' | 'progress' | 'config' | 'patch' | 'git-repo';

export interface Artifact {
  path: string;
  kind: ArtifactKind;
  size: number;
  /** Modification time, ISO 8601. */
  mtime: string;
}

export interface DiskInfo {
  filesystem: string;
  sizeKiB: number;
  usedKiB: number;
  availKiB: number;
  mount: string;
}

/** The node's facts (hostname, OS, kernel, uptime, CPU, memory: see hostFacts.ts), GPUs, servers and artifacts. */
export interface ProbeResult extends Omit<HostFacts, 'swapTotalKiB'> {
  node: string;
  disks: DiskInfo[];
  gpuState: GpuState;
  gpuMessage: string | null;
  driverVersion: string | null;
  cudaVersion: string | null;
  gpus: GpuInfo[];
  /** GPUs nvidia-smi could not read while the others still reported (kept apart; the others stay listed). */
  lostGpus: LostGpu[];
  gpuProcesses: GpuProcess[];
  servers: SglangServer[];
  /** SGLang Model Gateways (routers) on the node, their workers mapped to this node's servers (core/gateway/). */
  gateways: Gateway[];
  /** Which provider rents the node and what it can end the rental with (core/provider/detect.ts). */
  provider?: ProviderInfo;
  /** progress.json / .done_indices read in the same exec, when ProbeOptions.progress named them. */
  progress?: NodeProgress;
  artifacts: Artifact[];
  artifactsTruncated: boolean;
  homeDir: string | null;
  roots: string[];
  probedAt: string;
  durationMs: number;
}

export interface ProbeOptions {
  /** Directories to scan for artifacts; `~` or `~/x` are relative to the remote home. Default: the home. */
  roots?: string[];
  maxDepth?: number;
  maxArtifacts?: number;
  /** false: skip the artifact scan (a watch loop that already knows the job's files). Default true. */
  artifacts?: boolean;
  /** Read these progress files in the same exec (see progressScript). */
  progress?: { progressPath: string | null; donePath: string | null };
  /** Provider volumes scanned besides the home when no roots are given (default PROBE_VOLUMES; tests use temp folders). */
  volumes?: string[];
}

/**
 * Directories never descended into when looking for artifacts — besides these, every hidden directory
 * below a root (tool state such as ~/.cache, ~/.ssh, ~/.aws, ~/.config: not artifacts, and some of it secret).
 */
export const PRUNE_DIRS = [
  '.git',
  'node_modules',
  '__pycache__',
  '.cache',
  'site-packages',
  'venv',
  '.venv',
  'miniconda3',
  'anaconda3',
  '.conda',
  '.npm',
  '.cargo',
  '.rustup',
  '.local',
  '.vscode-server',
  '.triton',
  '.nv',
  'proc',
  'sys',
];

const NAME_PATTERNS = [
  '*.log',
  'nohup.out',
  '*.sh',
  '*.py',
  'progress.json',
  '.done_indices',
  '*progress*.json',
  'config.json',
  'generation_config.json',
  '*.yaml',
  '*.yml',
  '*.patch',
  '*.diff',
];

/** Quote a root for the remote shell: `~` and `~/x` expand to the remote home, everything else is literal. */
export function remoteRootExpr(root: string): string {
  if (root === '~' || root === '') return '"$HOME"';
  if (root.startsWith('~/')) return `"$HOME"/${shq(root.slice(2))}`;
  return shq(root);
}

/** Bytes of a process's argv read on the node (a co-tenant's 5 MB command line is cut here). */
const PROC_ARGV_CAP = 65536;
/** At most this many servers are listed (the user's own; a node with more is not one we can watch anyway). */
const MAX_SERVERS = 256;

/**
 * The /proc records of the processes whose argv mentions sglang (node/procRecords.sh, parsed by parseProcRecords),
 * as POSIX sh. `ownOnly`: another user's processes are skipped before anything is printed; every record is capped
 * on the node (argv 64 KiB, environment 256 KiB), whoever owns the process. `extra` is more shell run per process
 * (with `$d` = /proc/PID), e.g. the launch scan's environment record; it must encode what it prints the same way.
 */
export function procRecordsLoop(extra = '', opts: { ownOnly?: boolean } = {}): string {
  const header = [`gs_own_only=${opts.ownOnly ? 1 : 0}`, `gs_argv_cap=${PROC_ARGV_CAP}`, `gs_extra() {\n:\n${extra}\n}`];
  return `${header.join('\n')}\n${nodeScript('node/procRecords.sh')}`;
}

/**
 * Set in a simulated node's session environment (the demo node) to the folder its own processes run
 * from: a simulation shares the host's process table, so the probe lists only the servers whose working
 * directory or log lies under it. Absent on real nodes, where every server is listed.
 */
export const SIM_SCOPE_VAR = 'GPU_SESSIONS_SIM_HOME';

/** The servers a simulated node owns (cwd or log under its folder); all of them when scope is empty. */
export function scopeServers<T extends { cwd: string | null; logFile: string | null }>(servers: T[], scope: string): T[] {
  const dir = scope.replace(/\/+$/, '');
  if (!dir.startsWith('/')) return servers;
  const under = (p: string | null) => !!p && p.startsWith(dir + '/');
  return servers.filter((s) => under(s.cwd) || under(s.logFile));
}

/** Provider volumes where rented nodes keep the work (RunPod's /workspace, /data, /scratch, …); salvage adds /mnt/*. */
export const DEFAULT_VOLUMES = ['/workspace', '/data', '/scratch', '/ephemeral', '/mnt/*'];
/** The probe runs every refresh: no /mnt/* (a dataset mount can be huge); salvage, run once, looks there too. */
export const PROBE_VOLUMES = DEFAULT_VOLUMES.filter((v) => !v.includes('*'));

/**
 * The artifact scan: each root as one `find`, an `R` record per folder scanned and an `E` record per root that
 * is missing. With `evidence` (no explicit roots), besides the home: provider volumes that exist and are the
 * user's (owned or writable), and the working directories of the user's SGLang servers; a folder inside one
 * already scanned is skipped, system folders never count. Off on the demo node (it shares this machine).
 */
function artifactScanScript(roots: string, evidence: boolean, volumes: string[], depth: number, prune: string, names: string): string {
  const vols = volumes.map(shq).join(' ');
  const find = [
    `\\( -type d -name .git -printf 'G\\t0\\t0\\t%h\\000' -prune \\)`,
    `\\( -type d \\( ${prune} -o \\( -name '.?*' -mindepth 1 \\) \\) -prune \\)`,
    `\\( -type f \\( ${names} \\) -printf 'F\\t%s\\t%T@\\t%p\\000' \\)`,
  ].join(' -o ');
  const header = [
    `EVIDENCE=${evidence ? 1 : 0}`,
    `gs_find() { find "$1" -maxdepth ${depth} ${find} 2>/dev/null; }`,
    `each_root() { for r in ${roots}; do "$1" "$r"; done; }`,
    `each_volume() { for v in ${vols || ':'}; do "$1" "$v"; done; }`,
  ];
  return `${header.join('\n')}\n${nodeScript('node/artifacts.sh')}`;
}

export function buildProbeScript(nonce: string, opts: ProbeOptions = {}): string {
  const roots = (opts.roots && opts.roots.length ? opts.roots : ['~']).map(remoteRootExpr).join(' ');
  const depth = Math.max(1, Math.min(32, Math.floor(opts.maxDepth ?? 6)));
  const max = Math.max(1, Math.floor(opts.maxArtifacts ?? 2000));
  const prune = PRUNE_DIRS.map((d) => `-name ${shq(d)}`).join(' -o ');
  const names = NAME_PATTERNS.map((n) => `-name ${shq(n)}`).join(' -o ');
  const evidence = !(opts.roots && opts.roots.length);
  const artifactScan =
    opts.artifacts === false ? ':' : artifactScanScript(roots, evidence, opts.volumes ?? PROBE_VOLUMES, depth, prune, names);
  const fn = (name: string, body: string) => `${name}() {\n:\n${body}\n}`;
  const header = [
    '',
    sectionPrologue(nonce),
    `SCOPE="\${${SIM_SCOPE_VAR}:-}"`,
    `ARGV_CAP=${PROC_ARGV_CAP}`,
    `ARTIFACT_MAX=${max + 1}`,
    `smi_query() { nvidia-smi ${GPU_QUERY_ARGS.map(shq).join(' ')}; }`,
    `smi_apps() { nvidia-smi ${COMPUTE_APPS_ARGS.map(shq).join(' ')}; }`,
    fn('host_facts', hostFactsScript()),
    fn('provider', providerScript()),
    fn('proc_records', procRecordsLoop('', { ownOnly: true })),
    fn('gateways', gatewayProbeScript()),
    fn('progress', opts.progress ? `sec progress\n${progressScript(opts.progress.progressPath, opts.progress.donePath, nonce)}` : ''),
    fn('artifact_scan', artifactScan),
  ];
  return `${header.join('\n')}\n${nodeScript('node/probe.sh')}`;
}

export function classifyArtifact(p: string): ArtifactKind | null {
  const base = p.slice(p.lastIndexOf('/') + 1);
  if (base === 'progress.json' || base === '.done_indices' || /progress.*\.json$/.test(base)) return 'progress';
  if (base.endsWith('.log') || base === 'nohup.out') return 'log';
  if (base.endsWith('.sh')) return /^(launch|start|serve|run)/i.test(base) ? 'launch-script' : 'script';
  if (base.endsWith('.py')) return 'python';
  if (base === 'config.json' || base === 'generation_config.json' || base.endsWith('.yaml') || base.endsWith('.yml')) return 'config';
  if (base.endsWith('.patch') || base.endsWith('.diff')) return 'patch';
  return null;
}

export function parseArtifacts(
  section: string,
  max: number,
): { artifacts: Artifact[]; truncated: boolean; missingRoots: string[]; scanned: string[] } {
  const artifacts: Artifact[] = [];
  const missingRoots: string[] = [];
  const scanned: string[] = [];
  const recs = section.split('\0').filter((r) => r.length > 0 && r !== '\n');
  let count = 0;
  for (const rec of recs) {
    const r = rec.replace(/^\n/, '');
    const t1 = r.indexOf('\t');
    const t2 = r.indexOf('\t', t1 + 1);
    const t3 = r.indexOf('\t', t2 + 1);
    if (t1 < 0 || t2 < 0 || t3 < 0) continue;
    const tag = r.slice(0, t1);
    const p = r.slice(t3 + 1);
    if (tag === 'E') {
      missingRoots.push(p);
      continue;
    }
    if (tag === 'R') {
      scanned.push(p);
      continue;
    }
    count++;
    if (count > max) break;
    if (tag === 'G') {
      artifacts.push({ path: p, kind: 'git-repo', size: 0, mtime: new Date(0).toISOString() });
      continue;
    }
    if (tag !== 'F') continue;
    const kind = classifyArtifact(p);
    if (!kind) continue;
    const size = Number(r.slice(t1 + 1, t2));
    const mt = Number(r.slice(t2 + 1, t3));
    artifacts.push({
      path: p,
      kind,
      size: Number.isFinite(size) ? size : 0,
      mtime: new Date(Number.isFinite(mt) ? Math.round(mt * 1000) : 0).toISOString(),
    });
  }
  artifacts.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { artifacts, truncated: count > max, missingRoots, scanned };
}

/**
 * `df -kP` → the node's disks: real filesystems, plus /dev/shm (models are often staged there) and the root
 * mount whatever it is (a container's root is an overlay, and that is where the job writes). Other pseudo
 * filesystems (tmpfs, devtmpfs, overlay, proc, sysfs, cgroup…) are left out.
 */
export function parseDf(text: string): DiskInfo[] {
  const disks: DiskInfo[] = [];
  for (const l of text.split('\n').slice(1)) {
    const f = l.trim().split(/\s+/);
    if (f.length < 6 || !/^\d+$/.test(f[1])) continue;
    const fs = f[0];
    const mount = f.slice(5).join(' ');
    if (/^(tmpfs|devtmpfs|overlay|shm|udev|none|proc|sysfs|cgroup)/.test(fs) && mount !== '/dev/shm' && mount !== '/') continue;
    disks.push({ filesystem: fs, sizeKiB: Number(f[1]), usedKiB: Number(f[2]), availKiB: Number(f[3]), mount });
  }
  return disks;
}

function num(s: string | undefined | null): number | null {
  if (s === undefined || s === null) return null;
  const n = Number(s.trim());
  return Number.isFinite(n) && s.trim() !== '' ? n : null;
}

export function parseProbeOutput(nodeName: string, text: string, nonce: string, opts: ProbeOptions = {}, durationMs = 0): ProbeResult {
  const s = splitSections(text, nonce);
  const host = parseHostFacts((k) => s.get(k));
  const disks = parseDf(s.get('disks') ?? '');

  const qText = s.get('gpus') ?? '';
  const qrc = num(firstLine(s.get('gpusrc')));
  const bannerText = s.get('banner') ?? '';
  const banner = parseSmiBanner(bannerText);
  let gpus: GpuInfo[] = [];
  let gpuState: GpuState = 'ok';
  let gpuMessage: string | null = null;
  let lostGpus: LostGpu[] = [];
  const partial = qrc !== 0 && qrc !== null ? parseGpuQuery(qText) : [];
  if (partial.length > 0) {
    // one GPU fell off the bus: nvidia-smi exits non-zero but the healthy GPUs still report — keep them
    gpus = partial;
    lostGpus = parseLostGpus(
      qText,
      partial.map((g) => g.index),
    );
    gpuMessage = lostGpus.length ? lostGpus.map((l) => l.message).join('\n') : `nvidia-smi exited with status ${qrc}`;
  } else if (qrc === 0) {
    gpus = parseGpuQuery(qText);
    // A wrapper or an odd build that ignores the query still prints the banner table.
    if (gpus.length === 0 && banner.gpus.length) gpus = banner.gpus;
    if (gpus.length === 0) {
      gpuState = 'no-gpu';
      gpuMessage = 'nvidia-smi listed no GPU.';
    }
  } else {
    const c = classifySmiFailure(qrc, qText || bannerText);
    gpuState = c.state;
    gpuMessage = c.message;
  }
  const apps = gpuState === 'ok' ? parseComputeApps(s.get('apps') ?? '') : [];
  // The banner's table knows which GPU each process is on; the CSV knows memory precisely.
  const gpuProcesses: GpuProcess[] = apps.map((a) => {
    const b = banner.processes.find((p) => p.pid !== null && p.pid === a.pid);
    return { ...a, gpuIndex: b?.gpuIndex ?? null };
  });
  for (const b of banner.processes) if (!gpuProcesses.some((g) => g.pid === b.pid)) gpuProcesses.push(b);

  const ps = parsePsLines(s.get('ps') ?? '');
  const proc = parseProcRecords(s.get('proc') ?? '');
  const servers = scopeServers(findServers(ps, proc, gpuProcesses), (s.get('scope') ?? '').trim()).slice(0, MAX_SERVERS);
  const max = Math.max(1, Math.floor(opts.maxArtifacts ?? 2000));
  const arts = parseArtifacts(s.get('artifacts') ?? '', max);
  return {
    node: nodeName,
    hostname: host.hostname,
    os: host.os,
    kernel: host.kernel,
    uptimeS: host.uptimeS,
    cpuModel: host.cpuModel,
    cpuCores: host.cpuCores,
    memTotalKiB: host.memTotalKiB,
    memAvailableKiB: host.memAvailableKiB, // the key order of probe --json stays as it was
    disks,
    gpuState,
    gpuMessage,
    driverVersion: gpuState === 'ok' ? banner.driverVersion : banner.driverVersion,
    cudaVersion: banner.cudaVersion,
    gpus,
    lostGpus,
    gpuProcesses,
    servers,
    gateways: parseGatewaySection(s.get('gateways') ?? '', { node: nodeName, hostname: host.hostname, servers }, s.get('scope') ?? ''),
    provider: parseProviderSection(s.get('provider') ?? ''),
    ...(opts.progress ? { progress: { ...parseProgressSection(s.get('progress') ?? '', opts.progress, nonce), readAt: Date.now() } } : {}),
    artifacts: arts.artifacts,
    artifactsTruncated: arts.truncated,
    homeDir: (s.get('home') ?? '').trim() || null,
    roots: arts.scanned.length ? arts.scanned : opts.roots && opts.roots.length ? opts.roots : ['~'],
    probedAt: new Date().toISOString(),
    durationMs,
  };
}

/** The probe as a remote-operation description. */
export function probeOperation(nodeName: string, opts: ProbeOptions = {}): RemoteOperation<ProbeResult> {
  const started = Date.now();
  return sectionedOperation({
    name: 'probe',
    what: 'The probe',
    node: nodeName,
    script: (nonce) => buildProbeScript(nonce, opts),
    parse: (text, nonce) => parseProbeOutput(nodeName, text, nonce, opts, Date.now() - started),
    timeoutMs: 60_000,
    maxOutputBytes: 32 * 1024 * 1024,
  });
}
