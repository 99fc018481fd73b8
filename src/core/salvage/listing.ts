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
import { isUnder } from './paths';
import { groupedWhy } from './rootsWhy';

export { isUnder };
import type { RemoteOperation } from '../remote/operation';
import { ArtifactKind, DEFAULT_VOLUMES, SIM_SCOPE_VAR, classifyArtifact, remoteRootExpr, scopeServers } from '../node/probe';
import { sectionPrologue, sectionedOperation, splitSections } from '../remote/sections';
import { shq } from '../util/quote';
import { SglangServer, findServers } from '../sglang/serverArgv';

export type SalvageKind = ArtifactKind | 'data' | 'model' | 'symlink' | 'other' | 'cache';

/** Why a file is left on the node (null: selected). */
/** Why a file stays on the node. `redownloadable-weights` only in manifests written before issue 23 (now: ./weights). */
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

export interface CacheDir {
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
export { MODEL_EXT };

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
export const CACHE_DIRS = [
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
   * those every listing prunes (ALWAYS_PRUNED): the node guard's `--to` copy (issue 47). A copy of the work inside
   * the work's folders doubled its entries and took the listing past its depth bound (`listing-truncated`).
   */
  prune?: string[];
  /** Processes that are not evidence (this process, when the node is this machine: the demo node). */
  excludePids?: number[];
}

/** `find` names of the launch scripts read for model paths (in the folders already found, two levels deep). */
const LAUNCH_SCRIPT_NAMES = "-name 'launch*.sh' -o -name 'start*.sh' -o -name 'serve*.sh' -o -name 'run*.sh'";
/** awk over /proc/net/tcp{,6}: the socket inodes that listen (state 01 after the header) on a server port in `sp`. */
const LISTEN_INODES_AWK =
  'BEGIN{n=split(sp,a," ");for(i=1;i<=n;i++)w[a[i]]=1} FNR>1 && $4=="01" {split($3,r,":"); if (r[2] in w) printf "%s ", $10}';

function sysCase(): string {
  return `case "$_c" in /dev/shm/?*) ;; ${SYSTEM_DIR_PATTERNS.map((x) => (x.endsWith('*') ? `${shq(x.slice(0, -1))}*` : shq(x))).join('|')}) return 0;; esac`;
}

export function buildListingScript(nonce: string, o: ListingOptions = {}): string {
  const depth = Math.max(1, Math.min(32, Math.floor(o.maxDepth ?? 12)));
  const max = Math.max(1, Math.floor(o.maxFiles ?? 100_000));
  const caches = CACHE_DIRS.map((d) => `-name ${shq(d)}`).join(' -o ');
  const volumes = (o.volumes ?? DEFAULT_VOLUMES).map((v) => (v.endsWith('/*') ? `${shq(v.slice(0, -2))}/*` : shq(v))).join(' ');
  const shmSkip = SHM_SKIP.map((s) => s.replace(/[^A-Za-z0-9_*.-]/g, '')).join('|');
  const explicit = o.roots && o.roots.length ? o.roots : null;
  const baseCands = explicit
    ? explicit.map((r) => `cand root - ${remoteRootExpr(r)}`).join('\n')
    : [
        'cand home - "$HOME"',
        `for v in ${volumes}; do [ -d "$v" ] && [ -O "$v" ] && cand volume - "$v"; done`,
        `for e in /dev/shm/* /dev/shm/.[!.]*; do [ -e "$e" ] && [ -O "$e" ] || continue; case "\${e#/dev/shm/}" ` +
          `in ${shmSkip}) continue;; esac; cand shm - "$e"; done`,
        ...(o.addRoots ?? []).map((r) => `cand add-root - ${remoteRootExpr(r)}`),
        ...(o.previousRoots ?? []).map((r) => `cand previous - ${shq(r)}`),
      ].join('\n');
  const evidence = !explicit;
  const prune = [...(o.exclude ?? []).filter((x) => x.startsWith('/')), ...ALWAYS_PRUNED, ...(o.prune ?? [])].map(remoteRootExpr);
  return `
${sectionPrologue(nonce)}
export LC_ALL=C
T=$(mktemp -d 2>/dev/null) || { T="/tmp/gs-list.$$"; mkdir -p "$T"; }
U=$(id -u)
ME=$$
EXCL=" ${(o.excludePids ?? []).filter((n) => Number.isInteger(n) && n > 0).join(' ')} "
: > "$T/c"; : > "$T/servers"; : > "$T/k"; : > "$T/m"; : > "$T/prune"
${prune.length ? `for x in ${prune.join(' ')}; do [ -d "$x" ] && _y=$(cd -- "$x" 2>/dev/null && pwd -P) && x=$_y; case "$x" in /?*) printf '%s\\n' "$x" >> "$T/prune";; esac; done` : ''}
pruned() {
  while IFS= read -r _x; do case "$1" in "$_x"|"$_x"/*) return 0;; esac; done < "$T/prune"
  return 1
}
cand() {
  _c=$3
  case "$_c" in /*) ;; *) return 0;; esac
  [ -e "$_c" ] || return 0
  if [ -d "$_c" ]; then _c=$(cd -- "$_c" 2>/dev/null && pwd -P) || return 0; fi
  ${sysCase()}
  pruned "$_c" && return 0
  printf '%s\\t%s\\t%s\\n' "$1" "$2" "$_c" >> "$T/c"
}
under_base() {
  while IFS= read -r _b; do case "$1" in "$_b"|"$_b"/*) return 0;; esac; done < "$T/base"
  return 1
}
${(o.previousModelDirs ?? [])
  .filter((d) => d.startsWith('/'))
  .map((d) => `[ -d ${shq(d)} ] && printf 'previous\\t%s\\n' ${shq(d)} >> "$T/m"`)
  .join('\n')}
sec home; printf '%s' "$HOME"
sec uid; printf '%s' "$U"
sec scope; printf '%s' "\${${SIM_SCOPE_VAR}:-}"
${baseCands}
SP=" "
SCOPE="\${${SIM_SCOPE_VAR}:-}"
# a simulated node shares this machine's process table: only processes running from its folder are its servers and
# add folders; another's process still counts as a writer when it writes under them
scoped() { [ -z "$SCOPE" ] && return 0; case "$(readlink "$1/cwd" 2>/dev/null)/" in "$SCOPE"/*) return 0;; esac; return 1; }
for f in $(grep -l -a -e sglang /proc/[0-9]*/cmdline 2>/dev/null); do
  d=\${f%/cmdline}; [ -O "$d" ] && scoped "$d" || continue
  tr '\\000' '\\n' < "$f" > "$T/a" 2>/dev/null
  grep -q -x -e 'sglang.launch_server' -e '-msglang.launch_server' -e '.*sglang/launch_server\\.py' -e 'serve' "$T/a" || continue
  port=$(sed -n -e '/^--port$/{n;p;q;}' -e 's/^--port=//p' "$T/a" | head -n 1)
  case "$port" in ''|*[!0-9]*) port=30000;; esac
  SP="$SP$(printf '%04X' "$port") "
  echo "\${d#/proc/}" >> "$T/servers"
  cw=$(readlink "$d/cwd" 2>/dev/null)
  ${evidence ? 'cand server-cwd "${d#/proc/}" "$cw"' : ':'}
  m=$(sed -n -e '/^--model-path$/{n;p;q;}' -e 's/^--model-path=//p' -e '/^--model$/{n;p;q;}' "$T/a" | head -n 1)
  case "$m" in /*) ;; ?*) m="$cw/$m";; esac
  [ -n "$m" ] && [ -d "$m" ] && { printf 'server\\t%s\\n' "$(cd -- "$m" 2>/dev/null && pwd -P)" >> "$T/m"; ${evidence ? 'cand argv "${d#/proc/}" "$m";' : ''} }
done
${
  evidence
    ? `for s in $(cut -f3- "$T/c" |
    while IFS= read -r b; do [ -d "$b" ] && find "$b" -maxdepth 2 -type f \\( ${LAUNCH_SCRIPT_NAMES} \\) 2>/dev/null; done | head -n 50); do
  for x in $(grep -a -o -E -e '(^|[ ="'"'"'(])/[A-Za-z0-9._@+-][A-Za-z0-9._@+/-]*' "$s" 2>/dev/null | sed -e 's/^[ ="'"'"'(]//' | sort -u | head -n 200); do
    [ -d "$x" ] && cand script "$s" "$x"
  done
  grep -a -o -E -e '--model(-path)?[= ]+["'"'"']?/[A-Za-z0-9._@+/-]+' "$s" 2>/dev/null |
    sed -e 's/^--model\\(-path\\)\\{0,1\\}[= ]*["'"'"']\\{0,1\\}//' |
    while IFS= read -r x; do [ -d "$x" ] && printf 'script\\t%s\\n' "$(cd -- "$x" 2>/dev/null && pwd -P)" >> "$T/m"; done
done`
    : ''
}
cut -f3- "$T/c" > "$T/base"
INO=" $(awk -v sp="$SP" '${LISTEN_INODES_AWK}' /proc/net/tcp /proc/net/tcp6 2>/dev/null) "
sec procs
for d in /proc/[0-9]*; do
  p=\${d#/proc/}
  if [ "$p" = "$ME" ] || [ "$p" = "$PPID" ]; then continue; fi
  case "$EXCL" in *" $p "*) continue;; esac
  [ -O "$d" ] && [ -e "$d/exe" ] || continue
  pp=
  while read -r k v; do if [ "$k" = PPid: ]; then pp=$v; break; fi; done < "$d/status" 2>/dev/null
  [ "$pp" = "$ME" ] && continue
  # ours (another operation of this salvage, e.g. the snapshot's temp files) or gone: read before its fds, so one
  # that exits between the two is never taken for a writer (grep: 0 marked, 2 unreadable, 1 someone else's)
  grep -q -a -z -e '^GPU_SESSIONS_OP=' "$d/environ" 2>/dev/null; [ $? -eq 1 ] || continue
  find "$d/cwd" "$d/fd" -maxdepth 1 -printf 'D\\t%d\\t%f\\t%l\\000' -fprintf "$T/fd" '%d %f %l\\n' > "$T/fdz" 2>/dev/null
  q=
  grep -q -x -e "$p" "$T/servers" && q=s
  cwd=
  : > "$T/pc"
  while read -r dep nm tg; do
    if [ "$dep" = 0 ]; then [ "$nm" = cwd ] && cwd=$tg; continue; fi
    case "$tg" in
      socket:\\[*) i=\${tg#socket:[}; i=\${i%]}; case "$INO" in *" $i "*) q="\${q}n";; esac;;
      /*) if under_base "$tg"; then
          fl=; while read -r k v; do if [ "$k" = flags: ]; then fl=$v; break; fi; done < "$d/fdinfo/$nm" 2>/dev/null
          case "$fl" in *[1235679]) q="\${q}f";; esac
        fi
        printf '%s\\n' "\${tg%/*}" >> "$T/pc";;
    esac
  done < "$T/fd"
  [ -n "$cwd" ] && under_base "$cwd" && q="\${q}c"
  [ -z "$q" ] && [ ! -s "$T/pc" ] && continue
  printf 'P\\t%s\\t%s\\t%s\\000' "$p" "$pp" "$q"
  cat "$T/fdz"
  printf 'A\\t'; tr '\\000' '\\037' < "$d/cmdline" 2>/dev/null; printf '\\000'
  printf 'I\\t'; grep -s -H '^flags' "$d"/fdinfo/* 2>/dev/null; printf '\\000'
  ${
    evidence
      ? `if [ -n "$q" ] && scoped "$d"; then
    [ -n "$cwd" ] && cand proc-cwd "$p" "$cwd"
    sort -u "$T/pc" | while IFS= read -r x; do cand proc-fd "$p" "$x"; done
    tr '\\000' '\\n' < "$d/cmdline" 2>/dev/null | while IFS= read -r a; do a=\${a#--*=}; case "$a" in /*) [ -d "$a" ] && cand argv "$p" "$a";; esac; done
  fi`
      : ':'
  }
done
sec cands; cat "$T/c"
sec models; cat "$T/m"
sec hfmeta
${downloadMetadataScript('$T/m')}
cut -f3- "$T/c" | sed 's|$|/|' | sort -u | awk 'k != "" && index($0, k) == 1 { next } { k = $0; print }' | sed 's|/$||' > "$T/roots"
sec roots; cat "$T/roots"
sec realroots; while IFS= read -r r; do readlink -f -- "$r" 2>/dev/null || printf '%s\\n' "$r"; done < "$T/roots"
sec files
set --
while IFS= read -r r; do set -- "$@" "$r"; done < "$T/roots"
if [ $# -gt 0 ]; then
  set -- "$@" -maxdepth ${depth + 1}
  # a pruned folder is never entered (find -path takes a pattern: its glob characters are escaped)
  while IFS= read -r x; do set -- "$@" -path "$(printf '%s\\n' "$x" | sed 's/[][*?\\\\]/\\\\&/g')" -prune -o; done < "$T/prune"
  find "$@" \\( -type d -name .git -printf 'G\\t%d\\t0\\t0\\t%h\\000' -prune \\) \\
    -o \\( -type d \\( ${caches} \\) -printf 'C\\t%d\\t0\\t0\\t%p\\000' -fprintf "$T/k" '%p\\n' -prune \\) \\
    -o \\( -type f -printf 'F\\t%d\\t%s\\t%T@\\t%p\\000' \\) \\
    -o \\( -type l -printf 'L\\t%d\\t%s\\t%T@\\t%p\\t%l\\000' \\) \\
    -o \\( -type d -printf 'd\\t%d\\t0\\t0\\t%p\\000' \\) 2>/dev/null | head -z -n ${max + 1}
fi
sec caches
[ -s "$T/k" ] && xargs -d '\\n' -r sh -c 'find "$@" -type f -printf "%H\\t%s\\n" 2>/dev/null' _ < "$T/k" |
  awk -F'\\t' '{n[$1]++; s[$1]+=$2} END {for (k in n) printf "%s\\t%d\\t%.0f\\n", k, n[k], s[k]}'
rm -rf "$T"
sec end
`;
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
export function writesFlag(flags: number | null): boolean {
  return flags !== null && (flags & 3) !== 0;
}

export function parseListing(text: string, nonce: string, o: ListingOptions = {}): SalvageListing {
  const s = splitSections(text, nonce);
  const depth = Math.max(1, Math.min(32, Math.floor(o.maxDepth ?? 12)));
  const max = Math.max(1, Math.floor(o.maxFiles ?? 100_000));
  const home = (s.get('home') ?? '').trim();
  const uidText = (s.get('uid') ?? '').trim();

  // --- processes
  const processes: ListedProcess[] = [];
  let cur: ListedProcess | null = null;
  for (const rec0 of (s.get('procs') ?? '').split('\0')) {
    const rec = rec0.replace(/^\n/, '');
    if (!rec) continue;
    const tab = rec.indexOf('\t');
    const tag = rec.slice(0, tab);
    const body = rec.slice(tab + 1);
    if (tag === 'P') {
      const [pid, ppid, ev] = body.split('\t');
      cur = { pid: Number(pid), ppid: /^\d+$/.test(ppid ?? '') ? Number(ppid) : null, cwd: null, argv: [], fds: [], evidence: ev ?? '' };
      if (Number.isInteger(cur.pid)) processes.push(cur);
      continue;
    }
    if (!cur) continue;
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
  const byPid = new Map(processes.map((p) => [p.pid, p]));

  // --- roots and why
  const cands: Array<{ why: string; detail: string; path: string }> = [];
  for (const l of (s.get('cands') ?? '').split('\n')) {
    const f = l.split('\t');
    if (f.length < 3) continue;
    cands.push({ why: f[0], detail: f[1], path: f.slice(2).join('\t') });
  }
  const rootPaths = (s.get('roots') ?? '')
    .split('\n')
    .map((l) => l)
    .filter((l) => l.startsWith('/'));
  const roots: RootInfo[] = rootPaths.map((r) => {
    const under = cands.filter((c) => isUnder(c.path, r));
    const order = ['root', 'home', 'add-root', 'volume', 'shm', 'server-cwd', 'proc-cwd', 'proc-fd', 'argv', 'script', 'previous'];
    under.sort((a, b) => order.indexOf(a.why) - order.indexOf(b.why));
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
  const realRoots = (s.get('realroots') ?? '')
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);

  // --- files
  const files: ListedFile[] = [];
  const cacheSet = new Map<string, CacheDir>();
  let count = 0;
  let truncated = false;
  let beyond = 0;
  const seen = new Set<string>();
  for (const rec0 of (s.get('files') ?? '').split('\0')) {
    const x = rec0.replace(/^\n/, '');
    if (!x) continue;
    if (++count > max) {
      truncated = true;
      break;
    }
    const f = x.split('\t');
    const tag = f[0];
    const dep = Number(f[1]);
    const mtime = new Date(Math.round(Number(f[3]) * 1000) || 0).toISOString();
    if (tag === 'G') {
      const p = f.slice(4).join('\t');
      if (dep <= depth + 1 && !seen.has('G' + p)) {
        seen.add('G' + p);
        files.push({ path: p, kind: 'git-repo', size: 0, mtime: new Date(0).toISOString() });
      }
      continue;
    }
    if (tag === 'C') {
      const p = f.slice(4).join('\t');
      if (dep > depth) {
        beyond++;
        continue;
      }
      cacheSet.set(p, { path: p, files: 0, bytes: 0 });
      continue;
    }
    if (dep > depth) {
      beyond++;
      continue;
    }
    if (tag === 'd') continue;
    if (tag === 'L') {
      const p = f[4];
      if (seen.has(p)) continue;
      seen.add(p);
      files.push({ path: p, kind: 'symlink', size: Number(f[2]) || 0, mtime, linkTarget: f.slice(5).join('\t') });
      continue;
    }
    if (tag !== 'F') continue;
    const p = f.slice(4).join('\t');
    if (seen.has(p)) continue;
    seen.add(p);
    files.push({ path: p, kind: classifySalvage(p), size: Number(f[2]) || 0, mtime });
  }
  for (const l of (s.get('caches') ?? '').split('\n')) {
    const f = l.split('\t');
    if (f.length < 3) continue;
    const bytes = Number(f[f.length - 1]);
    const n = Number(f[f.length - 2]);
    const p = f.slice(0, -2).join('\t');
    const c = cacheSet.get(p);
    if (c) Object.assign(c, { files: n || 0, bytes: bytes || 0 });
  }
  // the Hugging Face download metadata that proves where left weights come from is listed as files: it comes home
  // with the salvage (its `.cache` folder is otherwise left as a cache)
  const hub = parseDownloadMetadata(s.get('hfmeta') ?? '');
  for (const f of hub.files)
    if (!seen.has(f.path)) {
      seen.add(f.path);
      files.push({ path: f.path, kind: 'other', size: f.size, mtime: f.mtime ?? new Date(0).toISOString() });
    }
  const excluded = (p: string) => (o.exclude ?? []).some((x) => isUnder(p, x));
  for (let i = files.length - 1; i >= 0; i--) if (excluded(files[i].path)) files.splice(i, 1);
  for (const k of [...cacheSet.keys()]) if (excluded(k)) cacheSet.delete(k);
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));

  // --- servers, writers, model folders
  const ownProcs = processes.filter((p) => p.argv.length);
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
  // a simulated node shares this machine's process table: only the servers running from its own folder are its own
  // (as the probe lists them: scopeServers); on a real node the scope is empty and every own server counts
  const scope = (s.get('scope') ?? '').trim();
  if (scope) servers.splice(0, servers.length, ...scopeServers(servers, scope));
  const serverPids = new Set(servers.map((x) => x.pid));
  const rootsForWrites = rootPaths.length ? rootPaths : realRoots;
  const writers: Writer[] = [];
  for (const p of ownProcs) {
    const writes = p.fds
      .filter((f) => writesFlag(f.flags) && f.target.startsWith('/') && !f.target.startsWith('/dev/'))
      .map((f) => f.target.replace(/ \(deleted\)$/, ''))
      .filter((t) => rootsForWrites.some((r) => isUnder(t, r)));
    const server = serverPids.has(p.pid);
    // A server's children (schedulers, detokenizer) are part of it: listed once, as the server.
    if (!server && ancestorIn(p, byPid, serverPids)) continue;
    if (server || writes.length || p.evidence.includes('n')) {
      writers.push({ pid: p.pid, argv: p.argv, server, writes: [...new Set(writes)].sort() });
    }
  }
  writers.sort((a, b) => Number(b.server) - Number(a.server) || a.pid - b.pid);
  const modelDirs = new Set<string>();
  for (const l of (s.get('models') ?? '').split('\n')) {
    const f = l.split('\t');
    if (f.length >= 2 && f[1].startsWith('/')) modelDirs.add(f.slice(1).join('\t'));
  }
  for (const srv of servers) if (srv.modelPath && srv.modelPath.startsWith('/')) modelDirs.add(srv.modelPath.replace(/\/+$/, ''));
  // A model folder that is also a work folder (or the home) would make everything "re-downloadable".
  for (const d of [...modelDirs]) if (d === home || rootPaths.includes(d) || isSystemDir(d)) modelDirs.delete(d);

  const notListed = truncated ? Math.max(1, count - max) : beyond;
  return {
    home,
    uid: /^\d+$/.test(uidText) ? Number(uidText) : null,
    roots,
    realRoots,
    files,
    caches: [...cacheSet.values()].sort((a, b) => (a.path < b.path ? -1 : 1)),
    processes,
    servers,
    writers,
    modelDirs: [...modelDirs].sort(),
    hubMeta: hub.origins,
    truncated: truncated || beyond > 0,
    notListed,
    bound: truncated ? 'max-files' : beyond > 0 ? 'max-depth' : null,
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

/** The node guard's own folder (issue 47): its state, journal and upload credential. Never listed by salvage. */
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
