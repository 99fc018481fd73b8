// The scripts that run on a node (src/core/**/*.py and *.sh, the node guard's included): their text, keyed by the
// path under src/core, for esbuild's `define` of GS_NODE_SCRIPTS (src/core/util/nodeScripts.ts). Used by
// scripts/build.mjs and scripts/package.mjs.
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

/** Paths under src/core of every node script, sorted. */
export function nodeScriptFiles(root) {
  const core = path.join(root, 'src', 'core');
  const out = [];
  const walk = (rel) => {
    for (const e of readdirSync(path.join(core, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (e.name !== '__pycache__') walk(r);
      } else if (/\.(py|sh)$/.test(e.name)) out.push(r);
    }
  };
  walk('');
  return out.sort();
}

/** The `define` value of GS_NODE_SCRIPTS: a JSON object of path → text. */
export function nodeScriptsDefine(root) {
  return JSON.stringify(Object.fromEntries(nodeScriptFiles(root).map((f) => [f, readFileSync(path.join(root, 'src', 'core', f), 'utf8')])));
}
