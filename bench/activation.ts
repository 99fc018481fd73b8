/**
 * Activation cost: bundle sizes and the time to load the extension bundle, so regressions show.
 *
 *   npm run -s build && npx tsc -p . && node out/bench/activation.js [--runs N] [--json]
 *
 * Each measurement is a fresh Node process (nothing cached in memory; the files are in the OS page
 * cache after the first run, as they are for a user's second window): `require()` of the bundle with
 * a stub `vscode` module, median of N (default 10). The heavy dependencies are measured on their own:
 * ssh2 (loaded on the first connection) and @aws-sdk/client-s3 (loaded only when a salvage checks
 * S3). Also measured, when `npm run package` has run: the packaged bundles (.tmp/vsix-stage/dist:
 * extension.js minified, and ssh2 / @aws-sdk/client-s3 as separate lazily required dist/vendor/ files).
 * Exit code 1 when an extension bundle loads ssh2 or the S3 SDK at require time.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import * as path from 'node:path';

const REPO = path.resolve(__dirname, '..', '..');
const args = process.argv.slice(2);
const RUNS = Math.max(1, Number(args[args.indexOf('--runs') + 1]) || 10);
const JSON_OUT = args.includes('--json');

/** Child script: stub `vscode`, time one require, print ms and what got loaded. */
const CHILD = String.raw`
const Module = require('module');
const stub = new Proxy(function () {}, { get: (t, k) => (k === '__esModule' ? false : stub), apply: () => stub, construct: () => stub });
const origLoad = Module._load;
Module._load = function (request, parent, isMain) {
  if (request === 'vscode') return stub;
  return origLoad.call(this, request, parent, isMain);
};
const before = new Set(Object.keys(require.cache));
const t0 = process.hrtime.bigint();
const m = require(process.argv[1]);
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
const loaded = Object.keys(require.cache).filter((k) => !before.has(k));
const heavy = [['ssh2', /\/node_modules\/ssh2\/|\/vendor\/ssh2\.js$/], ['@aws-sdk/client-s3', /\/node_modules\/@aws-sdk\/|\/vendor\/aws-sdk-/]].filter(([, re]) => loaded.some((k) => k !== process.argv[1] && re.test(k))).map(([n]) => n);
process.stdout.write(JSON.stringify({ ms, exports: Object.keys(m).length, modules: loaded.length, heavy, rssMiB: process.memoryUsage().rss / 1048576 }));
`;

interface Sample {
  ms: number;
  exports: number;
  modules: number;
  heavy: string[];
  rssMiB: number;
}

function measure(target: string): Sample[] {
  const out: Sample[] = [];
  for (let i = 0; i < RUNS; i++) {
    const r = spawnSync(process.execPath, ['-e', CHILD, target], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
    if (r.status !== 0) throw new Error(`loading ${target} failed: ${r.stderr || r.error?.message}`);
    out.push(JSON.parse(r.stdout) as Sample);
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

function kib(n: number): string {
  return n >= 1048576 ? `${(n / 1048576).toFixed(2)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

const rows: Record<string, unknown>[] = [];
const sizes: Record<string, number> = {};
const STAGE = '.tmp/vsix-stage/dist';
for (const f of [
  'dist/extension.js',
  'dist/cli.js',
  `${STAGE}/extension.js`,
  `${STAGE}/vendor/ssh2.js`,
  `${STAGE}/vendor/aws-sdk-client-s3.js`,
]) {
  const p = path.join(REPO, f);
  if (existsSync(p)) sizes[f] = statSync(p).size;
}
if (!sizes['dist/extension.js']) {
  console.error('dist/extension.js missing: run `npm run build` first.');
  process.exit(2);
}

const staged = (f: string) => (sizes[`${STAGE}/${f}`] ? path.join(REPO, STAGE, f) : null);
const targets = [
  ['dist/extension.js (dev build; ssh2, @aws-sdk external)', path.join(REPO, 'dist/extension.js')],
  ['packaged extension.js (.vsix, minified)', staged('extension.js')],
  ['ssh2 (node_modules)', require.resolve('ssh2', { paths: [REPO] })],
  ['ssh2 (.vsix dist/vendor/ssh2.js)', staged('vendor/ssh2.js')],
  ['@aws-sdk/client-s3 (node_modules)', require.resolve('@aws-sdk/client-s3', { paths: [REPO] })],
  ['@aws-sdk/client-s3 (.vsix dist/vendor)', staged('vendor/aws-sdk-client-s3.js')],
].filter((t): t is [string, string] => !!t[1]);
for (const [name, file] of targets) {
  const s = measure(file);
  const ms = s.map((x) => x.ms);
  rows.push({
    name,
    medianMs: Number(median(ms).toFixed(1)),
    minMs: Number(Math.min(...ms).toFixed(1)),
    maxMs: Number(Math.max(...ms).toFixed(1)),
    modules: s[0].modules,
    heavyLoaded: s[0].heavy,
    rssMiB: Number(median(s.map((x) => x.rssMiB)).toFixed(1)),
  });
}

if (JSON_OUT) {
  console.log(JSON.stringify({ runs: RUNS, node: process.version, sizes, load: rows }, null, 2));
} else {
  console.log(`Bundle sizes:`);
  for (const [f, n] of Object.entries(sizes)) console.log(`  ${f.padEnd(50)} ${kib(n).padStart(10)}`);
  console.log(`\nrequire() in a fresh Node ${process.version} process, stub vscode, median of ${RUNS}:`);
  for (const r of rows) {
    const heavy =
      /extension\.js/.test(String(r.name)) && (r.heavyLoaded as string[]).length
        ? `  ⚠ loads ${(r.heavyLoaded as string[]).join(', ')} eagerly`
        : '';
    console.log(
      `  ${String(r.name).padEnd(54)} ${String(r.medianMs).padStart(7)} ms  (min ${r.minMs}, max ${r.maxMs}; ${r.modules} module file(s); rss ${r.rssMiB} MiB)${heavy}`,
    );
  }
  for (const ext of rows.filter((r) => /extension\.js/.test(String(r.name)))) {
    if ((ext.heavyLoaded as string[]).length) {
      console.log(`\nRegression: ${ext.name} loads ${(ext.heavyLoaded as string[]).join(', ')} at require time; they should load lazily.`);
      process.exitCode = 1;
    }
  }
}
