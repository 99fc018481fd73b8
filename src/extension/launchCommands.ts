/**
 * Launch profiles in VS Code — the thin layer over src/core/launch:
 *  - "GPU Sessions: Launch Profile on Node…" (gpuSessions.launchProfile): pick a `.gpu-sessions/launch/*.json`,
 *    pick a node, preflight + render, show the script and its diff against the node's last.sh, confirm
 *    (modal), launch with progress, report; a copy of the script goes to `.gpu-sessions/launched/<node>/`.
 *  - "GPU Sessions: Save Running Servers as Profile" (gpuSessions.captureProfile).
 *  - "GPU Sessions: Stop Server" (gpuSessions.stopServer): confirmed, with a Drain choice.
 * Launching and stopping are refused in untrusted workspaces.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../core/util/errors';
import type { Fleet } from '../core/node/fleet';
import { LaunchResult, PreflightIssue, ScannedServer, launch, prepareLaunch, scanServers, stopServer } from '../core/launch/launch';
import { LaunchProfile, captureProfile, parseProfileText, profileName, profileToJson, validateProfile } from '../core/launch/profile';
import type { Logger } from '../core/util/logger';
import type { Transport } from '../core/ssh/transport';
import type { TreeNode } from './tree';

export interface LaunchDeps {
  fleet: Fleet;
  transportFor(nodeName: string): Transport;
  log: Logger;
  /** A secret's value by name (SecretStorage, the environment, or asked for once); set by registerLaunchCommands. */
  secret?: (name: string) => Promise<string | undefined>;
}

/**
 * Secrets for launches: VS Code SecretStorage (`gpuSessions.secret:<name>`), else the extension host's
 * environment variable of that name, else a password box whose answer is stored in SecretStorage.
 */
function secretSource(context: vscode.ExtensionContext): (name: string) => Promise<string | undefined> {
  return async (name) => {
    const key = `gpuSessions.secret:${name}`;
    const stored = await context.secrets.get(key);
    if (stored) return stored;
    if (process.env[name]) return process.env[name];
    const v = await vscode.window.showInputBox({
      title: `GPU Sessions: secret ${name}`,
      prompt: `The launch profile refers to the secret ${name}. Its value is kept in VS Code's SecretStorage and written only to ~/.gpu-sessions/secrets/${name} (mode 0600) on the node.`,
      password: true,
      ignoreFocusOut: true,
    });
    if (!v) return undefined;
    await context.secrets.store(key, v);
    return v;
  };
}

const SCHEME = 'gpu-sessions-launch';
export const PROFILE_GLOB = '.gpu-sessions/launch/*.json';

/** Read-only virtual documents for the rendered script and the node's last.sh (for vscode.diff). */
class ScriptDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }
  put(node: string, file: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: SCHEME, path: `/${node}/${file}`, query: String(Date.now()) });
    this.texts.set(uri.toString(), text);
    if (this.texts.size > 40) this.texts.delete(this.texts.keys().next().value as string);
    this.emitter.fire(uri);
    return uri;
  }
  dispose(): void {
    this.emitter.dispose();
  }
}

function requireTrust(action: string): boolean {
  if (vscode.workspace.isTrusted) return true;
  void vscode.window
    .showErrorMessage(
      `GPU Sessions: ${action} is disabled in an untrusted workspace — launch profiles and stop commands run programs on your GPU nodes. Trust this workspace to ${action.toLowerCase()}.`,
      'Manage Workspace Trust',
    )
    .then((c) => c && vscode.commands.executeCommand('workbench.trust.manage'));
  return false;
}

function nodeOf(arg: unknown): string | undefined {
  const el = arg as TreeNode | undefined;
  if (!el || typeof el !== 'object' || !('type' in el)) return undefined;
  return el.type === 'node' ? el.node.name : (el as { node?: string }).node;
}

async function pickNode(deps: LaunchDeps, title: string, preset?: string): Promise<string | undefined> {
  if (preset && deps.fleet.node(preset)) return preset;
  const nodes = deps.fleet.nodes();
  if (!nodes.length) {
    void vscode.window.showErrorMessage('GPU Sessions: no nodes. Add Host entries to ~/.ssh/config or gpuSessions.nodes.');
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    nodes.map((n) => ({ label: n.name, description: `${n.user ? n.user + '@' : ''}${n.host}:${n.port}` })),
    { title, placeHolder: 'Which node?' },
  );
  return pick?.label;
}

function issuesText(issues: PreflightIssue[], prefix: string): string[] {
  return issues.map((i) => `${prefix}${i.message}`);
}

const EXAMPLE_PROFILE: LaunchProfile = {
  name: 'example',
  description: "One SGLang server per GPU, like the seeds' launch_tuned.sh.",
  modelPath: '~/models/Qwen3.6-27B',
  servedModelName: 'qwen3.6-27b',
  gpus: 'all',
  layout: 'per-gpu',
  basePort: 30000,
  host: '127.0.0.1',
  memFractionStatic: 0.88,
  contextLength: 32768,
  reasoningParser: 'qwen3',
  trustRemoteCode: true,
  speculative: { algorithm: 'NEXTN', numSteps: 3, eagleTopk: 1, numDraftTokens: 4 },
  enableMetrics: true,
  extraArgs: [],
  env: {},
  venv: '~/venv',
  logDir: '~/logs',
};

async function pickProfile(arg: unknown): Promise<vscode.Uri | undefined> {
  if (arg instanceof vscode.Uri) return arg;
  const files = (await vscode.workspace.findFiles(PROFILE_GLOB, undefined, 500)).sort((a, b) => a.fsPath.localeCompare(b.fsPath));
  if (!files.length) {
    const ws = vscode.workspace.workspaceFolders?.[0];
    const create = 'Create Example Profile';
    const c = await vscode.window.showInformationMessage(`GPU Sessions: no launch profiles in ${PROFILE_GLOB}.`, ...(ws ? [create] : []));
    if (c === create && ws) {
      const uri = vscode.Uri.joinPath(ws.uri, '.gpu-sessions', 'launch', 'example.json');
      await vscode.workspace.fs.writeFile(uri, Buffer.from(profileToJson(EXAMPLE_PROFILE)));
      await vscode.window.showTextDocument(uri);
    }
    return undefined;
  }
  if (files.length === 1) return files[0];
  const pick = await vscode.window.showQuickPick(
    files.map((f) => ({ label: path.basename(f.fsPath, '.json'), description: vscode.workspace.asRelativePath(f), uri: f })),
    { title: 'Launch Profile on Node', placeHolder: 'Which launch profile?' },
  );
  return pick?.uri;
}

async function loadProfile(uri: vscode.Uri): Promise<LaunchProfile[] | undefined> {
  let text: string;
  try {
    // An open, unsaved editor wins over the file on disk.
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
    text = open ? open.getText() : Buffer.from(await vscode.workspace.fs.readFile(uri)).toString('utf8');
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: cannot read ${vscode.workspace.asRelativePath(uri)}: ${errorMessage(e)}`);
    return undefined;
  }
  const v = parseProfileText(text);
  if (!v.profile) {
    const c = await vscode.window.showErrorMessage(
      `GPU Sessions: ${vscode.workspace.asRelativePath(uri)} is not a valid launch profile: ${v.errors[0]}${v.errors.length > 1 ? ` (and ${v.errors.length - 1} more)` : ''}`,
      { modal: false },
      'Open Profile',
    );
    if (c) await vscode.window.showTextDocument(uri);
    return undefined;
  }
  return v.groups ?? [v.profile];
}

function reportLaunch(deps: LaunchDeps, node: string, name: string, r: LaunchResult): void {
  const ready = r.instances.filter((i) => i.ready);
  deps.log.info(`Launch of ${name} on ${node}: ${r.outcome}, ${ready.length}/${r.instances.length} ready, script ${r.scriptPath ?? '-'}`);
  for (const i of r.instances.filter((x) => !x.ready)) {
    deps.log.error(
      `  port ${i.port} (GPU ${i.gpus.join(',')}, pid ${i.pid ?? '-'}): ${i.state}: ${i.error}\n${i.lastLines.map((l) => `    | ${l}`).join('\n')}`,
    );
  }
  if (r.outcome === 'ready') {
    void vscode.window.showInformationMessage(
      `GPU Sessions: ${name} is up on ${node} — ${ready.length} instance${ready.length > 1 ? 's' : ''} ready (port${ready.length > 1 ? 's' : ''} ${ready.map((i) => i.port).join(', ')}).`,
    );
    return;
  }
  if (r.outcome === 'refused') {
    void vscode.window.showErrorMessage(`GPU Sessions: launch on ${node} refused: ${r.preflight.refusals.map((x) => x.message).join(' ')}`);
    return;
  }
  const bad = r.instances.filter((i) => !i.ready);
  const details = 'Show Details';
  void vscode.window
    .showErrorMessage(
      `GPU Sessions: ${bad.length} of ${r.instances.length} instance(s) of ${name} on ${node} did not become ready: ${bad
        .slice(0, 2)
        .map((i) => `port ${i.port}: ${i.error}`)
        .join('; ')}${bad.length > 2 ? '; …' : ''}`,
      details,
    )
    .then(async (c) => {
      if (c !== details) return;
      const text = r.instances
        .map(
          (i) =>
            `port ${i.port}  GPU ${i.gpus.join(',')}  pid ${i.pid ?? '-'}  ${i.state}${i.error ? `: ${i.error}` : ''}\nlog ${i.logFile}\n${i.lastLines.map((l) => `  | ${l}`).join('\n')}`,
        )
        .join('\n\n');
      await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ content: text, language: 'log' }));
    });
}

async function launchProfileCommand(deps: LaunchDeps, docs: ScriptDocuments, arg?: unknown): Promise<LaunchResult | undefined> {
  if (!requireTrust('Launching servers')) return undefined;
  const uri = await pickProfile(arg instanceof vscode.Uri ? arg : undefined);
  if (!uri) return undefined;
  const groups = await loadProfile(uri);
  if (!groups) return undefined;
  const profile = groups[0];
  const node = await pickNode(deps, `Launch ${path.basename(uri.fsPath)} on…`, nodeOf(arg));
  if (!node) return undefined;
  const fallbackName = path.basename(uri.fsPath, '.json');
  const name = profile.name ?? fallbackName;
  const t = deps.transportFor(node);

  let override = false;
  let prep;
  try {
    prep = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: checking ${node} for ${name}…` },
      () => prepareLaunch(t, groups),
    );
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: cannot prepare the launch on ${node}: ${errorMessage(e)}`);
    return undefined;
  }
  if (!prep.script) {
    void vscode.window.showErrorMessage(
      `GPU Sessions: cannot launch ${name} on ${node}: ${[...prep.preflight.refusals.map((x) => x.message), prep.renderError ?? ''].filter(Boolean).join(' ')}`,
    );
    return undefined;
  }

  // Show the script, and its diff against the node's last launched one.
  const file = `${profileName(profile, fallbackName)}.sh`;
  const newUri = docs.put(node, file, prep.script);
  if (prep.previousScript !== null) {
    const oldUri = docs.put(node, 'last.sh', prep.previousScript);
    await vscode.commands.executeCommand('vscode.diff', oldUri, newUri, `${node}: last launched ↔ ${file}`, { preview: true });
  } else {
    await vscode.window.showTextDocument(newUri, { preview: true });
  }

  const pf = prep.preflight;
  const blocking = pf.refusals.filter((x) => !x.overridable);
  const detail = [
    ...prep.instances.map((i) => `GPU ${i.gpus.join(',')} → port ${i.port}, log ${i.logFile}`),
    ...(pf.sglangVersion ? [`sglang ${pf.sglangVersion}`] : []),
    ...issuesText(pf.warnings, '⚠ '),
    ...issuesText(pf.refusals, '✖ '),
    prep.previousScript !== null
      ? 'The editor shows the diff against the last script launched on this node.'
      : 'The editor shows the script.',
  ].join('\n');
  if (blocking.length) {
    void vscode.window.showErrorMessage(`GPU Sessions: launch of ${name} on ${node} refused`, { modal: true, detail });
    return undefined;
  }
  const go = 'Launch';
  const anyway = 'Launch Anyway (GPUs in use)';
  const choice = await vscode.window.showWarningMessage(
    `Launch ${name} on ${node}: ${prep.instances.length} SGLang instance${prep.instances.length > 1 ? 's' : ''}?`,
    { modal: true, detail },
    ...(pf.refusals.length ? [anyway] : [go]),
  );
  if (!choice) return undefined;
  override = choice === anyway;

  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: launching ${name} on ${node}`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      try {
        return await launch(t, groups, {
          secrets: deps.secret,
          override,
          expectScript: prep.script!,
          fallbackName,
          signal: ac.signal,
          onProgress: (p) => progress.report({ message: p.message }),
        });
      } catch (e) {
        if (ac.signal.aborted)
          void vscode.window.showWarningMessage(
            `GPU Sessions: stopped waiting for ${name} on ${node}; the servers started so far keep running.`,
          );
        else
          void vscode.window
            .showErrorMessage(`GPU Sessions: launch of ${name} on ${node} failed: ${errorMessage(e)}`, 'Show Log')
            .then((c) => c && vscode.commands.executeCommand('gpuSessions.showLog'));
        return undefined;
      }
    },
  );
  if (!result) return undefined;
  // Keep the launched script in the workspace too.
  const ws = vscode.workspace.getWorkspaceFolder(uri) ?? vscode.workspace.workspaceFolders?.[0];
  if (ws && result.scriptPath) {
    const copy = vscode.Uri.joinPath(
      ws.uri,
      '.gpu-sessions',
      'launched',
      node.replace(/[^A-Za-z0-9._-]+/g, '_'),
      path.posix.basename(result.scriptPath),
    );
    await vscode.workspace.fs
      .writeFile(copy, Buffer.from(result.script))
      .then(undefined, (e: unknown) => deps.log.warn(`Could not keep a copy of the launch script: ${errorMessage(e)}`));
  }
  reportLaunch(deps, node, name, result);
  void deps.fleet.refresh(node);
  return result;
}

async function captureProfileCommand(deps: LaunchDeps, arg?: unknown): Promise<vscode.Uri | undefined> {
  const node = await pickNode(deps, 'Save Running Servers as Profile', nodeOf(arg));
  if (!node) return undefined;
  const t = deps.transportFor(node);
  let scan;
  try {
    scan = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: reading the servers of ${node}…` },
      () => scanServers(t),
    );
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: cannot read the servers of ${node}: ${errorMessage(e)}`);
    return undefined;
  }
  const own = scan.servers.filter((s) => scan.ownUid === null || scan.ownUid === 0 || s.uid === scan.ownUid);
  if (!own.length) {
    void vscode.window.showInformationMessage(`GPU Sessions: no SGLang server of this account is running on ${node}.`);
    return undefined;
  }
  const ws = vscode.workspace.workspaceFolders?.[0];
  const target = await vscode.window.showSaveDialog({
    title: `Save the running servers of ${node} as a launch profile`,
    defaultUri: ws ? vscode.Uri.joinPath(ws.uri, '.gpu-sessions', 'launch', `${node.replace(/[^A-Za-z0-9._-]+/g, '_')}.json`) : undefined,
    filters: { 'Launch profile': ['json'] },
  });
  if (!target) return undefined;
  const base = path.basename(target.fsPath, '.json');
  let res;
  try {
    res = captureProfile(own, {
      name: /^[A-Za-z0-9][A-Za-z0-9._ -]{0,79}$/.test(base) ? base : undefined,
      virtualEnv: Object.fromEntries(own.map((s) => [s.pid, s.virtualEnv ?? undefined])),
      env: Object.fromEntries(own.map((s) => [s.pid, s.env])),
      secretEnv: Object.fromEntries(own.map((s) => [s.pid, s.secretEnv])),
    });
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: ${errorMessage(e)}`);
    return undefined;
  }
  const json = profileToJson(res.groups);
  if (res.secrets.length)
    deps.log.info(
      `Capture of ${node}: the profile refers to ${res.secrets.map((x) => `${x.name} (${x.what})`).join(', ')}; supply them at launch (asked for once, kept in SecretStorage).`,
    );
  await vscode.workspace.fs.writeFile(target, Buffer.from(json));
  await vscode.window.showTextDocument(target);
  const problems = [...res.warnings, ...validateProfile(JSON.parse(json)).errors];
  for (const w of problems) deps.log.warn(`Capture of ${node}: ${w}`);
  const msg = `GPU Sessions: saved ${res.captured.length} server${res.captured.length > 1 ? 's' : ''} of ${node} as ${vscode.workspace.asRelativePath(target)}.`;
  if (problems.length)
    void vscode.window.showWarningMessage(
      `${msg} ${problems[0]}${problems.length > 1 ? ` (and ${problems.length - 1} more in the log)` : ''}`,
    );
  else void vscode.window.showInformationMessage(msg);
  return target;
}

async function stopServerCommand(deps: LaunchDeps, arg?: unknown, restart = false): Promise<boolean> {
  const Verb = restart ? 'Restart' : 'Stop';
  if (!requireTrust(restart ? 'Restarting servers' : 'Stopping servers')) return false;
  const el = arg as TreeNode | undefined;
  const node = await pickNode(deps, `${Verb} Server`, nodeOf(arg));
  if (!node) return false;
  const t = deps.transportFor(node);
  let port: number;
  let pid: number | undefined;
  let what: string;
  if (el && typeof el === 'object' && el.type === 'server') {
    port = el.server.port;
    pid = el.server.pid;
    what = `${el.server.servedModelName ?? el.server.modelPath ?? 'SGLang'} (pid ${pid}, GPU ${el.server.gpus.join(',') || '?'})`;
  } else {
    let servers: ScannedServer[];
    try {
      servers = (await scanServers(t)).servers;
    } catch (e) {
      void vscode.window.showErrorMessage(`GPU Sessions: cannot read the servers of ${node}: ${errorMessage(e)}`);
      return false;
    }
    if (!servers.length) {
      void vscode.window.showInformationMessage(`GPU Sessions: no SGLang server is running on ${node}.`);
      return false;
    }
    const pick = await vscode.window.showQuickPick(
      servers.map((s) => ({
        label: `port ${s.port}`,
        description: `${s.servedModelName ?? s.modelPath ?? ''}`,
        detail: `pid ${s.pid}, GPU ${s.gpus.join(',') || '?'}${s.logFile ? `, log ${s.logFile}` : ''}`,
        s,
      })),
      { title: `${Verb} Server on ${node}`, placeHolder: 'Which server?' },
    );
    if (!pick) return false;
    port = pick.s.port;
    pid = pick.s.pid;
    what = `${pick.s.servedModelName ?? pick.s.modelPath ?? 'SGLang'} (pid ${pid}, GPU ${pick.s.gpus.join(',') || '?'})`;
  }
  const stop = Verb;
  const drainStop = `Drain, then ${Verb}`;
  const choice = await vscode.window.showWarningMessage(
    `${Verb} the SGLang server on port ${port} of ${node}?`,
    {
      modal: true,
      detail: `${what}\n\n${Verb}: SIGTERM now (SIGKILL after 30 s); requests in flight fail.\nDrain, then ${Verb}: wait until its running requests reach 0 (stop sending new ones first), then stop it.${restart ? '\n\nIt is then started again with the same command line, environment and GPUs, and awaited until ready.' : ''}`,
    },
    drainStop,
    stop,
  );
  if (!choice) return false;
  if (restart) {
    const rr = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: restarting port ${port} on ${node}`, cancellable: true },
      async (progress, token) => {
        const ac = new AbortController();
        token.onCancellationRequested(() => ac.abort());
        try {
          const { restartServer } = await import('../core/launch/restart');
          return await restartServer(t, {
            port,
            drain: choice === drainStop,
            signal: ac.signal,
            onProgress: (m) => progress.report({ message: m }),
          });
        } catch (e) {
          if (!ac.signal.aborted)
            void vscode.window.showErrorMessage(`GPU Sessions: restarting port ${port} on ${node} failed: ${errorMessage(e)}`);
          return undefined;
        }
      },
    );
    if (!rr) return false;
    deps.log.info(`Restart on ${node}: ${rr.message}`);
    const ok = rr.launch?.outcome === 'ready';
    if (ok) void vscode.window.showInformationMessage(`GPU Sessions: ${rr.message}`);
    else void vscode.window.showWarningMessage(`GPU Sessions: ${rr.message}`);
    void deps.fleet.refresh(node);
    return ok;
  }
  const r = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: stopping port ${port} on ${node}`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      try {
        return await stopServer(t, {
          port,
          pid,
          drain: choice === drainStop,
          signal: ac.signal,
          onProgress: (m) => progress.report({ message: m }),
        });
      } catch (e) {
        if (!ac.signal.aborted)
          void vscode.window.showErrorMessage(`GPU Sessions: stopping port ${port} on ${node} failed: ${errorMessage(e)}`);
        return undefined;
      }
    },
  );
  if (!r) return false;
  deps.log.info(`Stop on ${node}: ${r.message}`);
  if (r.stopped) void vscode.window.showInformationMessage(`GPU Sessions: ${r.message}`);
  else void vscode.window.showWarningMessage(`GPU Sessions: ${r.message}`);
  void deps.fleet.refresh(node);
  return r.stopped;
}

/** Registers gpuSessions.launchProfile, gpuSessions.captureProfile and gpuSessions.stopServer. */
export function registerLaunchCommands(context: vscode.ExtensionContext, deps: LaunchDeps): void {
  deps = { secret: secretSource(context), ...deps };
  const docs = new ScriptDocuments();
  context.subscriptions.push(
    docs,
    vscode.workspace.registerTextDocumentContentProvider(SCHEME, docs),
    // argument: a tree element (node), or a profile Uri from the explorer
    vscode.commands.registerCommand('gpuSessions.launchProfile', (arg?: unknown) => launchProfileCommand(deps, docs, arg)),
    vscode.commands.registerCommand('gpuSessions.captureProfile', (arg?: unknown) => captureProfileCommand(deps, arg)),
    vscode.commands.registerCommand('gpuSessions.stopServer', (arg?: unknown) => stopServerCommand(deps, arg)),
    vscode.commands.registerCommand('gpuSessions.restartServer', (arg?: unknown) => stopServerCommand(deps, arg, true)),
  );
}
