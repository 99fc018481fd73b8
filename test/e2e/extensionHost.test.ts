/**
 * Runs the extension-host suite (test/vscode) inside code-server's real (Node) extension host, as
 * @vscode/test-electron does with desktop VS Code: the workbench `payload` URL route with
 * extensionDevelopmentPath + extensionTestsPath as vscode-remote:// URIs; the suite's exit code comes
 * back through the `codeAutomationExit` function exposed to the page, its output through
 * `codeAutomationLog`.
 *
 * The extension under test is the packaged .vsix (installed into a separate folder and loaded as the
 * development extension), so this also checks what users install. E2E_HOST_EXTENSION=repo uses the
 * repository root (dist/ from `npm run build`) instead.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import * as util from 'node:util';
import {
  BrowserSession,
  CodeServer,
  elapsed,
  installVsix,
  launchBrowser,
  log,
  missingPrerequisite,
  REPO,
  RESULTS,
  startCodeServer,
  writeResult,
} from './harness';

const NOISE =
  /^\[lifecycle\]|^Resolved connection token|^Creating a socket|^Updating additional builtin|^\[remote-connection\]|^Started local extension host|^Extension host .* started|^$/;

describe('e2e: extension-host tests (test/vscode) in code-server', function () {
  const limitMs = Number(process.env.E2E_HOST_TIMEOUT_S ?? 1200) * 1000;
  this.timeout(limitMs + 120_000);
  let cs: CodeServer | undefined;
  let b: BrowserSession | undefined;

  before(function () {
    const missing = missingPrerequisite();
    if (missing) {
      if (process.env.E2E_REQUIRED === '1') throw new Error(missing);
      log(`skipped: ${missing}`);
      this.skip();
    }
  });

  after(async function () {
    this.timeout(60_000);
    await b?.close();
    await cs?.stop();
  });

  it('the mocha suite passes inside the real extension host', async () => {
    const t = Date.now();
    const fromRepo = process.env.E2E_HOST_EXTENSION === 'repo';
    cs = await startCodeServer({ name: 'host', workspaceFiles: { 'README.md': '# Scratch workspace for the extension-host tests\n' } });
    let devPath = REPO;
    if (!fromRepo) {
      // Install the .vsix into its own folder (not the server's --extensions-dir, so it is not loaded twice).
      devPath = installVsix(process.env.E2E_VSIX!, path.join(cs.root, 'vsix-extension'), path.join(cs.root, 'install-user-data'), cs.env);
    }
    const testsPath = path.join(REPO, 'out', 'test', 'vscode', 'index.js');
    const remote = (p: string) => `vscode-remote://127.0.0.1:${cs!.port}${p}`;
    const payload = JSON.stringify([
      ['extensionDevelopmentPath', remote(devPath)],
      ['extensionTestsPath', remote(testsPath)],
    ]);
    b = await launchBrowser();
    const lines: string[] = [];
    let resolveExit!: (code: number) => void;
    const exited = new Promise<number>((r) => (resolveExit = r));
    await b.page.exposeFunction('codeAutomationLog', (level: unknown, args: unknown) => {
      const parts = Array.isArray(args) ? args : [args];
      const text = util.format(...(parts as unknown[]));
      for (const l of text.replace(/\n$/, '').split('\n')) {
        lines.push(l);
        // The workbench's own chatter goes only to the log file.
        if (!NOISE.test(l)) process.stdout.write(`        │ ${l}\n`);
      }
      void level;
    });
    await b.page.exposeFunction('codeAutomationExit', (code: number) => resolveExit(Number(code)));
    log(`extension under test: ${devPath}${fromRepo ? ' (repository)' : ' (from the .vsix)'}`);
    await b.page.goto(cs.folderUrl(`payload=${encodeURIComponent(payload)}`), { waitUntil: 'domcontentloaded', timeout: 60_000 });
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([
      exited,
      new Promise<number>((_, rej) => {
        timer = setTimeout(
          () =>
            rej(
              new Error(
                `the extension-host suite did not finish within ${limitMs / 1000} s (codeAutomationExit never called)\ncode-server log:\n${cs!.logTail(30)}`,
              ),
            ),
          limitMs,
        );
      }),
    ]).finally(() => clearTimeout(timer));
    await b.page.screenshot({ path: path.join(RESULTS, 'host-suite-workbench.png'), timeout: 15_000 }).catch(() => undefined);
    log(`extension-host output: ${writeResult('host-suite.log', lines.join('\n') + '\n')}`);
    log(`extension-host suite exit code ${code} after ${elapsed(t)}`);
    // The extension's own output channel, for whoever reads a failure (CI keeps test-results/).
    const ext = cs!.extensionLog(5000);
    if (ext) log(`extension output channel: ${writeResult('host-suite-extension.log', ext.tail + '\n')}`);
    assert.equal(code, 0, `extension-host suite failed (exit ${code}); last output:\n${lines.slice(-30).join('\n')}`);
    assert.ok(
      lines.some((l) => /passing/.test(l)),
      'mocha reported its result',
    );
  });
});
