/** gpuSessions.openSshConfig: the ssh config file the node list is read from (a new one opens unsaved, nothing is written). */
import { existsSync } from 'node:fs';
import * as vscode from 'vscode';
import type { Command } from './command';

export const openSshConfig: Command = {
  id: 'gpuSessions.openSshConfig',
  async run(s) {
    const file = s.nodes.rootConfigFile();
    const uri = existsSync(file) ? vscode.Uri.file(file) : vscode.Uri.file(file).with({ scheme: 'untitled' });
    return vscode.window.showTextDocument(uri, { preview: false });
  },
};
