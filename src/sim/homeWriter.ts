/**
 * HomeWriter (every write of the sim home builder stays inside the home) and its small deterministic helpers.
 */
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

// ------------------------------------------------------------------------------------ helpers

/** All writes go through this, so nothing lands outside the home. */
export class HomeWriter {
  constructor(readonly home: string) {}

  private abs(rel: string): string {
    const p = path.resolve(this.home, rel);
    if (!isInside(this.home, p)) throw new Error(`refusing to write outside the sim home: ${p}`);
    return p;
  }

  mkdir(rel: string, mode?: number): string {
    const p = this.abs(rel);
    mkdirSync(p, { recursive: true });
    if (mode !== undefined) chmodSync(p, mode);
    return p;
  }

  file(rel: string, content: string | Buffer, mode = 0o644): void {
    const p = this.abs(rel);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, content);
    chmodSync(p, mode); // writeFileSync's mode only applies when the file is created
  }

  copy(src: string, rel: string, mode: number): void {
    const p = this.abs(rel);
    mkdirSync(path.dirname(p), { recursive: true });
    cpSync(src, p);
    chmodSync(p, mode);
  }

  /** Replaces the directory with a fresh copy (no stale files, no __pycache__). */
  copyDir(src: string, rel: string): void {
    const p = this.abs(rel);
    rmSync(p, { recursive: true, force: true });
    cpSync(src, p, { recursive: true, filter: (s) => !/(__pycache__|\.pyc$)/.test(s) });
  }
}

export function isInside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

export function stripUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== null)) as Partial<T>;
}

/** A stable GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx UUID. */
export function gpuUuid(seed: string): string {
  const h = createHash('md5').update(seed).digest('hex');
  return `GPU-${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

/** Small deterministic PRNG (mulberry32) so repeated builds write identical files. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** `YYYY-MM-DD HH:MM:SS` of a UTC epoch-ms value (the artifacts use fixed 2026 dates). */
export function stamp(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}
