// Writes the JSON schemas generated from the documents' zod schemas: schemas/launch-profile.schema.json (VS Code
// validates .gpu-sessions/launch/*.json with it, package.json's jsonValidation) from launchProfileJsonSchema() of
// src/core/launch/profileJsonSchema.ts (the zod schema of profileSchema.ts), bundled in memory with esbuild and
// formatted by prettier with the project's settings. A unit test (test/unit/launch/profile.test.ts) regenerates it
// and fails when the file differs.
//   npm run gen:schemas            write the file
//   npm run gen:schemas -- --check exit 1 when the committed file is not the generated one
import { build } from 'esbuild';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as prettier from 'prettier';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const check = process.argv.includes('--check');

/** The exports of a TypeScript module of src, bundled (zod included) and loaded in memory. */
async function load(entry) {
  const r = await build({
    entryPoints: [path.join(ROOT, entry)],
    bundle: true,
    write: false,
    format: 'cjs',
    platform: 'node',
    logLevel: 'error',
  });
  const mod = { exports: {} };
  new Function('module', 'exports', 'require', r.outputFiles[0].text)(mod, mod.exports, createRequire(path.join(ROOT, entry)));
  return mod.exports;
}

const SCHEMAS = [['schemas/launch-profile.schema.json', 'src/core/launch/profileJsonSchema.ts', 'launchProfileJsonSchema']];

let stale = 0;
for (const [file, entry, fn] of SCHEMAS) {
  const out = path.join(ROOT, file);
  const options = { ...(await prettier.resolveConfig(out)), filepath: out };
  const text = await prettier.format(JSON.stringify((await load(entry))[fn]()), options);
  const old = (() => {
    try {
      return readFileSync(out, 'utf8');
    } catch {
      return null;
    }
  })();
  if (old === text) continue;
  if (check) {
    console.error(`${file}: not the schema ${entry} generates; run npm run gen:schemas`);
    stale++;
  } else {
    writeFileSync(out, text);
    console.log(`wrote ${file}`);
  }
}
process.exit(stale ? 1 : 0);
