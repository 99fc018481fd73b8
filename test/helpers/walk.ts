import { readdirSync } from 'node:fs';
import * as path from 'node:path';

/** Every file (and link) under `dir`, absolute, depth first. */
export function walk(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...walk(p));
    else out.push(p);
  }
  return out;
}
