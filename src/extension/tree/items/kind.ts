/** Artifacts of one kind (logs, launch scripts, progress files, …). */
import * as vscode from 'vscode';
import type { ArtifactKind } from '../../../core/node/probe';
import type { TreeNode, TreeNodeOf } from '../types';

const KIND_LABEL: Record<ArtifactKind, string> = {
  log: 'Logs',
  'launch-script': 'Launch scripts',
  script: 'Shell scripts',
  python: 'Python scripts',
  progress: 'Progress files',
  config: 'Configs',
  patch: 'Patches',
  'git-repo': 'Git repositories',
};
export const KIND_ORDER: ArtifactKind[] = ['launch-script', 'log', 'progress', 'config', 'patch', 'script', 'python', 'git-repo'];

export function kindItem(el: TreeNodeOf<'kind'>): vscode.TreeItem {
  const item = new vscode.TreeItem(KIND_LABEL[el.kind], vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `${el.node}:kind:${el.kind}`;
  item.description = String(el.items.length);
  item.iconPath = new vscode.ThemeIcon('folder');
  item.contextValue = 'kind';
  return item;
}

export function kindChildren(el: TreeNodeOf<'kind'>): TreeNode[] {
  return el.items.map((artifact) => ({ type: 'artifact', node: el.node, artifact }));
}
