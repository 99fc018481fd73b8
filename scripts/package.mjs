// Builds the .vsix: `npm run package` (options: --out FILE, --no-minify, --quiet).
//
// The dev build (scripts/build.mjs) keeps ssh2 and @aws-sdk/* external: they load lazily from
// node_modules. A .vsix has no node_modules (`vsce --no-dependencies`), so the extension is bundled
// a second time here and every such external becomes its own minified bundle in dist/vendor/
// (loaded by the same lazy require). ssh2's `.node` binding and cpu-features are not shipped: ssh2
// catches their absence and uses its JS/WASM ciphers, which keeps the .vsix platform-neutral.
// Shipping production node_modules instead (vsce with dependencies) would add ~20 MB of
// @aws-sdk/@smithy files and a linux-x64 binding.
//
// vsce runs in a staging folder (.tmp/vsix-stage) holding only what is shipped, so the repository's
// dist/ is never overwritten; .vscodeignore (an allow-list) applies there and to a plain
// `vsce package` at the root alike. The demo node needs the simulator's assets at run time (found by walking
// up from dist/, see src/sim/home.ts simAssetsDir), so src/sim/python and src/sim/bin are shipped.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { builtinModules, createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { nodeScriptsDefine } from './nodeScripts.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const opt = (name) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const minify = !args.includes('--no-minify');
const quiet = args.includes('--quiet');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
const out = path.resolve(root, opt('--out') ?? `${pkg.name}-${pkg.version}.vsix`);
const stage = path.join(root, '.tmp', 'vsix-stage');
const say = (m) => quiet || console.log(`package: ${m}`);
const t0 = Date.now();

function run(cmd, argv, cwd) {
  const r = spawnSync(cmd, argv, {
    cwd,
    stdio: quiet ? ['ignore', 'pipe', 'inherit'] : 'inherit',
    timeout: 300_000,
    env: { ...process.env, npm_config_yes: 'true' },
  });
  if (r.status !== 0) {
    console.error(`package: ${cmd} ${argv.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
    process.exit(r.status || 1);
  }
}

// 1. The repository's own build (dist/ for the CLI, tests and the dev extension host).
run(process.execPath, [path.join(root, 'scripts', 'build.mjs')], root);

// 2. Stage: only what is shipped.
rmSync(stage, { recursive: true, force: true });
mkdirSync(path.join(stage, 'dist', 'vendor'), { recursive: true });

// What the dev build leaves external (other than vscode and Node's own modules) is loaded lazily from
// node_modules (ssh2 on the first connection, @aws-sdk/client-s3 when a salvage checks S3). The
// .vsix has no node_modules: each becomes its own bundle in dist/vendor/, required by the same
// lazy call, so activation still parses none of them.
const devBundle = readFileSync(path.join(root, 'dist', 'extension.js'), 'utf8');
const vendored = [...new Set([...devBundle.matchAll(/require\("([^".][^"]*)"\)/g)].map((m) => m[1]))]
  // ssh2's own modules (the CLI's client-only load) are not vendored: the package takes ssh2 whole (GS_SSH2_WHOLE)
  .filter((n) => n !== 'vscode' && !isBuiltin(n) && !n.startsWith('ssh2/'))
  .sort();
const vendorFile = (name) => `${name.replace(/^@/, '').replace(/[^a-zA-Z0-9.-]+/g, '-')}.js`;
const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  minify,
  // Libraries compare class names at run time (ssh2's channel cleanup skips a server Session by
  // `constructor.name === 'Session'`; renamed, the demo node's server threw on every closed connection).
  keepNames: true,
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  // ssh2's optional native binding and cpu-features: ssh2 catches their absence (JS/WASM ciphers).
  external: ['vscode', '*.node', 'cpu-features'],
  // one copy of ssh2 in the package: see loadSsh2Client (src/core/ssh/lazySsh2.ts)
  define: {
    'process.env.GS_SSH2_WHOLE': '"1"',
    // the scripts that run on a node travel as text inside the bundle, as in scripts/build.mjs (util/nodeScripts.ts)
    GS_NODE_SCRIPTS: nodeScriptsDefine(root),
  },
};
const vendorPlugin = {
  name: 'vendor',
  setup(b) {
    for (const name of vendored) {
      b.onResolve({ filter: new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`) }, () => ({
        path: `./vendor/${vendorFile(name)}`,
        external: true,
      }));
    }
    // never reached in the package (GS_SSH2_WHOLE), so left as they are rather than bundled a second time
    b.onResolve({ filter: /^ssh2\// }, (a) => ({ path: a.path, external: true }));
  },
};
const req = createRequire(path.join(root, 'package.json'));
const builds = [
  build({
    ...common,
    entryPoints: [path.join(root, 'src/extension/extension.ts')],
    outfile: path.join(stage, 'dist', 'extension.js'),
    plugins: [vendorPlugin],
  }),
  // The worker threads of parallel salvage transfers: started by file name, next to extension.js.
  build({
    ...common,
    entryPoints: [path.join(root, 'src/core/salvage/transfer/parallelWorker.ts')],
    outfile: path.join(stage, 'dist', 'salvageWorker.js'),
    plugins: [vendorPlugin],
  }),
  ...vendored.map((name) =>
    build({ ...common, entryPoints: [req.resolve(name)], outfile: path.join(stage, 'dist', 'vendor', vendorFile(name)) }),
  ),
];
const results = await Promise.all(builds);
const left = new Set();
for (const r of results)
  for (const o of Object.values(r.metafile.outputs))
    for (const i of o.imports)
      if (i.external && !isBuiltin(i.path) && i.path !== 'vscode' && !i.path.startsWith('./vendor/')) left.add(i.path);
const sizeOf = (f) => statSync(path.join(stage, 'dist', f)).size;
say(
  `extension.js ${kib(sizeOf('extension.js'))}, salvageWorker.js ${kib(sizeOf('salvageWorker.js'))}${vendored.map((n) => `, vendor/${vendorFile(n)} ${kib(sizeOf(path.join('vendor', vendorFile(n))))}`).join('')} (${minify ? 'minified' : 'not minified'}); not shipped: ${[...left].join(', ') || 'nothing'}`,
);

for (const f of ['README.md', 'CHANGELOG.md', 'LICENSE', '.vscodeignore']) {
  if (existsSync(path.join(root, f))) cpSync(path.join(root, f), path.join(stage, f));
}
const skip = (src) => !/(^|\/)(__pycache__|\.pytest_cache)(\/|$)|\.py[co]$/.test(src);
cpSync(path.join(root, 'media'), path.join(stage, 'media'), { recursive: true, filter: skip });
for (const d of ['python', 'bin', 'homeFiles'])
  cpSync(path.join(root, 'src', 'sim', d), path.join(stage, 'src', 'sim', d), { recursive: true, filter: skip });
// The launch-profile JSON schema (contributes.jsonValidation).
cpSync(path.join(root, 'schemas'), path.join(stage, 'schemas'), { recursive: true, filter: skip });
const shipped = { ...pkg };
if (shipped.scripts) {
  // The stage has no sources: a prepublish hook would try to build there.
  shipped.scripts = { ...shipped.scripts };
  delete shipped.scripts['vscode:prepublish'];
}
writeFileSync(path.join(stage, 'package.json'), JSON.stringify(shipped, null, 2) + '\n');

// 3. vsce (never prompts: repository and LICENSE are present or explicitly allowed missing).
const vsceArgs = ['package', '--no-dependencies', '--allow-missing-repository', '--out', out];
if (!existsSync(path.join(stage, 'LICENSE'))) vsceArgs.push('--skip-license');
rmSync(out, { force: true });
const vsce = path.join(root, 'node_modules', '@vscode', 'vsce', 'vsce');
run(process.execPath, [vsce, ...vsceArgs], stage);

const size = statSync(out).size;
say(`${path.relative(process.cwd(), out) || out}: ${kib(size)} (${size} bytes) in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
if (quiet) console.log(out);

function kib(n) {
  return n >= 1048576 ? `${(n / 1048576).toFixed(2)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}
function isBuiltin(p) {
  const n = p.replace(/^node:/, '');
  return builtinModules.includes(n) || builtinModules.includes(n.replace(/\/.*/, ''));
}
