/**
 * Real VS Code for the e2e suites: code-server (VS Code served to a browser, Node extension host)
 * on 127.0.0.1 with throwaway user-data, extensions and HOME folders, driven by headless Debian
 * Chromium through playwright-core. Recipe and measured timings: ../shared/reference/toolchain-notes.md.
 *
 * Everything is bounded: every wait has a timeout, and stop() ends code-server's whole process tree
 * plus anything still running from the run's own temp folder (the demo node's simulated servers).
 */
import { spawn, spawnSync, ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { processesUnder as procsUnder } from '../helpers/procs';
import { sleep, waitFor } from '../helpers/wait';

export const REPO = path.resolve(__dirname, '..', '..', '..');
export const CODE_SERVER_VERSION = process.env.CODE_SERVER_VERSION ?? '4.100.3';
/** The demo node's name in the tree (the UI suites and the extension-host suites). */
export const DEMO = 'gpu-demo';
export const RESULTS = path.resolve(process.env.E2E_RESULTS ?? path.join(REPO, 'test-results', 'e2e'));
export const EXTENSION_ID = 'gpu-sessions.gpu-sessions';

export function codeServerEntry(): string {
  const explicit = process.env.E2E_CODE_SERVER;
  if (explicit) return explicit;
  const cache = process.env.GPU_SESSIONS_E2E_CACHE ?? path.join(os.homedir(), '.cache', 'gpu-sessions-e2e');
  return path.join(cache, `code-server-${CODE_SERVER_VERSION}`, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
}

export function chromiumPath(): string {
  return process.env.E2E_CHROMIUM ?? '/usr/bin/chromium';
}

/** Why the real-VS-Code suites cannot run here, or null. */
export function missingPrerequisite(): string | null {
  if (!existsSync(codeServerEntry())) return `code-server not installed at ${codeServerEntry()} (run scripts/e2e-setup.sh)`;
  if (!existsSync(chromiumPath())) return `Chromium not found at ${chromiumPath()} (run scripts/e2e-setup.sh)`;
  if (!process.env.E2E_VSIX || !existsSync(process.env.E2E_VSIX))
    return 'E2E_VSIX is not set to a built .vsix (run through scripts/e2e.mjs)';
  return null;
}

export function elapsed(t0: number): string {
  return `${((Date.now() - t0) / 1000).toFixed(1)} s`;
}

export function log(msg: string): void {
  process.stdout.write(`      [e2e ${new Date().toISOString().slice(11, 23)}] ${msg}\n`);
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address() as net.AddressInfo;
      s.close(() => resolve(a.port));
    });
  });
}

export { sleep, waitFor };

function httpStatus(url: string, timeoutMs: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(url, { timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(0));
  });
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

function procTable(): Map<number, number> {
  const ppid = new Map<number, number>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ppid.set(Number(d), Number(fields[1]));
    } catch {
      /* gone */
    }
  }
  return ppid;
}

/** pid and all its descendants (by parent links). */
export function descendants(pid: number): number[] {
  const table = procTable();
  const out = [pid];
  for (let i = 0; i < out.length; i++) for (const [p, pp] of table) if (pp === out[i] && !out.includes(p)) out.push(p);
  return out;
}

/** Processes whose command line or working directory lies under `dir` (daemons that left the tree). */
/** Pids of the processes that belong to the folder. */
export function processesUnder(dir: string): number[] {
  return procsUnder(dir).map((p) => p.pid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function killAll(pids: number[], sig: NodeJS.Signals): void {
  for (const p of pids) {
    try {
      process.kill(p, sig);
    } catch {
      /* gone */
    }
  }
}

/** SIGTERM the tree (and stragglers under `dir`), wait up to graceMs, then SIGKILL what is left. */
export async function stopTree(rootPid: number | undefined, dir: string, graceMs = 8000): Promise<void> {
  const pids = new Set<number>([...(rootPid ? descendants(rootPid) : []), ...processesUnder(dir)]);
  if (rootPid) {
    try {
      process.kill(-rootPid, 'SIGTERM'); // its process group (spawned detached)
    } catch {
      /* gone */
    }
  }
  killAll([...pids], 'SIGTERM');
  const t0 = Date.now();
  while (Date.now() - t0 < graceMs && [...pids].some(alive)) await sleep(100);
  // Children started while shutting down (and daemons) are caught by a second scan.
  for (const p of [...(rootPid && alive(rootPid) ? descendants(rootPid) : []), ...processesUnder(dir)]) pids.add(p);
  const left = [...pids].filter(alive);
  if (left.length) {
    log(`SIGKILL ${left.length} process(es) still running: ${left.join(' ')}`);
    if (rootPid) {
      try {
        process.kill(-rootPid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }
    killAll(left, 'SIGKILL');
    await sleep(200);
  }
}

// ---------------------------------------------------------------------------------------------
// code-server
// ---------------------------------------------------------------------------------------------

export interface CodeServerOptions {
  /** Label for the temp folder and logs. */
  name: string;
  /** .vsix files to install with --install-extension before starting. */
  install?: string[];
  /** Extra user settings merged over the defaults below. */
  settings?: Record<string, unknown>;
  /** Remote (machine) settings: code-server's window is a remote one, where VS Code reads machine-scoped settings
   *  (most of GPU Sessions') from here and ignores them in the User settings. */
  machineSettings?: Record<string, unknown>;
  /** Files to create in the workspace folder (relative path → content). */
  workspaceFiles?: Record<string, string>;
  /** Use this folder as --extensions-dir (default: a fresh one). */
  extensionsDir?: string;
}

export interface CodeServer {
  port: number;
  url: string;
  root: string;
  home: string;
  workspace: string;
  userDataDir: string;
  extensionsDir: string;
  logFile: string;
  /** Environment code-server runs with (isolated HOME). */
  env: NodeJS.ProcessEnv;
  /** URL that opens the workspace (plus optional extra query). */
  folderUrl(extraQuery?: string): string;
  /** Tail of code-server's own output (for failure messages). */
  logTail(lines?: number): string;
  /** The extension's "GPU Sessions" output channel as written to the user-data logs (latest file). */
  extensionLog(lines?: number): { file: string; tail: string } | null;
  stop(): Promise<void>;
}

const BASE_SETTINGS: Record<string, unknown> = {
  'workbench.startupEditor': 'none',
  'workbench.tips.enabled': false,
  'workbench.enableExperiments': false,
  'workbench.welcomePage.walkthroughs.openOnInstall': false,
  'workbench.colorTheme': 'Default Dark Modern',
  'security.workspace.trust.enabled': false,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  'extensions.autoCheckUpdates': false,
  'extensions.autoUpdate': false,
  'extensions.ignoreRecommendations': true,
  'git.enabled': false,
  'git.autoRepositoryDetection': false,
  'files.watcherExclude': { '**/salvage/**': true },
  'window.restoreWindows': 'none',
  'chat.commandCenter.enabled': false,
  'chat.disableAIFeatures': true,
  'remote.autoForwardPorts': false,
  'workbench.editor.enablePreview': false,
};

function codeServerArgs(cs: { port: number; userDataDir: string; extensionsDir: string; config: string }): string[] {
  return [
    '--config',
    cs.config,
    '--auth',
    'none',
    '--bind-addr',
    `127.0.0.1:${cs.port}`,
    '--user-data-dir',
    cs.userDataDir,
    '--extensions-dir',
    cs.extensionsDir,
    '--disable-telemetry',
    '--disable-update-check',
    '--disable-workspace-trust',
    '--disable-getting-started-override',
    '--ignore-last-opened',
  ];
}

// Interrupted runs (Ctrl-C, the runner's overall timeout) still end what they started.
const active = new Set<string>();
let signalsHooked = false;
function hookSignals(): void {
  if (signalsHooked) return;
  signalsHooked = true;
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.once(sig, () => {
      log(`${sig}: stopping ${active.size} code-server run(s)`);
      void Promise.all([...active].map((r) => stopTree(undefined, r, 2000))).finally(() => process.exit(130));
    });
  }
}

/**
 * `code-server --install-extension` (about 1 s); returns the installed extension's folder.
 * Runs with the given environment (an isolated HOME) and its own config file.
 */
export function installVsix(vsix: string, extensionsDir: string, userDataDir: string, env: NodeJS.ProcessEnv): string {
  const t0 = Date.now();
  mkdirSync(extensionsDir, { recursive: true });
  const config = path.join(path.dirname(userDataDir), 'install.yaml');
  writeFileSync(config, 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n');
  const r = spawnSync(
    process.execPath,
    [
      codeServerEntry(),
      '--config',
      config,
      '--user-data-dir',
      userDataDir,
      '--extensions-dir',
      extensionsDir,
      '--install-extension',
      vsix,
      '--force',
    ],
    { env, encoding: 'utf8', timeout: 120_000 },
  );
  if (r.status !== 0)
    throw new Error(
      `code-server --install-extension ${vsix} failed (${r.error?.message ?? `exit ${r.status}`}):\n${r.stdout}\n${r.stderr}`,
    );
  const ext = readdirSync(extensionsDir).find((d) => d.startsWith(`${EXTENSION_ID}-`));
  if (!ext)
    throw new Error(
      `--install-extension: ${EXTENSION_ID} not found in ${extensionsDir} (${readdirSync(extensionsDir).join(', ')})\n${r.stdout}`,
    );
  log(`installed ${path.basename(vsix)} → ${path.join(extensionsDir, ext)} in ${elapsed(t0)}`);
  return path.join(extensionsDir, ext);
}

export async function startCodeServer(o: CodeServerOptions): Promise<CodeServer> {
  hookSignals();
  const entry = codeServerEntry();
  const root = mkdtempSync(path.join(os.tmpdir(), `gpu-sessions-e2e-${o.name}-`));
  active.add(root);
  const home = path.join(root, 'home');
  const userDataDir = path.join(root, 'user-data');
  const extensionsDir = o.extensionsDir ?? path.join(root, 'extensions');
  const workspace = path.join(root, 'workspace');
  const config = path.join(root, 'code-server.yaml');
  const logFile = path.join(root, 'code-server.log');
  for (const d of [home, path.join(home, '.ssh'), path.join(userDataDir, 'User'), extensionsDir, workspace])
    mkdirSync(d, { recursive: true });
  // A user's ~/.ssh/config without GPU hosts (nodes come from settings and the demo node).
  writeFileSync(path.join(home, '.ssh', 'config'), '# e2e: no Host entries\n', { mode: 0o600 });
  writeFileSync(config, 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n');
  writeFileSync(path.join(userDataDir, 'User', 'settings.json'), JSON.stringify({ ...BASE_SETTINGS, ...o.settings }, null, 2));
  if (o.machineSettings) {
    mkdirSync(path.join(userDataDir, 'Machine'), { recursive: true });
    writeFileSync(path.join(userDataDir, 'Machine', 'settings.json'), JSON.stringify(o.machineSettings, null, 2));
  }
  for (const [rel, content] of Object.entries(o.workspaceFiles ?? { 'README.md': '# e2e workspace\n' })) {
    mkdirSync(path.dirname(path.join(workspace, rel)), { recursive: true });
    writeFileSync(path.join(workspace, rel), content);
  }
  // Isolated environment: no ~/.ssh/config of the machine, no ~/.config/code-server.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: home,
    USER: process.env.USER ?? 'root',
    LANG: 'C.UTF-8',
    TMPDIR: os.tmpdir(),
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_DATA_HOME: path.join(home, '.local', 'share'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    ...(process.env.GS_HOST_SUITE ? { GS_HOST_SUITE: process.env.GS_HOST_SUITE } : {}),
  };
  const port = await freePort();
  const base = { port, userDataDir, extensionsDir, config };

  for (const vsix of o.install ?? []) installVsix(vsix, extensionsDir, userDataDir, env);

  const t0 = Date.now();
  const fd = openSync(logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(process.execPath, [entry, ...codeServerArgs(base), workspace], {
      env,
      cwd: workspace,
      detached: true,
      stdio: ['ignore', fd, fd],
    });
  } finally {
    closeSync(fd);
  }
  let exited: string | null = null;
  child.on('exit', (code, sig) => (exited = `exited ${code ?? sig}`));
  const url = `http://127.0.0.1:${port}`;
  const logTail = (n = 40) => {
    try {
      return readFileSync(logFile, 'utf8').split('\n').slice(-n).join('\n');
    } catch {
      return '';
    }
  };
  let stopped = false;
  const cs: CodeServer = {
    port,
    url,
    root,
    home,
    workspace,
    userDataDir,
    extensionsDir,
    logFile,
    env,
    folderUrl: (q) => `${url}/?folder=${encodeURIComponent(workspace)}${q ? `&${q}` : ''}`,
    logTail,
    extensionLog: (n = 30) => {
      const found = findFiles(path.join(userDataDir, 'logs'), (f) => /GPU Sessions\.log$/.test(f));
      const file = found.sort().pop();
      if (!file) return null;
      return { file, tail: readFileSync(file, 'utf8').split('\n').slice(-n).join('\n') };
    },
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await stopTree(child.pid, root);
      active.delete(root);
      if (process.env.E2E_KEEP_TMP !== '1') rmSync(root, { recursive: true, force: true, maxRetries: 3 });
    },
  };
  try {
    await waitFor(
      'code-server /healthz',
      async () => {
        if (exited) throw new Error(`code-server ${exited}:\n${logTail()}`);
        return (await httpStatus(`${url}/healthz`, 2000)) === 200;
      },
      60_000,
      200,
    );
  } catch (e) {
    await cs.stop();
    throw e;
  }
  log(`code-server ${CODE_SERVER_VERSION} (${o.name}) answering on ${url} after ${elapsed(t0)}`);
  return cs;
}

// ---------------------------------------------------------------------------------------------
// Chromium
// ---------------------------------------------------------------------------------------------

export interface BrowserSession {
  browser: Browser;
  context: BrowserContext;
  page: Page;
  /** Console errors of the page (for failure reports). */
  consoleErrors: string[];
  close(): Promise<void>;
}

export async function launchBrowser(): Promise<BrowserSession> {
  const { chromium } = require('playwright-core') as typeof import('playwright-core');
  const browser = await chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    timeout: 60_000,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
    ],
  });
  const context = await browser.newContext({ viewport: { width: 1440, height: 1000 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  const consoleErrors: string[] = [];
  page.on('console', (m) => {
    if (m.type() === 'error') consoleErrors.push(m.text().slice(0, 500));
  });
  page.on('pageerror', (e) => consoleErrors.push(`pageerror: ${e.message.slice(0, 500)}`));
  let closed = false;
  return {
    browser,
    context,
    page,
    consoleErrors,
    close: async () => {
      if (closed) return;
      closed = true;
      // about:blank first: otherwise code-server keeps the old extension host (and the workspace lock).
      await Promise.race([page.goto('about:blank').catch(() => undefined), sleep(10_000)]);
      await Promise.race([browser.close().catch(() => undefined), sleep(15_000)]);
    },
  };
}

function findFiles(dir: string, pred: (f: string) => boolean, depth = 8): string[] {
  const out: string[] = [];
  let entries: import('node:fs').Dirent[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && depth > 0) out.push(...findFiles(p, pred, depth - 1));
    else if (e.isFile() && pred(p)) out.push(p);
  }
  return out;
}

export function resetResults(): void {
  rmSync(RESULTS, { recursive: true, force: true });
  mkdirSync(RESULTS, { recursive: true });
}

export function writeResult(name: string, content: string): string {
  mkdirSync(RESULTS, { recursive: true });
  const p = path.join(RESULTS, name);
  writeFileSync(p, content);
  return p;
}
