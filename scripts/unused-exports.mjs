// Lint: exports of src/**/*.ts that no other file names (src, test or bench), read with the TypeScript parser.
// A name counts as used when another file imports it (`import { x }`, `import type`, `export { x } from`,
// `import('…').X` types, a destructured dynamic import), reads it from a namespace import (`ns.x`), or reaches it
// through `export * from` barrels; a dynamic import that is not destructured uses every export of its module.
// Entry points (what VS Code or esbuild loads by name) and the exports of files other engineers were rewriting
// when this check came in are listed in ALLOWED below. Prints each unused export as file:line name; exits 1 when
// there is one.   node scripts/unused-exports.mjs [--all]  (--all: also the allowed ones)
// Run by `npm run lint`.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

/** file (or folder/) → names that stay exported although no other file names them; '*' is every name. */
const ALLOWED = {
  // loaded by VS Code by name
  'src/extension/extension.ts': ['activate', 'deactivate'],
  // TODO revisit: exports no other file names, in files that were being rewritten (salvage transfer engine, guard,
  // provider, the CLI's main and MCP server, the extension) when this check came in: drop these `export`s there.
  'src/cli/mcp.ts': ['McpDeps', 'buildMcpServer', 'destUnderRoots'],
  'src/core/flows/salvage.ts': ['SalvageRun', 'isFileItem'],
  'src/core/guard/operations.ts': ['GuardStartInput', 'GuardStopAnswer'],
  'src/core/guard/s3Post.ts': ['PostCredentials', 'PostPolicyInput'],
  'src/core/guard/script.ts': ['GUARD_PY_FILES', 'GuardPyFile'],
  'src/core/provider/actions.ts': ['EndCallResult'],
  'src/core/provider/status.ts': ['InstanceState'],
  'src/core/salvage/batchWriter.ts': ['WriteCommand', 'WriteEvent'],
  'src/core/salvage/destNames.ts': ['PROBED_CHARS', 'exactNames'],
  'src/core/salvage/gitState.ts': ['GitState'],
  'src/core/salvage/listing.ts': ['CACHE_DIRS', 'CacheDir', 'MODEL_EXT', 'isUnder', 'writesFlag'],
  'src/core/salvage/parallel.ts': ['ParallelOptions', 'ParallelResult'],
  'src/core/salvage/parallelWorker.ts': ['FetchCommand', 'FetchEvent', 'HashCommand', 'HashEvent', 'WorkerInit'],
  'src/core/salvage/plan.ts': ['listingOptions', 'localName', 'ownServers'],
  'src/core/salvage/restoreCapture.ts': ['CaptureForRestoreOptions', 'RestoreClient', 'envNamesOperation', 'secretEnvNames'],
  'src/core/salvage/rootsWhy.ts': ['WhyCand'],
  'src/core/salvage/s3.ts': ['S3Match', 'S3MatchInput', 'S3Problem', 'describeTarget', 'formatS3Url'],
  'src/core/salvage/s3Step.ts': ['pendingUploads'],
  'src/core/salvage/salvageTypes.ts': ['ItemStatus', 'ReviewAnswer'],
  'src/core/salvage/snapshotMarkdown.ts': ['renderCommand'],
  'src/core/salvage/snapshotParse.ts': ['parseEnviron', 'parseSmiQ'],
  'src/core/salvage/timings.ts': ['PHASES'],
  'src/core/salvage/transfer.ts': [
    'AppendItem',
    'TransferItem',
    'TransferOptions',
    'appendStreamOperation',
    'hashListOperation',
    'headStreamOperation',
    'parsePrefixHashes',
    'parseStatList',
    'prefixHashOperation',
    'prefixHashes',
    'prefixShasOperation',
    'statListOperation',
    'tarStreamOperation',
  ],
  'src/core/salvage/transferPhase.ts': ['batchWriter', 'markItem', 'scanItem'],
  'src/core/salvage/upload.ts': ['UploadItem', 'UploadOptions', 'UploadResult', 'parsePutOutput'],
  'src/core/salvage/verdict.ts': ['finishNow'],
  'src/core/salvage/weights.ts': ['WeightsReason'],
  'src/extension/alerts.ts': ['SCRIPT_SCHEME', 'Severity', 'ShownAlert', 'alertSetting'],
  'src/extension/commands/drainUi.ts': ['DRAIN_DEADLINE_MS', 'DrainUi'],
  'src/extension/commands/guard.ts': ['StartGuardOpts'],
  'src/extension/commands/index.ts': ['allCommands'],
  'src/extension/commands/launchProfile.ts': ['PROFILE_GLOB'],
  'src/extension/commands/outOfRotation.ts': ['rotationFleet'],
  'src/extension/config.ts': ['expandHome'],
  'src/extension/connections.ts': ['ConnectionsDeps'],
  'src/extension/dashboard.ts': ['DashboardSource'],
  'src/extension/dashboardModel.ts': ['DashboardChart', 'DashboardMarker', 'DashboardSeries', 'ModelInput'],
  'src/extension/dataGuards.ts': ['DataGuardsDeps'],
  'src/extension/disposable.ts': ['DisposableLike'],
  'src/extension/keepSalvaged.ts': ['KeepSalvagedDeps'],
  'src/extension/logView.ts': ['LOG_SCHEME', 'showsEnd'],
  'src/extension/nodeGuards.ts': ['NodeGuardsDeps'],
  'src/extension/resolve.ts': ['PickOptions'],
  'src/extension/salvageVerdicts.ts': ['SalvageVerdict'],
  'src/extension/statusBar.ts': ['progressText'],
  'src/extension/tree/index.ts': [
    'TreeContext',
    'TreeNodeOf',
    'gib',
    'gpuDescription',
    'nodeDescription',
    'serverDescription',
    'serverLabel',
  ],
  'src/extension/tree/items/gateway.ts': ['currentGateway'],
  'src/extension/tree/items/node.ts': ['hhmm', 'shownState'],
  'src/extension/tree/items/server.ts': ['stateIcon'],
  'src/extension/tree/liveRender.ts': ['LiveRenderHost', 'THROTTLE_MS', 'itemSignature'],
  'src/extension/tree/provider.ts': ['redactTreeItem'],
  'src/extension/userAction.ts': ['inBackground'],
};

const showAll = process.argv.includes('--all');
const files = execFileSync('git', ['ls-files', '-z', '--', 'src/*.ts', 'test/*.ts', 'bench/*.ts'], { encoding: 'utf8' })
  .split('\0')
  .filter((f) => f && !f.endsWith('.d.ts'));
const known = new Set(files.map((f) => path.resolve(f)));

/** The absolute .ts path a relative specifier names from `from`, or null (a package, or not a tracked file). */
function resolve(from, spec) {
  if (!spec.startsWith('.')) return null;
  const base = path.resolve(path.dirname(from), spec);
  for (const c of [`${base}.ts`, path.join(base, 'index.ts'), base.replace(/\.js$/, '.ts')]) if (known.has(c)) return c;
  return null;
}

const exportsOf = new Map(); // abs file → Map(name → line)
const starFrom = new Map(); // abs file → [abs file] (export * from)
const used = new Map(); // abs file → Set(name) used by other files; '*' every name
const use = (file, name) => {
  if (!used.has(file)) used.set(file, new Set());
  used.get(file).add(name);
};

const hasExport = (node) => ts.getCombinedModifierFlags(node) & ts.ModifierFlags.Export;

for (const rel of files) {
  const abs = path.resolve(rel);
  const sf = ts.createSourceFile(rel, readFileSync(rel, 'utf8'), ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const mine = new Map();
  const lineOf = (n) => sf.getLineAndCharacterOfPosition(n.getStart(sf)).line + 1;
  const namespaces = new Map(); // local name → abs file
  for (const st of sf.statements) {
    if (ts.isImportDeclaration(st) && ts.isStringLiteral(st.moduleSpecifier)) {
      const target = resolve(abs, st.moduleSpecifier.text);
      const b = st.importClause?.namedBindings;
      if (!target) continue;
      if (st.importClause?.name) use(target, 'default');
      if (b && ts.isNamespaceImport(b)) namespaces.set(b.name.text, target);
      else if (b) for (const e of b.elements) use(target, (e.propertyName ?? e.name).text);
    } else if (ts.isExportDeclaration(st)) {
      const target = st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? resolve(abs, st.moduleSpecifier.text) : null;
      if (!st.exportClause) {
        if (target) starFrom.set(abs, [...(starFrom.get(abs) ?? []), target]);
      } else if (ts.isNamedExports(st.exportClause)) {
        for (const e of st.exportClause.elements) {
          if (target) use(target, (e.propertyName ?? e.name).text);
          mine.set(e.name.text, lineOf(e));
        }
      }
    } else if (ts.isExportAssignment(st)) {
      mine.set('default', lineOf(st));
    } else if (hasExport(st)) {
      if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) mine.set(d.name.text, lineOf(d));
      } else if (st.name && ts.isIdentifier(st.name)) {
        const isDefault = st.modifiers?.some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
        mine.set(isDefault ? 'default' : st.name.text, lineOf(st));
      }
    }
  }
  exportsOf.set(abs, mine);
  const visit = (node) => {
    if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      const target = resolve(abs, node.argument.literal.text);
      if (target) {
        if (node.qualifier) use(target, (ts.isIdentifier(node.qualifier) ? node.qualifier : node.qualifier.left).getText(sf).split('.')[0]);
        else use(target, '*');
      }
    } else if (
      ts.isCallExpression(node) &&
      (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require')) &&
      node.arguments.length >= 1 &&
      ts.isStringLiteralLike(node.arguments[0])
    ) {
      const target = resolve(abs, node.arguments[0].text);
      if (target) {
        let p = node.parent;
        while (p && (ts.isAwaitExpression(p) || ts.isParenthesizedExpression(p))) p = p.parent;
        if (p && ts.isVariableDeclaration(p) && ts.isObjectBindingPattern(p.name))
          for (const e of p.name.elements) use(target, (e.propertyName ?? e.name).getText(sf));
        else if (p && ts.isPropertyAccessExpression(p)) use(target, p.name.text);
        else use(target, '*');
      }
    } else if (ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && namespaces.has(node.expression.text)) {
      use(namespaces.get(node.expression.text), node.name.text);
    } else if (ts.isQualifiedName(node) && ts.isIdentifier(node.left) && namespaces.has(node.left.text)) {
      use(namespaces.get(node.left.text), node.right.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
}

// names used through a barrel (`export * from`) are used in the files it re-exports
let changed = true;
while (changed) {
  changed = false;
  for (const [barrel, targets] of starFrom) {
    for (const name of used.get(barrel) ?? []) {
      for (const t of targets) {
        if ((name === '*' || exportsOf.get(t)?.has(name)) && !used.get(t)?.has(name)) {
          use(t, name);
          changed = true;
        }
      }
    }
  }
}

const allowed = (rel, name) =>
  Object.entries(ALLOWED).some(
    ([k, names]) => (k.endsWith('/') ? rel.startsWith(k) : rel === k) && (names.includes('*') || names.includes(name)),
  );

let count = 0;
let allowedCount = 0;
for (const rel of files) {
  if (!rel.startsWith('src/')) continue;
  const abs = path.resolve(rel);
  const u = used.get(abs) ?? new Set();
  if (u.has('*')) continue;
  for (const [name, line] of exportsOf.get(abs)) {
    if (u.has(name)) continue;
    const ok = allowed(rel, name);
    if (ok) allowedCount++;
    else count++;
    if (!ok || showAll) console.log(`${rel}:${line} ${name}${ok ? ' (allowed)' : ''}`);
  }
}
console.log(`exports no other file names: ${count} (besides ${allowedCount} allowed)`);
if (count > 0) {
  console.log('Drop the `export` (or the code, when nothing in its own file uses it either).');
  process.exit(1);
}
