// Lint: every tracked shell script with shellcheck and every tracked Python script with pyflakes (Debian packages
// `shellcheck` and `pyflakes3`, installed by .ci/run). A script is a `.sh` or `.py` file, or a file without an
// extension whose first line is a `#!` naming sh/bash or python (src/sim/bin). Prints each finding; exits 1 on one,
// or when a checker is missing. Run by `npm run lint`.
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';

const tracked = execFileSync('git', ['ls-files', '-z'], { encoding: 'utf8' }).split('\0').filter(Boolean);

/** 'sh', 'py' or null. */
function kindOf(file) {
  if (file.endsWith('.sh')) return 'sh';
  if (file.endsWith('.py')) return 'py';
  if (path.extname(file) !== '' && file !== '.ci/run') return null;
  let first;
  try {
    first = readFileSync(file, 'utf8').split('\n', 1)[0];
  } catch {
    return null;
  }
  if (/^#!.*\b(ba)?sh\b/.test(first)) return 'sh';
  if (/^#!.*\bpython3?\b/.test(first)) return 'py';
  return null;
}

const files = { sh: [], py: [] };
for (const f of tracked) {
  const k = kindOf(f);
  if (k) files[k].push(f);
}

let failed = false;
const check = (tool, args, list) => {
  if (list.length === 0) return;
  const r = spawnSync(tool, [...args, ...list], { encoding: 'utf8' });
  if (r.error) {
    console.log(`${tool} not found: install the Debian package ${tool === 'pyflakes3' ? 'pyflakes3' : 'shellcheck'} (as .ci/run does).`);
    failed = true;
    return;
  }
  const out = `${r.stdout}${r.stderr}`.trim();
  if (r.status !== 0 || out) {
    console.log(out);
    failed = true;
  }
};
check('shellcheck', ['--format=gcc'], files.sh);
check('pyflakes3', [], files.py);
console.log(`scripts checked: ${files.sh.length} shell (shellcheck), ${files.py.length} Python (pyflakes3)`);
if (failed) process.exit(1);
