/**
 * Small helpers of the salvage run: the local copy record, loopback, file items, roots, write errors, the snapshot.
 */
import { existsSync, mkdirSync, rmSync } from 'node:fs';
import * as path from 'node:path';
import { SglangServer } from '../sglang/serverArgv';
import { Transport } from '../ssh/transport';
import { RootInfo } from './plan/listing';
import { SalvageItem } from './salvageTypes';

export interface LocalBase {
  /** Bytes of the verified local copy. */
  size: number;
  mtime: string;
  sha256: string;
  /** SHA-256 of the local file (differs from sha256 when it was written redacted). */
  localSha256: string;
  redacted: boolean;
  md5: string | null;
  /** Trusted without re-hashing (written by this run). */
  trusted: boolean;
}

export const PREVIOUS_WHY = 'found by an earlier salvage';

/** Files the salvage copies (not git state, generated scripts, caches or symlinks). */
export function isFileItem(i: SalvageItem): boolean {
  return !!i.localPath && i.kind !== 'git-state' && i.kind !== 'server-cmdline' && i.kind !== 'cache' && i.kind !== 'symlink';
}

export function mergeRoots(a: RootInfo[], b: RootInfo[]): RootInfo[] {
  const out = [...a];
  for (const r of b) if (!out.some((x) => x.path === r.path)) out.push(r);
  return out;
}

/** Node's recursive mkdir can report ENOENT for a read-only or unwritable parent: find the real cause. */
export function diagnoseWrite(dir: string, e: unknown): unknown {
  if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return e;
  let p = path.dirname(dir);
  while (!existsSync(p) && path.dirname(p) !== p) p = path.dirname(p);
  try {
    mkdirSync(path.join(p, `.gs-write-test-${process.pid}`));
    rmSync(path.join(p, `.gs-write-test-${process.pid}`), { recursive: true, force: true });
  } catch (e2) {
    return e2;
  }
  return e;
}

export type SnapshotResult = { json: unknown; markdown: string; summary: string };

export async function defaultSnapshot(t: Transport, node: string, servers: SglangServer[]): Promise<SnapshotResult> {
  const { takeSnapshot, renderSnapshotMarkdown } = await import('./snapshot/snapshot');
  const s = await takeSnapshot(
    t,
    node,
    servers.map((x) => ({ pid: x.pid, port: x.port, host: x.host, enableMetrics: x.enableMetrics })),
  );
  const gpus = (s.gpus.smiQ.match(/Product Name\s*:\s*(.*)/g) ?? []).length;
  const summary =
    `${s.hostname ?? node}: ${s.os ?? '?'}, driver ${s.gpus.driverVersion ?? '—'}, CUDA ${s.gpus.cudaVersion ?? '—'}, ` +
    `${gpus} GPU(s), Python ${s.python.version ?? '?'}, sglang ${s.keyPackages['sglang'] ?? '—'}, torch ${s.keyPackages['torch'] ?? '—'}`;
  return { json: s, markdown: renderSnapshotMarkdown(s), summary };
}
