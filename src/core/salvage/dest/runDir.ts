/**
 * The run folder: continue the node's latest run or start a timestamped one; atomic writes and file hashes.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, readdirSync, renameSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { SalvageManifest } from '../salvageTypes';
import { withJournal } from './journal';
import { readManifest } from '../manifestSchema';

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

export function safeNodeName(n: string): string {
  return n.replace(/[^A-Za-z0-9._@-]+/g, '_').replace(/^\.+/, '_') || 'node';
}

/**
 * The folder to use: the latest run of this node is continued (a rerun on an unchanged node transfers
 * nothing); a new timestamped folder only for the first run.
 */
export function chooseRunDir(base: string, node: string, now: Date): { dir: string; previous: SalvageManifest | null } {
  const nodeDir = path.join(path.resolve(base), safeNodeName(node));
  if (existsSync(nodeDir)) {
    const runs = readdirSync(nodeDir)
      .filter((d) => /^\d{8}-\d{6}$/.test(d))
      .sort();
    const last = runs[runs.length - 1];
    if (last) {
      const dir = path.join(nodeDir, last);
      // No readable manifest: the run died before writing one; reuse the folder. A damaged one throws (never overwritten).
      const previous = readManifest(dir);
      // A run cut before its verdict: the files it verified since its last manifest snapshot are in its journal.
      return { dir, previous: withJournal(dir, previous) };
    }
  }
  return { dir: path.join(nodeDir, stamp(now)), previous: null };
}

export async function sha256File(abs: string, limit?: number): Promise<string | null> {
  return new Promise((resolve) => {
    const h = createHash('sha256');
    const s = createReadStream(abs, limit !== undefined ? { start: 0, end: limit - 1 } : {});
    s.on('data', (b) => h.update(b));
    s.on('end', () => resolve(h.digest('hex')));
    s.on('error', () => resolve(null));
  });
}

export function writeAtomic(abs: string, content: string): void {
  const tmp = abs + '.gs-tmp';
  writeFileSync(tmp, content);
  renameSync(tmp, abs);
}
