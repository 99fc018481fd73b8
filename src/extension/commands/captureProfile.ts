/** gpuSessions.captureProfile — "Save Running Servers as Profile": the node's own SGLang servers as a launch profile. */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../../core/util/errors';
import { captureCandidates, captureServersAsProfile } from '../../core/launch/capture';
import type { Services } from '../services';
import type { Command } from './command';
import { treeServers } from '../treeServers';

async function captureProfileCommand(s: Services, arg?: unknown): Promise<vscode.Uri | undefined> {
  const node = (await s.resolver.resolve(arg, { title: 'Save Running Servers as Profile' }))?.name;
  if (!node) return undefined;
  const t = s.transportFor(node);
  let own;
  try {
    own = (
      await vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: reading the servers of ${node}…` },
        () => captureCandidates(t),
      )
    ).servers;
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: cannot read the servers of ${node}: ${errorMessage(e)}`);
    return undefined;
  }
  // exactly the servers the tree shows for this node (its account's, the demo's own folders)
  const shown = new Set((await treeServers(s, node)).map((x) => x.pid));
  own = own.filter((x) => shown.has(x.pid));
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
  let res;
  try {
    res = captureServersAsProfile(own, path.basename(target.fsPath));
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: ${errorMessage(e)}`);
    return undefined;
  }
  if (res.secrets.length)
    s.log.info(
      `Capture of ${node}: the profile refers to ${res.secrets.map((x) => `${x.name} (${x.what})`).join(', ')} instead of holding them; ` +
        `they are asked for once at launch and kept in SecretStorage.`,
    );
  await vscode.workspace.fs.writeFile(target, Buffer.from(res.json));
  await vscode.window.showTextDocument(target);
  const problems = [...res.warnings, ...res.errors];
  for (const w of problems) s.log.warn(`Capture of ${node}: ${w}`);
  const msg =
    `GPU Sessions: saved ${res.captured.length} server${res.captured.length > 1 ? 's' : ''} of ${node} ` +
    `as ${vscode.workspace.asRelativePath(target)}.`;
  if (problems.length)
    void vscode.window.showWarningMessage(
      `${msg} ${problems[0]}${problems.length > 1 ? ` (and ${problems.length - 1} more in the log)` : ''}`,
    );
  else void vscode.window.showInformationMessage(msg);
  return target;
}

export const captureProfile: Command = { id: 'gpuSessions.captureProfile', run: (s, arg?: unknown) => captureProfileCommand(s, arg) };
