/** gpuSessions.tailLog (one server's or artifact's log) and gpuSessions.tailAllGpuLogs (every server log of a node). */
import * as vscode from 'vscode';
import type { TreeNode } from '../tree';
import type { Command } from './command';

export const tailLog: Command = {
  id: 'gpuSessions.tailLog',
  async run(s, el?: TreeNode | string, remotePath?: string) {
    let nodeName: string | undefined;
    let file: string | undefined;
    if (typeof el === 'string') {
      nodeName = el;
      file = remotePath;
    } else if (el?.type === 'server') {
      nodeName = el.node;
      file = el.server.logFile ?? undefined;
    } else if (el?.type === 'artifact') {
      nodeName = el.node;
      file = el.artifact.path;
    }
    if (!nodeName || !file) {
      void vscode.window.showInformationMessage(
        'GPU Sessions: choose a server or a log file in the GPU Sessions view (this server has no log file on disk).',
      );
      return;
    }
    const node = s.fleet.node(nodeName);
    if (!node) return;
    return s.logViews.open(node.name, s.transportFor(node), [file]);
  },
};

export const tailAllGpuLogs: Command = {
  id: 'gpuSessions.tailAllGpuLogs',
  async run(s, el?: TreeNode | string) {
    // From the palette (no argument): which node (it did nothing).
    const node = await s.resolver.resolve(el, { title: 'Tail All GPU Logs' });
    if (!node) return;
    const p = s.fleet.status(node.name).probe ?? (await s.fleet.refresh(node.name)).probe;
    let files = [...new Set((p?.servers ?? []).map((x) => x.logFile).filter((f): f is string => !!f))];
    if (!files.length)
      files = (p?.artifacts ?? [])
        .filter((a) => a.kind === 'log' && /gpu\d+|sglang/i.test(a.path))
        .map((a) => a.path)
        .slice(0, 16);
    if (!files.length) {
      void vscode.window.showInformationMessage(`GPU Sessions: no SGLang server logs found on ${node.name}.`);
      return;
    }
    return s.logViews.open(node.name, s.transportFor(node), files, `all GPU logs (${files.length})`);
  },
};
