// Runs the whole suite: unit tests, then integration tests (real sshd on loopback).
// Compiles TypeScript (src + test) to out/ first.
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';

function run(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', ...opts });
  if (r.status !== 0) process.exit(r.status ?? 1);
}
rmSync('out', { recursive: true, force: true });
run('npx', ['tsc', '-p', '.']);
const suites = process.argv.slice(2);
const globs = suites.length
  ? suites.map((s) => `out/test/${s}/**/*.test.js`)
  : ['out/test/unit/**/*.test.js', 'out/test/integration/**/*.test.js'];
run('npx', ['mocha', '--config', '.mocharc.json', ...globs]);
