/**
 * What salvage considers, in ONE exec: the folders where the work actually is (chosen from evidence on the
 * node), every regular file under them, the caches under them (a count and a size per folder, not file by
 * file), symlinks (listed, never followed), git repositories, and the processes that are still writing.
 *
 * Folders from evidence: the home; provider volumes that exist and belong to the user (`/workspace`,
 * `/data`, `/mnt/*`, `/scratch`, `/ephemeral`); the user's entries in `/dev/shm`; the working directory of
 * every SGLang server; and, for every other process of the user that has files open under one of those or
 * talks to a server port (the generation client): its working directory, the folders of its open files and
 * the folders named in its argv; plus folders named in launch scripts. Nested folders collapse into their
 * parent; system folders never count. `roots` replaces the whole list, `addRoots` adds to it.
 */
import { HubOrigin, MODEL_EXT, downloadMetadataScript, parseDownloadMetadata } from './weights';
import { isUnder } from '../dest/paths';
import { groupedWhy } from './rootsWhy';

import type { RemoteOperation } from '../../remote/operation';
import { ArtifactKind, DEFAULT_VOLUMES, SIM_SCOPE_VAR, classifyArtifact, remoteRootExpr, scopeServers } from '../../node/probe';
import { sectionPrologue, sectionedOperation, splitSections } from '../../remote/sections';
import { shq } from '../../util/quote';
import { nodeScript } from '../../util/nodeScripts';
import { SglangServer, findServers } from '../../sglang/serverArgv';

export type SalvageKind = ArtifactKind | 'data' | 'model' | 'symlink' | 'other' | 'cache';

/**
 * Why a file stays on the node (null: selected). `redownloadable-weights` only in manifests written before model
 * weights were judged by evidence (now: ./weights).
 */
export type LeftReason =
  'cache' | 'large' | 'redownloadable-weights' | 'on-the-hub' | 'in-s3' | 'origin-unknown' | 'secret-store' | 'deselected' | 'guard-s3';

export interface ListedFile {
  path: string;
  kind: SalvageKind;
  size: number;
  mtime: string;
  /** For symlinks: the link target as stored. */
  linkTarget?: string;
}

interface CacheDir {
  path: string;
  files: number;
  bytes: number;
}

export interface RootInfo {
  path: string;
  why: string;
}

export interface ListedProcess {
  pid: number;
  ppid: number | null;
  cwd: string | null;
  argv: string[];
  /** Open file descriptors: target and open flags (octal from fdinfo; null when unreadable). */
  fds: Array<{ fd: number; target: string; flags: number | null }>;
  /** Shell-side evidence: s = SGLang server, c = cwd under a folder, f = open file under a folder, n = talks to a server port. */
  evidence: string;
}

export interface Writer {
  pid: number;
  /** The command line (the caller redacts it before it is shown or written). */
  argv: string[];
  server: boolean;
  /** Files under the folders it has open for writing. */
  writes: string[];
}

export interface SalvageListing {
  home: string;
  uid: number | null;
  roots: RootInfo[];
  /** Resolved absolute roots (realpath), to check symlink targets against. */
  realRoots: string[];
  files: ListedFile[];
  caches: CacheDir[];
  processes: ListedProcess[];
  /** SGLang servers of this user (from the listing's own process scan). */
  servers: SglangServer[];
  writers: Writer[];
  /** Model folders that servers (or launch scripts) read: their weights stay on the node only on evidence (./weights). */
  modelDirs: string[];
  /** Weights files the download metadata of `huggingface-cli download --local-dir` vouches for (path → origin). */
  hubMeta?: Map<string, HubOrigin>;
  truncated: boolean;
  /** Entries not listed because of the bounds (at least this many). */
  notListed: number;
  /** Which bound was hit. */
  bound: 'max-files' | 'max-depth' | null;
  maxFiles: number;
  maxDepth: number;
}

const DATA_EXT = [
  '.jsonl',
  '.json',
  '.csv',
  '.tsv',
  '.parquet',
  '.arrow',
  '.txt',
  '.md',
  '.npy',
  '.npz',
  '.ipynb',
  '.toml',
  '.ini',
  '.cfg',
  '.tar',
  '.gz',
  '.zst',
  '.pkl',
];

/** Every file has a kind: `other` when nothing more specific applies (no extension list decides existence). */
export function classifySalvage(p: string): SalvageKind {
  const a = classifyArtifact(p);
  if (a) return a;
  const base = p.slice(p.lastIndexOf('/') + 1).toLowerCase();
  if (MODEL_EXT.some((e) => base.endsWith(e))) return 'model';
  if (DATA_EXT.some((e) => base.endsWith(e))) return 'data';
  return 'other';
}

/** Directory names that are caches or installed software: summarised per folder, never copied. */
const CACHE_DIRS = [
  '.cache',
  '__pycache__',
  'node_modules',
  'site-packages',
  'dist-packages',
  'venv',
  '.venv',
  '.tox',
  '.nox',
  '.mypy_cache',
  '.pytest_cache',
  '.ruff_cache',
  '.triton',
  '.nv',
  'torch_extensions',
  '.npm',
  '.cargo',
  '.rustup',
  '.conda',
  'miniconda3',
  'anaconda3',
  '.pyenv',
  '.vscode-server',
  '.cursor-server',
  '.ccache',
];

/**
 * Folders that never count as work folders (as roots; files under a root are still listed). Patterns in
 * shell `case` syntax; `/dev/shm/?*` is allowed before `/dev/*` is refused.
 */
const SYSTEM_DIR_PATTERNS = [
  '/',
  '/proc',
  '/proc/*',
  '/sys',
  '/sys/*',
  '/dev',
  '/dev/*',
  '/usr',
  '/usr/*',
  '/bin',
  '/bin/*',
  '/sbin',
  '/sbin/*',
  '/lib',
  '/lib/*',
  '/lib32*',
  '/lib64*',
  '/libx32*',
  '/etc',
  '/etc/*',
  '/boot',
  '/boot/*',
  '/run',
  '/run/*',
  '/var',
  '/var/lib',
  '/var/lib/*',
  '/var/cache',
  '/var/cache/*',
  '/var/log',
  '/var/log/*',
  '/var/spool',
  '/var/spool/*',
  '/var/run',
  '/var/run/*',
  '/snap',
  '/snap/*',
  '/tmp',
  '/var/tmp',
  '/opt',
  '/srv',
  '/media',
  '/mnt',
  '/home',
  '/nix',
  '/nix/*',
];

export function isSystemDir(p: string): boolean {
  if (/^\/dev\/shm\/./.test(p)) return false;
  return SYSTEM_DIR_PATTERNS.some((pat) => (pat.endsWith('*') ? p.startsWith(pat.slice(0, -1)) : p === pat));
}

/** Entries of /dev/shm that are shared-memory segments of NCCL, torch, MPI (not files of value). */
const SHM_SKIP = ['sem.*', 'nccl*', 'torch_*', 'psm_*', 'cuda*', '__KMP*', '*.lock', 'mp-*', 'pym-*'];

export interface ListingOptions {
  /** Replace the folder list entirely (`--roots`). `~` and `~/x` are the remote home. */
  roots?: string[];
  /** Add folders to the evidence (`--add-root`). */
  addRoots?: string[];
  /** Folders an earlier salvage of this node found (their evidence may be gone once servers stopped). */
  previousRoots?: string[];
  /** Model folders an earlier run found (their servers may be stopped now): their download metadata is read again. */
  previousModelDirs?: string[];
  /** Provider volumes to consider (default DEFAULT_VOLUMES; tests point this at temp folders). */
  volumes?: string[];
  maxDepth?: number;
  maxFiles?: number;
  /** Paths never listed (the salvage destination, when the node is this machine): `find` does not enter them either. */
  exclude?: string[];
  /**
   * Folders on the node that are never listed nor entered, and never a root (`~/x` is the node's home), besides
   * those every listing prunes (ALWAYS_PRUNED): the node guard's `--to` copy. A copy of the work inside
   * the work's folders doubled its entries and took the listing past its depth bound (`listing-truncated`).
   */
  prune?: string[];
  /** Processes that are not evidence (this process, when the node is this machine: the demo node). */
  excludePids?: number[];
}

/** A shell function that calls its argument once for each word (`for` words: quoted paths, globs expanded). */
function eachFn(name: string, words: string[]): string {
  return `${name}() { for _w in ${words.join(' ')}; do "$1" "$_w"; done; }`;
}

/** A `case` pattern (`a|b*`) of shell patterns in which `*` is the only glob: everything else quoted. */
function casePattern(patterns: string[]): string {
  return patterns.map((x) => (x.endsWith('*') ? `${shq(x.slice(0, -1))}*` : shq(x))).join('|');
}

/** Depth and file bounds, clamped (the script and the parser use the same). */
function bounds(o: ListingOptions): { depth: number; max: number } {
  return { depth: Math.max(1, Math.min(32, Math.floor(o.maxDepth ?? 12))), max: Math.max(1, Math.floor(o.maxFiles ?? 100_000)) };
}

/**
 * The header that listing.sh reads its parameters from (the variables and functions its own header comment
 * names), then listing.sh itself: one standalone POSIX sh script (salvage feeds it on stdin, the guard runs it).
 */
export function buildListingScript(nonce: string, o: ListingOptions = {}): string {
  const { depth, max } = bounds(o);
  const explicit = o.roots && o.roots.length ? o.roots : null;
  const given = explicit
    ? explicit.map((r) => `cand root - ${remoteRootExpr(r)}`)
    : [
        ...(o.addRoots ?? []).map((r) => `cand add-root - ${remoteRootExpr(r)}`),
        ...(o.previousRoots ?? []).map((r) => `cand previous - ${shq(r)}`),
      ];
  const volumes = (o.volumes ?? DEFAULT_VOLUMES).map((v) => (v.endsWith('/*') ? `${shq(v.slice(0, -2))}/*` : shq(v)));
  const prune = [...(o.exclude ?? []).filter((x) => x.startsWith('/')), ...ALWAYS_PRUNED, ...(o.prune ?? [])].map(remoteRootExpr);
  const models = (o.previousModelDirs ?? []).filter((d) => d.startsWith('/')).map(shq);
  const pids = (o.excludePids ?? []).filter((n) => Number.isInteger(n) && n > 0);
  const header = [
    sectionPrologue(nonce),
    `DEPTH=${depth + 1}`,
    `MAXN=${max + 1}`,
    `EXCL=" ${pids.join(' ')} "`,
    `EVIDENCE=${explicit ? 0 : 1}`,
    `SCOPE="\${${SIM_SCOPE_VAR}:-}"`,
    `CACHE_NAMES=${shq(CACHE_DIRS.join(' '))}`,
    `given_roots() {\n${[':', ...given].join('\n')}\n}`,
    eachFn('each_volume', volumes),
    eachFn('each_prune', prune),
    eachFn('each_model', models),
    `system_dir() { case "$1" in /dev/shm/?*) return 1;; ${casePattern(SYSTEM_DIR_PATTERNS)}) return 0;; esac; return 1; }`,
    `shm_skip() { case "$1" in ${SHM_SKIP.map((x) => x.replace(/[^A-Za-z0-9_*.-]/g, '')).join('|')}) return 0;; esac; return 1; }`,
    `hf_meta() {\n${downloadMetadataScript('$T/m')}\n}`,
  ];
  return `${header.join('\n')}\n${nodeScript('salvage/plan/listing.sh')}`;
}

const WHY_TEXT: Record<string, (detail: string, procs: Map<number, ListedProcess>) => string> = {
  home: () => 'the home directory',
  root: () => 'chosen with --roots',
  'add-root': () => 'added with --add-root',
  volume: () => 'a provider volume that belongs to you',
  shm: () => 'your entry in /dev/shm',
  'server-cwd': (d, p) => `working directory of the SGLang server pid ${d}${portOf(p.get(Number(d)))}`,
  'proc-cwd': (d, p) => `working directory of pid ${d} (${cmdOf(p.get(Number(d)))})`,
  'proc-fd': (d, p) => `files open by pid ${d} (${cmdOf(p.get(Number(d)))})`,
  argv: (d, p) => `named in the command line of pid ${d} (${cmdOf(p.get(Number(d)))})`,
  script: (d) => `named in the launch script ${d}`,
  previous: () => 'found by an earlier salvage of this node',
};

function cmdOf(p: ListedProcess | undefined): string {
  if (!p || !p.argv.length) return '?';
  const a = p.argv.slice(0, 3).map((x) => x.split('/').pop() ?? x);
  return a.join(' ').slice(0, 80);
}

function portOf(p: ListedProcess | undefined): string {
  if (!p) return '';
  const i = p.argv.indexOf('--port');
  const v = i >= 0 ? p.argv[i + 1] : p.argv.find((a) => a.startsWith('--port='))?.slice(7);
  return v ? `, port ${v}` : '';
}

/** O_WRONLY or O_RDWR in an fdinfo `flags:` value. */
function writesFlag(flags: number | null): boolean {
  return flags !== null && (flags & 3) !== 0;
}

/** The `procs` section: one `P` record per process, then its `D` (cwd, fds), `A` (argv) and `I` (fdinfo) records. */
function parseProcesses(section: string): ListedProcess[] {
  const processes: ListedProcess[] = [];
  let cur: ListedProcess | null = null;
  for (const rec0 of section.split('\0')) {
    const rec = rec0.replace(/^\n/, '');
    if (!rec) continue;
    const tab = rec.indexOf('\t');
    const tag = rec.slice(0, tab);
    const body = rec.slice(tab + 1);
    if (tag === 'P') {
      const [pid, ppid, ev] = body.split('\t');
      cur = { pid: Number(pid), ppid: /^\d+$/.test(ppid ?? '') ? Number(ppid) : null, cwd: null, argv: [], fds: [], evidence: ev ?? '' };
      if (Number.isInteger(cur.pid)) processes.push(cur);
    } else if (cur) {
      addProcessRecord(cur, tag, body);
    }
  }
  return processes;
}

function addProcessRecord(cur: ListedProcess, tag: string, body: string): void {
  if (tag === 'D') {
    const f = body.split('\t');
    const dep = f[0];
    const name = f[1];
    const target = f.slice(2).join('\t');
    if (dep === '0' && name === 'cwd') cur.cwd = target || null;
    else if (dep === '1' && /^\d+$/.test(name)) cur.fds.push({ fd: Number(name), target, flags: null });
  } else if (tag === 'A') {
    cur.argv = body.split('\x1f');
    if (cur.argv.length && cur.argv[cur.argv.length - 1] === '') cur.argv.pop();
  } else if (tag === 'I') {
    for (const line of body.split('\n')) {
      const m = /\/fdinfo\/(\d+):flags:\s*([0-7]+)/.exec(line);
      if (!m) continue;
      const fd = cur.fds.find((x) => x.fd === Number(m[1]));
      if (fd) fd.flags = parseInt(m[2], 8);
    }
  }
}

const WHY_ORDER = ['root', 'home', 'add-root', 'volume', 'shm', 'server-cwd', 'proc-cwd', 'proc-fd', 'argv', 'script', 'previous'];

/** The roots (absolute, nested ones collapsed by the script), each with why it is one, from the candidates under it. */
function parseRoots(s: Map<string, string>, byPid: Map<number, ListedProcess>): RootInfo[] {
  const cands: Array<{ why: string; detail: string; path: string }> = [];
  for (const l of (s.get('cands') ?? '').split('\n')) {
    const f = l.split('\t');
    if (f.length < 3) continue;
    cands.push({ why: f[0], detail: f[1], path: f.slice(2).join('\t') });
  }
  return rootPathsOf(s).map((r) => {
    const under = cands.filter((c) => isUnder(c.path, r));
    under.sort((a, b) => WHY_ORDER.indexOf(a.why) - WHY_ORDER.indexOf(b.why));
    const texts = groupedWhy(
      under,
      r,
      (c) => (WHY_TEXT[c.why] ?? (() => c.why))(c.detail, byPid),
      (pid) => Number(portOf(byPid.get(pid)).replace(/^, port /, '')) || null,
    );
    const why = texts.length
      ? texts[0] +
        (texts.length > 1 ? `; also ${texts.slice(1, 4).join('; ')}${texts.length > 4 ? `; +${texts.length - 4} more` : ''}` : '')
      : '?';
    return { path: r, why };
  });
}

function rootPathsOf(s: Map<string, string>): string[] {
  return (s.get('roots') ?? '').split('\n').filter((l) => l.startsWith('/'));
}

interface FilesRead {
  files: ListedFile[];
  caches: Map<string, CacheDir>;
  /** Paths already listed (git repositories as `G<path>`). */
  seen: Set<string>;
  /** Records read, the one past the bound included. */
  count: number;
  /** The file bound was hit. */
  truncated: boolean;
  /** Entries past the depth bound. */
  beyond: number;
}

/** The `files` section: `find` records (tag, depth, size, mtime, path[, link target]), within the bounds. */
function parseFiles(section: string, depth: number, max: number): FilesRead {
  const r: FilesRead = { files: [], caches: new Map(), seen: new Set(), count: 0, truncated: false, beyond: 0 };
  for (const rec0 of section.split('\0')) {
    const x = rec0.replace(/^\n/, '');
    if (!x) continue;
    if (++r.count > max) {
      r.truncated = true;
      break;
    }
    addFileRecord(r, x.split('\t'), depth);
  }
  return r;
}

function addFileRecord(r: FilesRead, f: string[], depth: number): void {
  const tag = f[0];
  const dep = Number(f[1]);
  const p = f.slice(4).join('\t');
  if (tag === 'G') {
    if (dep <= depth + 1 && !r.seen.has('G' + p)) {
      r.seen.add('G' + p);
      r.files.push({ path: p, kind: 'git-repo', size: 0, mtime: new Date(0).toISOString() });
    }
    return;
  }
  if (dep > depth) {
    r.beyond++;
    return;
  }
  if (tag === 'C') r.caches.set(p, { path: p, files: 0, bytes: 0 });
  if (tag !== 'L' && tag !== 'F') return;
  const path = tag === 'L' ? f[4] : p;
  if (r.seen.has(path)) return;
  r.seen.add(path);
  const mtime = new Date(Math.round(Number(f[3]) * 1000) || 0).toISOString();
  const size = Number(f[2]) || 0;
  if (tag === 'L') r.files.push({ path, kind: 'symlink', size, mtime, linkTarget: f.slice(5).join('\t') });
  else r.files.push({ path, kind: classifySalvage(path), size, mtime });
}

/** The `caches` section: files and bytes per cache folder listed. */
function addCacheSizes(section: string, caches: Map<string, CacheDir>): void {
  for (const l of section.split('\n')) {
    const f = l.split('\t');
    if (f.length < 3) continue;
    const bytes = Number(f[f.length - 1]);
    const n = Number(f[f.length - 2]);
    const c = caches.get(f.slice(0, -2).join('\t'));
    if (c) Object.assign(c, { files: n || 0, bytes: bytes || 0 });
  }
}

/**
 * The Hugging Face download metadata that proves where left weights come from is listed as files: it comes home with
 * the salvage (its `.cache` folder is otherwise left as a cache). Then what the caller excludes goes, and the files
 * are sorted.
 */
function finishFiles(r: FilesRead, hub: ReturnType<typeof parseDownloadMetadata>, exclude: string[]): void {
  for (const f of hub.files)
    if (!r.seen.has(f.path)) {
      r.seen.add(f.path);
      r.files.push({ path: f.path, kind: 'other', size: f.size, mtime: f.mtime ?? new Date(0).toISOString() });
    }
  const excluded = (p: string) => exclude.some((x) => isUnder(p, x));
  for (let i = r.files.length - 1; i >= 0; i--) if (excluded(r.files[i].path)) r.files.splice(i, 1);
  for (const k of [...r.caches.keys()]) if (excluded(k)) r.caches.delete(k);
  r.files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/**
 * The user's SGLang servers among the processes listed. A simulated node shares this machine's process table: only
 * the servers running from its own folder (`scope`) are its own (as the probe lists them: scopeServers); on a real
 * node the scope is empty and every own server counts.
 */
function serversOf(ownProcs: ListedProcess[], scope: string): SglangServer[] {
  const servers = findServers(
    [],
    ownProcs.map((p) => ({
      pid: p.pid,
      ppid: p.ppid,
      argv: p.argv,
      exact: true,
      cwd: p.cwd,
      fd1: p.fds.find((f) => f.fd === 1)?.target ?? null,
      fd2: p.fds.find((f) => f.fd === 2)?.target ?? null,
    })),
    [],
  );
  return scope ? scopeServers(servers, scope) : servers;
}

/** Servers, processes writing under the roots, and clients that talk to a server port: servers first. */
function writersOf(ownProcs: ListedProcess[], byPid: Map<number, ListedProcess>, servers: SglangServer[], roots: string[]): Writer[] {
  const serverPids = new Set(servers.map((x) => x.pid));
  const writers: Writer[] = [];
  for (const p of ownProcs) {
    const writes = p.fds
      .filter((f) => writesFlag(f.flags) && f.target.startsWith('/') && !f.target.startsWith('/dev/'))
      .map((f) => f.target.replace(/ \(deleted\)$/, ''))
      .filter((t) => roots.some((r) => isUnder(t, r)));
    const server = serverPids.has(p.pid);
    // A server's children (schedulers, detokenizer) are part of it: listed once, as the server.
    if (!server && ancestorIn(p, byPid, serverPids)) continue;
    if (server || writes.length || p.evidence.includes('n')) {
      writers.push({ pid: p.pid, argv: p.argv, server, writes: [...new Set(writes)].sort() });
    }
  }
  return writers.sort((a, b) => Number(b.server) - Number(a.server) || a.pid - b.pid);
}

/** Model folders the servers and launch scripts read (the `models` section and the servers' --model-path). */
function modelDirsOf(section: string, servers: SglangServer[], home: string, rootPaths: string[]): string[] {
  const modelDirs = new Set<string>();
  for (const l of section.split('\n')) {
    const f = l.split('\t');
    if (f.length >= 2 && f[1].startsWith('/')) modelDirs.add(f.slice(1).join('\t'));
  }
  for (const srv of servers) if (srv.modelPath && srv.modelPath.startsWith('/')) modelDirs.add(srv.modelPath.replace(/\/+$/, ''));
  // A model folder that is also a work folder (or the home) would make everything "re-downloadable".
  for (const d of [...modelDirs]) if (d === home || rootPaths.includes(d) || isSystemDir(d)) modelDirs.delete(d);
  return [...modelDirs].sort();
}

export function parseListing(text: string, nonce: string, o: ListingOptions = {}): SalvageListing {
  const s = splitSections(text, nonce);
  const { depth, max } = bounds(o);
  const home = (s.get('home') ?? '').trim();
  const uidText = (s.get('uid') ?? '').trim();
  const processes = parseProcesses(s.get('procs') ?? '');
  const byPid = new Map(processes.map((p) => [p.pid, p]));
  const rootPaths = rootPathsOf(s);
  const realRoots = (s.get('realroots') ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const r = parseFiles(s.get('files') ?? '', depth, max);
  addCacheSizes(s.get('caches') ?? '', r.caches);
  const hub = parseDownloadMetadata(s.get('hfmeta') ?? '');
  finishFiles(r, hub, o.exclude ?? []);
  const ownProcs = processes.filter((p) => p.argv.length);
  const servers = serversOf(ownProcs, (s.get('scope') ?? '').trim());
  return {
    home,
    uid: /^\d+$/.test(uidText) ? Number(uidText) : null,
    roots: parseRoots(s, byPid),
    realRoots,
    files: r.files,
    caches: [...r.caches.values()].sort((a, b) => (a.path < b.path ? -1 : 1)),
    processes,
    servers,
    writers: writersOf(ownProcs, byPid, servers, rootPaths.length ? rootPaths : realRoots),
    modelDirs: modelDirsOf(s.get('models') ?? '', servers, home, rootPaths),
    hubMeta: hub.origins,
    truncated: r.truncated || r.beyond > 0,
    notListed: r.truncated ? Math.max(1, r.count - max) : r.beyond,
    bound: r.truncated ? 'max-files' : r.beyond > 0 ? 'max-depth' : null,
    maxFiles: max,
    maxDepth: depth,
  };
}

function ancestorIn(p: ListedProcess, byPid: Map<number, ListedProcess>, set: Set<number>): boolean {
  let cur = p.ppid;
  for (let i = 0; cur !== null && i < 16; i++) {
    if (set.has(cur)) return true;
    cur = byPid.get(cur)?.ppid ?? null;
  }
  return false;
}

export function salvageListOperation(o: ListingOptions = {}): RemoteOperation<SalvageListing> {
  return sectionedOperation({
    name: 'salvage-list',
    what: "Listing the node's files",
    node: 'the node',
    script: (nonce) => buildListingScript(nonce, o),
    timeoutMs: 180_000,
    maxOutputBytes: 256 * 1024 * 1024,
    parse: (text, nonce) => parseListing(text, nonce, o),
  });
}

/** Is an absolute (resolved) path inside one of the roots? */
export function insideRoots(p: string, realRoots: string[]): boolean {
  return realRoots.some((r) => p === r || p.startsWith(r.endsWith('/') ? r : r + '/'));
}

// ------------------------------------------------------------------------------------ why a file stays

/**
 * The rules of "a private key or credential store" as data: isSecretStore applies them here, and the node guard
 * (src/core/guard) gets the same table in its configuration (one definition; JS regex sources that Python reads alike).
 */
export const SECRET_STORE_RULES = {
  /** A file directly in a .ssh folder… */
  sshDir: /\/\.ssh\/[^/]+$/,
  /** …is a secret unless its name is one of these. */
  sshCopyable: /^(.*\.pub|known_hosts.*|authorized_keys.*|config|environment|rc)$/,
  /** A private key anywhere. */
  keyName: /^id_(rsa|dsa|ecdsa|ed25519)(_sk)?$/,
  tails: [
    '/.aws/credentials',
    '/.netrc',
    '/.git-credentials',
    '/.docker/config.json',
    '/.kaggle/kaggle.json',
    '/.pgpass',
    '/.huggingface/token',
    '/.config/gcloud/credentials.db',
    '/.config/gcloud/access_tokens.db',
    '/.config/gcloud/application_default_credentials.json',
    '/.config/rclone/rclone.conf',
    '/.vault-token',
  ],
};

/** The node guard's own folder: its state, journal and upload credential. Never listed by salvage. */
const GUARD_HOME = '~/.gpu-sessions/guard';

/**
 * What the providers' CLIs write in the home whenever they run (`runpodctl`'s `~/.runpod/config.toml`, `vastai`'s
 * config and state folders; its cache is under `~/.cache`, a cache folder): their settings and keys, never the work.
 * Never listed, so that the product's own status and price reads on the node do not make a salvage look stale.
 */
const PROVIDER_CLI_STATE = ['~/.runpod', '~/.config/vastai', '~/.local/state/vastai'];

/** Folders every listing prunes (its own and the providers' state), whatever the caller adds. */
const ALWAYS_PRUNED = [GUARD_HOME, ...PROVIDER_CLI_STATE];

/** Private keys and credential stores: never copied, always listed. */
export function isSecretStore(p: string): boolean {
  const r = SECRET_STORE_RULES;
  const base = p.slice(p.lastIndexOf('/') + 1);
  if (r.sshDir.test(p) && !r.sshCopyable.test(base)) return true;
  if (r.keyName.test(base)) return true;
  return r.tails.some((t) => p.endsWith(t));
}

/** Weights in a Hugging Face hub cache (shared with the node guard, as isSecretStore's rules are). */
export const HUB_CACHE_PATTERNS = [
  /\/(huggingface\/hub|hub)\/models--[^/]+\/(snapshots|blobs|refs)\//,
  /\/models--[^/]+\/(snapshots|blobs)\//,
];

/** Weights that can be downloaded again: under a Hugging Face hub cache, or in a model folder servers only read. */
export function isRedownloadable(p: string, modelDirs: string[]): boolean {
  if (HUB_CACHE_PATTERNS.some((re) => re.test(p))) return true;
  return modelDirs.some((d) => isUnder(p, d) && p !== d);
}
