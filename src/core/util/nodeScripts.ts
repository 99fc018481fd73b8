/**
 * The scripts that run ON a node, kept as real files under src/core (`data/data.py`, `gateway/gateways.py`,
 * `guard/*.py`, `salvage/plan/listing.sh`) so that `npm run lint` checks them (pyflakes, shellcheck). The CLI and
 * extension bundles carry their text (scripts/nodeScripts.mjs, used by scripts/build.mjs and scripts/package.mjs,
 * defines GS_NODE_SCRIPTS); compiled with tsc (tests), they are read from src/core above this file.
 */
import { existsSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

declare const GS_NODE_SCRIPTS: Record<string, string> | undefined;

/** src/core above this module (out/src/core/util when compiled with tsc). */
function coreDir(rel: string): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    const c = path.join(dir, 'src', 'core');
    if (existsSync(path.join(c, rel))) return c;
    if (path.dirname(dir) === dir) throw new Error(`src/core/${rel} not found above ${__dirname}`);
  }
}

/** The text of a node script, by its path under src/core (e.g. `data/data.py`). */
export function nodeScript(rel: string): string {
  if (typeof GS_NODE_SCRIPTS !== 'undefined' && GS_NODE_SCRIPTS[rel] !== undefined) return GS_NODE_SCRIPTS[rel];
  return readFileSync(path.join(coreDir(rel), rel), 'utf8');
}
