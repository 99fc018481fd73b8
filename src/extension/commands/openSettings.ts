import * as vscode from 'vscode';
import type { Command } from './command';

/**
 * Opens the settings where GPU Sessions reads them. Its node settings are machine-scoped, and in a remote window
 * (Remote-SSH, code-server, …) VS Code reads machine-scoped settings from the Remote tab only — wherever the
 * extension itself runs: the User tab's values apply in local windows alone (the workbench parses them without the
 * machine scope there). So a remote window opens the Remote tab; a local one the User tab.
 */
export const openSettings: Command = {
  id: 'gpuSessions.openSettings',
  run: async () => {
    // not only where the extension runs on the workspace side: a UI-side extension in a Remote-SSH window reads
    // gpuSessions.nodes from the Remote tab too
    if (vscode.env.remoteName)
      try {
        return await vscode.commands.executeCommand('workbench.action.openRemoteSettings', { query: 'gpuSessions' });
      } catch {
        /* an older VS Code without the Remote tab command: the User tab below */
      }
    return vscode.commands.executeCommand('workbench.action.openSettings', 'gpuSessions');
  },
};
