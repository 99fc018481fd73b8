/**
 * What restore may write on the new node, decided from paths alone (the node-side symlink checks are in
 * nodeOps.ts). The run folder came from a node we treat as hostile, so every remote path is checked as text
 * before it is mapped: no empty, `.` or `..` component (`$HOME//.ssh/x` is refused, not normalised), nothing
 * under /proc, /dev or /sys (`/proc/self/cwd/...` is the home of an exec session) or a system folder; and what
 * runs by itself on the new node — the home's dotfiles and dot-folders (shell start-up files, ~/.ssh,
 * ~/.config/git, user-site site-packages, .gitconfig), any `.ssh` folder, a repository's `.git/config` and
 * `.git/hooks` — is kept as the new node has it unless the user names it (`--include-dotfiles`).
 */
import { isUnder } from '../salvage/dest/paths';

/** Folders restore never writes into (the kernel's views, and what the system runs). */
const SYSTEM = [
  '/proc',
  '/dev',
  '/sys',
  '/etc',
  '/boot',
  '/run',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/var/spool',
];

/** Shell and tool start-up files: run at login or by the tools the user (and the product) start. */
const STARTUP = new Set([
  '.bashrc',
  '.bash_profile',
  '.bash_login',
  '.bash_logout',
  '.profile',
  '.zshrc',
  '.zprofile',
  '.zshenv',
  '.zlogin',
  '.zlogout',
  '.cshrc',
  '.tcshrc',
  '.login',
  '.logout',
  '.kshrc',
  '.inputrc',
  '.pam_environment',
  '.gitconfig',
  '.netrc',
  '.pythonrc',
  '.pythonstartup',
]);

/**
 * Why a path of the old node (or its mapped target) is refused outright, or null. Refused items are reported
 * failed with this reason; nothing is written for them.
 */
export function refusedPath(p: string): string | null {
  if (!p.startsWith('/')) return 'the path is not absolute';
  if (p.length > 1 && p.endsWith('/')) return 'the path ends with "/"';
  const parts = p.slice(1).split('/');
  if (parts.some((c) => c === '')) return 'the path has an empty component ("//")';
  if (parts.some((c) => c === '.' || c === '..')) return 'the path has "." or ".." components';
  if (/[\0]/.test(p)) return 'the path holds a NUL byte';
  const sys = SYSTEM.find((d) => isUnder(p, d));
  if (sys) return `it is under ${sys}, a system folder restore never writes (only the work's folders)`;
  return null;
}

/**
 * Why a target on the new node is protected (kept as the new node has it unless the user names it), or null.
 * `newHome` is the new node's home.
 */
export function protectedReason(target: string, newHome: string): string | null {
  const parts = target.split('/');
  const base = parts[parts.length - 1];
  if (isUnder(target, newHome) && target !== newHome) {
    const first = target.slice(newHome === '/' ? 1 : newHome.length + 1).split('/')[0];
    if (first === '.ssh') return "the new node's ssh setup (~/.ssh) is never replaced";
    if (STARTUP.has(first)) return `${first} runs at login or when tools start: the new node's own is kept`;
    if (first.startsWith('.'))
      return `a dotfile of the home (${first}): shell, git, python and tool settings run by themselves; the new node's own is kept`;
  }
  if (parts.includes('.ssh')) return 'an .ssh folder (keys, authorized_keys, rc) is never written';
  if (STARTUP.has(base)) return `${base} runs at login or when tools start`;
  const g = parts.indexOf('.git');
  if (g >= 0 && (parts[g + 1] === 'config' || parts[g + 1] === 'hooks'))
    return "a repository's .git/config or .git/hooks runs commands at git's next call";
  return null;
}

/** Does the user's `--include-dotfiles` list name this target (itself or a folder above it)? */
export function includedByUser(target: string, include: readonly string[]): boolean {
  return include.some((i) => isUnder(target, i));
}

/** `--include-dotfiles` entries as absolute paths on the new node (`~/x`, `x` relative to the home, or `/abs`). */
export function resolveIncludes(include: readonly string[], newHome: string): string[] {
  const out: string[] = [];
  for (const raw of include)
    for (const one of raw.split(',')) {
      const s = one.trim().replace(/\/+$/, '');
      if (!s) continue;
      const abs = s.startsWith('/') ? s : s === '~' ? newHome : s.startsWith('~/') ? `${newHome}/${s.slice(2)}` : `${newHome}/${s}`;
      if (refusedPath(abs) === null) out.push(abs);
    }
  return out;
}

/**
 * The mode restore gives a file: its permission bits without setuid, setgid, sticky, group-write or
 * world-write (a salvaged `4755` becomes `755`, a `0777` `755`).
 */
export function safeMode(mode: string | number): string {
  const n = typeof mode === 'number' ? mode : /^[0-7]{1,6}$/.test(mode) ? Number.parseInt(mode, 8) : 0o644;
  return (n & 0o755).toString(8).padStart(3, '0');
}

/**
 * A symlink the salvage recorded, checked as text: its target (resolved against the link's folder) must not
 * be a protected path, a system folder, or the new home or a folder above it (a link the job or the user would
 * later write through). Links out to other folders (`latest -> /models/llama`) are kept: restore itself never
 * writes through a link (nodeOps checks every parent on the node). Null when it may be made.
 */
export function refusedLink(link: string, linkTarget: string, newHome: string): string | null {
  if (linkTarget.includes('\0') || linkTarget === '') return 'its target is empty or holds a NUL byte';
  const dir = link.slice(0, link.lastIndexOf('/')) || '/';
  const abs = linkTarget.startsWith('/') ? linkTarget : `${dir}/${linkTarget}`;
  const out: string[] = [];
  for (const c of abs.split('/')) {
    if (c === '' || c === '.') continue;
    if (c === '..') out.pop();
    else out.push(c);
  }
  const resolved = '/' + out.join('/');
  if (isUnder(newHome, resolved)) return `it points at the home or a folder above it (${linkTarget} → ${resolved})`;
  const sys = refusedPath(resolved);
  if (sys) return `it points at ${resolved}: ${sys}`;
  const prot = protectedReason(resolved, newHome);
  if (prot) return `it points at a protected path ${resolved}: ${prot}`;
  return null;
}

/**
 * Why a salvaged `git diff` may not be applied in `repo` on the new node, or null: a path it touches that is
 * protected or leaves the repository, or a symlink it creates that refusedLink refuses (a diff that makes
 * `evil -> ../.ssh` would let later writes land in ~/.ssh).
 */
export function refusedPatch(patch: string, repo: string, newHome: string): string | null {
  const lines = patch.split('\n');
  let file: string | null = null;
  let linkMode = false;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const d = /^diff --git a\/(.*) b\/(.*)$/.exec(l);
    if (d) {
      file = d[2];
      linkMode = false;
      for (const p of [d[1], d[2]]) {
        const abs = `${repo}/${p}`;
        const bad = refusedPath(abs) ?? protectedReason(abs, newHome);
        if (bad) return `it touches ${p}: ${bad}`;
      }
      continue;
    }
    if (/^(new file mode|new mode) 120000$/.test(l)) linkMode = true;
    else if (linkMode && file !== null && l.startsWith('+') && !l.startsWith('+++')) {
      const bad = refusedLink(`${repo}/${file}`, l.slice(1), newHome);
      if (bad) return `it creates the symlink ${file}, and ${bad}`;
      linkMode = false;
    }
  }
  return null;
}
