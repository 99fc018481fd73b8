/** gpuSessions.openSettings: the Settings editor filtered to gpuSessions.*. */
import * as vscode from 'vscode';
import type { Command } from './command';

export const openSettings: Command = {
  id: 'gpuSessions.openSettings',
  run: () => vscode.commands.executeCommand('workbench.action.openSettings', 'gpuSessions'),
};
