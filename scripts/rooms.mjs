// Room-level imports of src/core: each folder directly under src/core is a room (src/core/flows too). Reads every
// src/core/**/*.ts with the TypeScript parser and counts static imports, `export … from`, `import type`, inline
// `import('…')` types, dynamic `import()` and `require()`. Prints the room graph and every folder cycle (strongly
// connected component of more than one room), then the number of elementary cycles; exits 1 when there is one.
//   node scripts/rooms.mjs          graph and cycles
//   node scripts/rooms.mjs --quiet  cycles only
// Run by `npm run lint` (--quiet). The layer order that keeps the count at zero is enforced file by file by the
// `local/layers` eslint rule (scripts/eslint-layers.mjs); this script measures what that order allows.
import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const CORE = path.join('src', 'core');
const quiet = process.argv.includes('--quiet');

function walk(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walk(p, out);
    else if (e.name.endsWith('.ts')) out.push(p);
  }
  return out;
}

/** Every module specifier a file names: static, re-export, type, inline import type, dynamic import, require. */
export function specifiers(file, text) {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out = [];
  const visit = (node) => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      out.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const e = node.moduleReference.expression;
      if (ts.isStringLiteral(e)) out.push(e.text);
    } else if (ts.isImportTypeNode(node)) {
      const a = node.argument;
      if (ts.isLiteralTypeNode(a) && ts.isStringLiteral(a.literal)) out.push(a.literal.text);
    } else if (ts.isCallExpression(node) && node.arguments.length >= 1 && ts.isStringLiteralLike(node.arguments[0])) {
      const isImport = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      if (isImport || isRequire) out.push(node.arguments[0].text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** The room of a file under src/core (its first folder), or '' for a file directly in src/core. */
function roomOf(file) {
  const rel = path.relative(CORE, file).split(path.sep);
  return rel.length > 1 ? rel[0] : '';
}

const edges = new Map(); // room -> Map(room -> [file -> spec])
const rooms = new Set();
for (const file of walk(CORE)) {
  const from = roomOf(file);
  rooms.add(from);
  for (const spec of specifiers(file, readFileSync(file, 'utf8'))) {
    if (!spec.startsWith('.')) continue;
    const target = path.normalize(path.join(path.dirname(file), spec));
    if (!target.startsWith(CORE + path.sep)) continue;
    const to = roomOf(target.endsWith('.ts') ? target : target + '.ts');
    if (to === from) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    const m = edges.get(from);
    if (!m.has(to)) m.set(to, []);
    m.get(to).push(`${file} -> ${spec}`);
  }
}

// Tarjan's strongly connected components.
let index = 0;
const idx = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const sccs = [];
function strong(v) {
  idx.set(v, index);
  low.set(v, index++);
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
    if (!idx.has(w)) {
      strong(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
  }
  if (low.get(v) === idx.get(v)) {
    const c = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      c.push(w);
    } while (w !== v);
    if (c.length > 1) sccs.push(c.sort());
  }
}
for (const r of [...rooms].sort()) if (!idx.has(r)) strong(r);

// Two-room cycles (A imports B and B imports A), printed with the imports that make them.
const pairs = [];
for (const [a, m] of edges) for (const b of m.keys()) if (a < b && edges.get(b)?.has(a)) pairs.push([a, b]);

// Every elementary cycle (no room twice), each found once from its smallest room.
const cycles = [];
const roomList = [...rooms].sort();
for (const start of roomList) {
  const pathNow = [start];
  const onPath = new Set([start]);
  const dfs = (v) => {
    for (const w of edges.get(v)?.keys() ?? []) {
      if (w === start) cycles.push([...pathNow]);
      else if (w > start && !onPath.has(w)) {
        pathNow.push(w);
        onPath.add(w);
        dfs(w);
        onPath.delete(w);
        pathNow.pop();
      }
    }
  };
  dfs(start);
}

if (!quiet) {
  for (const r of [...rooms].sort()) {
    const m = edges.get(r);
    console.log(`${r || '(core)'} -> ${m ? [...m.keys()].sort().join(', ') : '(nothing)'}`);
  }
  console.log('');
}
for (const [a, b] of pairs) {
  console.log(`cycle ${a} <-> ${b}`);
  for (const e of [...edges.get(a).get(b), ...edges.get(b).get(a)]) console.log(`  ${e}`);
}
for (const c of cycles) if (c.length > 2) console.log(`cycle ${[...c, c[0]].join(' -> ')}`);
for (const c of sccs) console.log(`strongly connected: ${c.join(', ')}`);
console.log(`${cycles.length} folder cycle(s) (${pairs.length} between two rooms), ${sccs.length} strongly connected group(s) of rooms`);
process.exitCode = sccs.length > 0 ? 1 : 0;
