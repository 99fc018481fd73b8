import * as vscode from 'vscode';
import type { Command } from './command';

/**
 * Opens the settings where GPU Sessions reads them. Its node settings are machine-scoped: when the extension runs
 * on the remote side of a window (code-server, or Remote-SSH installed on the workspace side), they are read from
 * the Remote tab, so that tab is opened; otherwise the User tab.
 */
export const openSettings: Command = {
  id: 'gpuSessions.openSettings',
  run: async () => {
    const self = vscode.extensions.all.find((e) => e.packageJSON?.name === 'gpu-sessions');
    const onRemote = Boolean(vscode.env.remoteName) && self?.extensionKind === vscode.ExtensionKind.Workspace;
    if (onRemote)
      try {
        return await vscode.commands.executeCommand('workbench.action.openRemoteSettings', { query: 'gpuSessions' });
      } catch {
        /* an older VS Code without the Remote tab command: the User tab below */
      }
    return vscode.commands.executeCommand('workbench.action.openSettings', 'gpuSessions');
  },
};
