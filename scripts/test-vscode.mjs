// Extension-host tests with @vscode/test-electron: `npm run test:vscode`.
// Downloads desktop VS Code (cached in .vscode-test/), so it needs the internet; where that is not
// reachable (CI here), the same suite runs inside code-server through `npm run test:e2e`.
//
// Options: --version X (default stable; or VSCODE_VERSION), --vsix (test the packaged .vsix instead
// of the repository: it is built and unpacked, and loaded as the development extension).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const version = args.includes('--version') ? args[args.indexOf('--version') + 1] : (process.env.VSCODE_VERSION ?? 'stable');

function run(cmd, argv) {
  const r = spawnSync(cmd, argv, { cwd: root, stdio: 'inherit', timeout: 600_000 });
  if (r.status !== 0) process.exit(r.status || 1);
}

run(process.execPath, [path.join(root, 'scripts', 'build.mjs')]);
run(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.']);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'gpu-sessions-test-vscode-'));
const workspace = path.join(tmp, 'workspace');
const userDataDir = path.join(tmp, 'user-data');
mkdirSync(workspace, { recursive: true });
mkdirSync(path.join(userDataDir, 'User'), { recursive: true });
writeFileSync(path.join(workspace, 'README.md'), '# Scratch workspace for the extension-host tests\n');
writeFileSync(
  path.join(userDataDir, 'User', 'settings.json'),
  JSON.stringify(
    {
      'workbench.startupEditor': 'none',
      'security.workspace.trust.enabled': false,
      'telemetry.telemetryLevel': 'off',
      'update.mode': 'none',
      'remote.autoForwardPorts': false,
    },
    null,
    2,
  ),
);

let extensionDevelopmentPath = root;
if (args.includes('--vsix')) {
  const vsix = path.join(tmp, 'gpu-sessions.vsix');
  run(process.execPath, [path.join(root, 'scripts', 'package.mjs'), '--out', vsix]);
  const unpacked = path.join(tmp, 'vsix');
  mkdirSync(unpacked);
  run('unzip', ['-q', vsix, 'extension/*', '-d', unpacked]);
  extensionDevelopmentPath = path.join(unpacked, 'extension');
}

const { runTests } = await import('@vscode/test-electron');
let code = 0;
try {
  await runTests({
    version,
    extensionDevelopmentPath,
    extensionTestsPath: path.join(root, 'out', 'test', 'vscode', 'index.js'),
    launchArgs: [
      workspace,
      '--disable-extensions',
      '--disable-workspace-trust',
      '--skip-welcome',
      '--skip-release-notes',
      `--user-data-dir=${userDataDir}`,
    ],
    timeout: 120_000, // download idle timeout
  });
} catch (e) {
  console.error(`test:vscode: ${e instanceof Error ? e.message : String(e)}`);
  code = 1;
} finally {
  rmSync(tmp, { recursive: true, force: true, maxRetries: 3 });
}
process.exit(code);
