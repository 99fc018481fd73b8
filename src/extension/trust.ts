/** Launching, stopping and restarting run programs on the node: refused in an untrusted workspace. */
import * as vscode from 'vscode';

export function requireTrust(action: string): boolean {
  if (vscode.workspace.isTrusted) return true;
  void vscode.window
    .showErrorMessage(
      `GPU Sessions: ${action} is disabled in an untrusted workspace — launch profiles and stop commands run programs ` +
        `on your GPU nodes. Trust this workspace to ${action.toLowerCase()}.`,
      'Manage Workspace Trust',
    )
    .then((c) => c && vscode.commands.executeCommand('workbench.trust.manage'));
  return false;
}
