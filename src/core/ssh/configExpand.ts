/**
 * Token, tilde and environment expansion, and Include globbing, as OpenSSH does them.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { matchPattern } from './knownHosts';

// ---------------------------------------------------------------------------------------------------------------
// Token expansion
// ---------------------------------------------------------------------------------------------------------------

export function expandPercent(s: string, tokens: Record<string, string>): string {
  return s.replace(/%(.)/g, (m, c: string) => (c === '%' ? '%' : Object.prototype.hasOwnProperty.call(tokens, c) ? tokens[c] : m));
}

export function expandTilde(p: string, homeDir: string, localUser: string): string {
  if (p === '~') return homeDir;
  if (p.startsWith('~/')) return path.join(homeDir, p.slice(2));
  const m = /^~([^/]+)(\/.*)?$/.exec(p);
  if (m && m[1] === localUser) return path.join(homeDir, m[2] ? m[2].slice(1) : '');
  return p;
}

export function expandEnv(p: string): string {
  return p.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name: string) => process.env[name] ?? m);
}

export function safeLocalUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER || process.env.USERNAME || '';
  }
}

export function safeUid(): string {
  try {
    return String(os.userInfo().uid);
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Include globbing
// ---------------------------------------------------------------------------------------------------------------

export function hasGlob(s: string): boolean {
  return /[*?]/.test(s);
}

/** Paths matching `pattern` (`*` and `?` in any path component, like glob(3) without `[...]`), sorted. */
export function globPaths(pattern: string): string[] {
  const root = path.parse(pattern).root;
  const parts = pattern
    .slice(root.length)
    .split(/[\\/]+/)
    .filter(Boolean);
  let bases = [root];
  for (let i = 0; i < parts.length; i++) {
    const seg = parts[i];
    const next: string[] = [];
    for (const b of bases) {
      if (!hasGlob(seg)) {
        next.push(path.join(b, seg));
        continue;
      }
      let names: string[];
      try {
        names = fs.readdirSync(b);
      } catch {
        continue;
      }
      for (const n of names.sort()) {
        if (n.startsWith('.') && !seg.startsWith('.')) continue; // glob(3): * and ? do not match a leading dot
        if (matchPattern(n, seg)) next.push(path.join(b, n));
      }
    }
    bases = next;
    if (bases.length === 0) break;
  }
  return bases;
}
