// Builds the .vsix: `npm run package` (options: --out FILE, --no-minify, --quiet).
//
// The dev build (scripts/build.mjs) keeps ssh2 external so its optional native binding can be used
// from node_modules. A .vsix has no node_modules (`vsce --no-dependencies`), so the extension is
// bundled a second time here with ssh2 inside (only its `.node` binding and cpu-features stay
// out: ssh2 catches their absence and uses its JS/WASM ciphers), which also keeps the .vsix
// platform-neutral. Shipping production node_modules instead (vsce with dependencies) would add
// @aws-sdk/client-s3 a second time (it is already in the bundle) and a linux-x64 binding.
//
// vsce runs in a staging folder (.tmp/vsix-stage) holding only what is shipped, so the repository's
// dist/ is never overwritten; .vscodeignore (an allow-list) applies there and to a plain
// `vsce package` at the root alike. The demo node needs sim/ at run time (found by walking up from
// dist/, see src/sim/home.ts simAssetsDir), so sim/ is shipped.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { builtinModules } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

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
  const r = spawnSync(cmd, argv, { cwd, stdio: quiet ? ['ignore', 'pipe', 'inherit'] : 'inherit', timeout: 300_000, env: { ...process.env, npm_config_yes: 'true' } });
  if (r.status !== 0) {
    console.error(`package: ${cmd} ${argv.join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})`);
    process.exit(r.status || 1);
  }
}

// 1. The repository's own build (dist/ for the CLI, tests and the dev extension host).
run(process.execPath, [path.join(root, 'scripts', 'build.mjs')], root);

// 2. Stage: only what is shipped.
rmSync(stage, { recursive: true, force: true });
mkdirSync(path.join(stage, 'dist'), { recursive: true });
const result = await build({
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  minify,
  sourcemap: false,
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  external: ['vscode', '*.node', 'cpu-features'],
  entryPoints: [path.join(root, 'src/extension/extension.ts')],
  outfile: path.join(stage, 'dist', 'extension.js'),
});
const stray = Object.keys(result.metafile.outputs).filter((f) => !f.endsWith('dist/extension.js'));
if (stray.length) throw new Error(`unexpected extra outputs: ${stray.join(', ')}`);
const notBundled = Object.values(result.metafile.outputs)[0].imports.filter((i) => i.external && !/^(node:|vscode$)/.test(i.path) && !isBuiltin(i.path));
say(`extension bundle ${kib(statSync(path.join(stage, 'dist', 'extension.js')).size)} (${minify ? 'minified' : 'not minified'}, ssh2 inside); left out: ${notBundled.map((i) => i.path).join(', ') || 'nothing'}`);

for (const f of ['README.md', 'CHANGELOG.md', 'LICENSE', '.vscodeignore']) {
  if (existsSync(path.join(root, f))) cpSync(path.join(root, f), path.join(stage, f));
}
const skip = (src) => !/(^|\/)(__pycache__|\.pytest_cache)(\/|$)|\.py[co]$/.test(src);
cpSync(path.join(root, 'media'), path.join(stage, 'media'), { recursive: true, filter: skip });
cpSync(path.join(root, 'sim'), path.join(stage, 'sim'), { recursive: true, filter: skip });
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
  return builtinModules.includes(p) || builtinModules.includes(p.replace(/\/.*/, ''));
}
