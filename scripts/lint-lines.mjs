// Lint: lines longer than MAX_COLUMNS in the git-tracked src/**/*.ts, against a budget (issue 25, item 3).
// eslint's max-len skips strings, template literals and regexes, and prettier never breaks those, so long
// messages and shell lines would otherwise grow unnoticed. A line holding a URL (`://`) or part of a regex
// literal does not count. Prints each offending file:line, then the count and the budget; exits 1 when the
// count is over the budget. Run by `npm run lint`.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const MAX_COLUMNS = 160;
const BUDGET = 5;

/** The tracked src/**\/*.ts (every one under src/ where git is not there, e.g. an unpacked source tarball). */
function sourceFiles() {
  try {
    return execFileSync('git', ['ls-files', '-z', '--', 'src/*.ts'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
      .split('\0')
      .filter(Boolean);
  } catch {
    const out = [];
    const walk = (dir) => {
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.ts')) out.push(p);
      }
    };
    walk('src');
    return out.sort();
  }
}

/** 0-based numbers of the lines that a regex literal spans. */
function regexLines(file, text) {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const lines = new Set();
  const visit = (node) => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
      const first = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(node.getEnd()).line;
      for (let l = first; l <= last; l++) lines.add(l);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return lines;
}

let count = 0;
for (const file of sourceFiles()) {
  const text = readFileSync(file, 'utf8');
  const lines = text.split('\n');
  let exempt = null;
  lines.forEach((line, i) => {
    const len = line.replace(/\r$/, '').length;
    if (len <= MAX_COLUMNS || line.includes('://')) return;
    exempt ??= regexLines(file, text);
    if (exempt.has(i)) return;
    count++;
    console.log(`${file}:${i + 1}: ${len} columns`);
  });
}
console.log(`lines over ${MAX_COLUMNS} columns in src/**/*.ts: ${count} (budget ${BUDGET})`);
if (count > BUDGET) {
  console.log('Shorten them: pull conditional parts of a template literal into named consts, or split a string at a space.');
  process.exit(1);
}
