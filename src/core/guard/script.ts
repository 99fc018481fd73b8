/**
 * The node guard's Python files (issue 47): real .py files next to this module, linted with pyflakes. The CLI and
 * extension bundles carry their text (scripts/build.mjs defines GS_GUARD_FILES); compiled with tsc (tests), they
 * are read from src/core/guard/ above this file.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

declare const GS_GUARD_FILES: Record<string, string> | undefined;

export const GUARD_PY_FILES = ['guard.py', 'provider.py', 'seen.py'] as const;
export type GuardPyFile = (typeof GUARD_PY_FILES)[number];

function sourceDir(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const c = path.join(dir, 'src', 'core', 'guard');
    if (existsSync(path.join(c, 'guard.py'))) return c;
    if (existsSync(path.join(dir, 'guard.py'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`src/core/guard/guard.py not found above ${__dirname}`);
  }
}

export function guardPy(name: GuardPyFile): string {
  if (typeof GS_GUARD_FILES !== 'undefined' && GS_GUARD_FILES[name]) return GS_GUARD_FILES[name];
  return readFileSync(path.join(sourceDir(), name), 'utf8');
}
