// Runs every side-by-side benchmark in one go and prints their tables (run by hand, as root:
// the SSH benchmarks use the real-sshd test bed). `npm run bench` — or `npm run bench -- probe salvage`.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const ALL = ['speed', 'probe', 'salvage', 's3-inventory', 'parse-log', 'activation'];
const want = process.argv.slice(2).length ? process.argv.slice(2) : ALL;
const run = (cmd, args) => spawnSync(cmd, args, { stdio: 'inherit' }).status;
if (run('node', ['scripts/build.mjs']) !== 0 || run('npx', ['tsc', '-p', '.']) !== 0) process.exit(1);
let failed = 0;
for (const b of want) {
  const f = `out/bench/${b}.js`;
  if (!existsSync(f)) {
    console.log(`\n(${b}: no ${f}; skipped)`);
    continue;
  }
  console.log(`\n=== ${b} ===`);
  if (run('node', [f]) !== 0) failed++;
}
process.exit(failed ? 1 : 0);
