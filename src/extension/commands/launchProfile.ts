/**
 * gpuSessions.launchProfile — "Launch Profile on Node…": pick a `.gpu-sessions/launch/*.json`, pick a node,
 * preflight + render, show the script and its diff against the node's last.sh, confirm (modal), launch with
 * progress, report; a copy of the script goes to `.gpu-sessions/launched/<node>/`. Refused in untrusted workspaces.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../../core/util/errors';
import { LaunchResult, PreflightIssue, launch, prepareLaunch } from '../../core/launch/launch';
import { LaunchProfile, parseProfileText, profileName, profileToJson } from '../../core/launch/profile';
import { ScriptDocuments } from '../scriptDocuments';
import type { Services } from '../services';
import { requireTrust } from '../trust';
import type { Command } from './command';

const PROFILE_GLOB = '.gpu-sessions/launch/*.json';

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
    const more = v.errors.length > 1 ? ` (and ${v.errors.length - 1} more)` : '';
    const c = await vscode.window.showErrorMessage(
      `GPU Sessions: ${vscode.workspace.asRelativePath(uri)} is not a valid launch profile: ${v.errors[0]}${more}`,
      { modal: false },
      'Open Profile',
    );
    if (c) await vscode.window.showTextDocument(uri);
    return undefined;
  }
  return v.groups ?? [v.profile];
}

/**
 * Secrets for launches: VS Code SecretStorage (`gpuSessions.secret:<name>`), else the extension host's
 * environment variable of that name, else a password box whose answer is stored in SecretStorage.
 */
export function secretSource(context: vscode.ExtensionContext): (name: string) => Promise<string | undefined> {
  return async (name) => {
    const key = `gpuSessions.secret:${name}`;
    const stored = await context.secrets.get(key);
    if (stored) return stored;
    if (process.env[name]) return process.env[name];
    const v = await vscode.window.showInputBox({
      title: `GPU Sessions: secret ${name}`,
      prompt:
        `The launch profile refers to the secret ${name}. Its value is kept in VS Code's SecretStorage and ` +
        `written only to ~/.gpu-sessions/secrets/${name} (mode 0600) on the node.`,
      password: true,
      ignoreFocusOut: true,
    });
    if (!v) return undefined;
    await context.secrets.store(key, v);
    return v;
  };
}

function reportLaunch(s: Services, node: string, name: string, r: LaunchResult): void {
  const ready = r.instances.filter((i) => i.ready);
  s.log.info(`Launch of ${name} on ${node}: ${r.outcome}, ${ready.length}/${r.instances.length} ready, script ${r.scriptPath ?? '-'}`);
  for (const i of r.instances.filter((x) => !x.ready)) {
    s.log.error(
      `  port ${i.port} (GPU ${i.gpus.join(',')}, pid ${i.pid ?? '-'}): ${i.state}: ${i.error}\n${i.lastLines.map((l) => `    | ${l}`).join('\n')}`,
    );
  }
  if (r.outcome === 'ready') {
    void vscode.window.showInformationMessage(
      `GPU Sessions: ${name} is up on ${node} — ${ready.length} instance${ready.length > 1 ? 's' : ''} ready (port${ready.length > 1 ? 's' : ''} ` +
        `${ready.map((i) => i.port).join(', ')}).`,
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
            `port ${i.port}  GPU ${i.gpus.join(',')}  pid ${i.pid ?? '-'}  ${i.state}${i.error ? `: ${i.error}` : ''}\nlog ` +
            `${i.logFile}\n${i.lastLines.map((l) => `  | ${l}`).join('\n')}`,
        )
        .join('\n\n');
      await vscode.window.showTextDocument(await vscode.workspace.openTextDocument({ content: text, language: 'log' }));
    });
}

async function launchProfileCommand(s: Services, docs: ScriptDocuments, arg?: unknown): Promise<LaunchResult | undefined> {
  if (!requireTrust('Launching servers')) return undefined;
  const uri = await pickProfile(arg instanceof vscode.Uri ? arg : undefined);
  if (!uri) return undefined;
  const groups = await loadProfile(uri);
  if (!groups) return undefined;
  const profile = groups[0];
  const node = (await s.resolver.resolve(arg, { title: `Launch ${path.basename(uri.fsPath)} on…` }))?.name;
  if (!node) return undefined;
  const fallbackName = path.basename(uri.fsPath, '.json');
  const name = profile.name ?? fallbackName;
  const t = s.transportFor(node);

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
          secrets: secretSource(s.context),
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
      .then(undefined, (e: unknown) => s.log.warn(`Could not keep a copy of the launch script: ${errorMessage(e)}`));
  }
  reportLaunch(s, node, name, result);
  void s.fleet.refresh(node);
  return result;
}

/** The argument: a tree element (node), or a profile Uri from the explorer. */
export function launchProfile(docs: ScriptDocuments): Command {
  return { id: 'gpuSessions.launchProfile', run: (s, arg?: unknown) => launchProfileCommand(s, docs, arg) };
}
