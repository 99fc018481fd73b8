/** gpuSessions.copyPath: an artifact's remote path, or a server's log file (else its command line). */
import * as vscode from 'vscode';
import type { TreeNode } from '../tree';
import type { Command } from './command';

export const copyPath: Command = {
  id: 'gpuSessions.copyPath',
  async run(_s, el?: TreeNode) {
    const p =
      el?.type === 'artifact' ? el.artifact.path : el?.type === 'server' ? (el.server.logFile ?? el.server.args.join(' ')) : undefined;
    if (p) await vscode.env.clipboard.writeText(p);
  },
};
