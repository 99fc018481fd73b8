// The layer order of src, written once, and the local eslint rule `local/layers` that keeps it true file by file
// (like VS Code's own `code-layering` rule). Every module reference counts: import and `import type`, `export … from`,
// inline `import('…')` types, dynamic `import()`, `require()` and `import x = require()`.
//
// src/core is split into rooms (its folders). A room may import itself and the rooms of lower layers only, never
// a room of its own layer or above, so no two rooms can reach each other (zero folder cycles; scripts/rooms.mjs
// measures them). The faces sit above the core: src/sim (the simulated node) may import the core; src/cli and
// src/extension may import the core and src/sim, not each other. Only src/extension may import `vscode`.
// A new room or face must be added here, or the rule reports each of its files.
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/** src/core's rooms, lowest layer first; rooms of one layer do not import each other. */
export const CORE_LAYERS = [
  ['util'],
  ['ssh'],
  ['sglang'],
  ['remote'],
  ['gateway', 'provider'],
  ['node'],
  ['launch', 'data'],
  ['salvage'],
  ['restore', 'guard', 'security'],
  ['flows'],
];

/** The folders of src above the core, and what each may import besides src/core. */
export const FACES = {
  sim: [],
  cli: ['sim'],
  extension: ['sim'],
};

/** Packages only some parts of src may import. */
const ONLY = { vscode: ['extension'] };

const SRC = fileURLToPath(new URL('../src', import.meta.url));

/** Where a path of src sits: { part: 'core' | a face, room, inRoot }, or null outside src (tests, bench, scripts). */
function placeOf(file) {
  const rel = path.relative(SRC, path.resolve(file));
  if (rel.startsWith('..') || path.isAbsolute(rel)) return null;
  const parts = rel.split(path.sep);
  return { part: parts[0], room: parts[0] === 'core' ? (parts[1] ?? '').replace(/\.ts$/, '') : '', inRoot: parts.length <= 2 };
}

const layerOf = new Map(CORE_LAYERS.flatMap((rooms, i) => rooms.map((r) => [r, i])));

/** Why `from` may not import `to` (both places), or null when it may. */
function refusal(from, to) {
  if (from.part === 'core') {
    if (to.part !== 'core') return `src/core imports nothing from src/${to.part}`;
    if (to.room === from.room) return null;
    if (!layerOf.has(to.room)) return `src/core/${to.room} is not a room of the layer table`;
    const a = layerOf.get(from.room);
    const b = layerOf.get(to.room);
    if (b < a) return null;
    return b === a
      ? `src/core/${from.room} and src/core/${to.room} are rooms of one layer: neither imports the other`
      : `src/core/${from.room} (layer ${a}) is below src/core/${to.room} (layer ${b})`;
  }
  if (!(from.part in FACES) || to.part === 'core' || to.part === from.part || FACES[from.part].includes(to.part)) return null;
  return `src/${from.part} may import src/core${FACES[from.part].map((f) => `, src/${f}`).join('')} only`;
}

const layers = {
  meta: {
    type: 'problem',
    docs: { description: 'The layer order of src/core rooms and of the faces (scripts/eslint-layers.mjs).' },
    schema: [],
    messages: {
      layer: "'{{spec}}': {{why}} (the layer order is in scripts/eslint-layers.mjs).",
      place: '{{why}}: add it to the layer table in scripts/eslint-layers.mjs.',
    },
  },
  create(context) {
    const file = context.physicalFilename ?? context.filename;
    const from = placeOf(file);
    if (!from) return {};
    let unplaced = null;
    if (from.part === 'core' && from.inRoot) unplaced = 'a file directly in src/core belongs in a room';
    else if (from.part === 'core' && !layerOf.has(from.room)) unplaced = `src/core/${from.room} is not a room of the layer table`;
    else if (from.part !== 'core' && from.part !== 'types' && !(from.part in FACES))
      unplaced = `src/${from.part} is not a face of the layer table`;
    const check = (node) => {
      if (!node || typeof node.value !== 'string') return;
      const spec = node.value;
      if (!spec.startsWith('.')) {
        const pkg = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0];
        const only = ONLY[pkg];
        if (only && !only.includes(from.part)) {
          const why = `only ${only.map((p) => `src/${p}`).join(', ')} may import ${pkg}`;
          context.report({ node, messageId: 'layer', data: { spec, why } });
        }
        return;
      }
      const to = placeOf(path.resolve(path.dirname(file), spec));
      if (!to) return;
      const why = refusal(from, to);
      if (why) context.report({ node, messageId: 'layer', data: { spec, why } });
    };
    return {
      Program(node) {
        if (unplaced) context.report({ node, messageId: 'place', data: { why: unplaced } });
      },
      ImportDeclaration: (n) => check(n.source),
      ExportNamedDeclaration: (n) => check(n.source),
      ExportAllDeclaration: (n) => check(n.source),
      ImportExpression: (n) => check(n.source),
      TSImportType: (n) => check(n.source ?? n.argument?.literal),
      TSExternalModuleReference: (n) => check(n.expression),
      CallExpression(n) {
        if (n.callee.type === 'Identifier' && n.callee.name === 'require' && n.arguments.length > 0) check(n.arguments[0]);
      },
    };
  },
};

export default { rules: { layers } };
