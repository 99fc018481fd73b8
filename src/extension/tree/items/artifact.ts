/** One artifact file: size and folder; its context value says its kind (log, progress, …). */
import * as vscode from 'vscode';
import { visible } from '../../../core/util/terminal';
import { formatBytes } from '../../../core/util/format';
import type { TreeNodeOf } from '../types';

export function artifactItem(el: TreeNodeOf<'artifact'>): vscode.TreeItem {
  const a = el.artifact;
  const base = a.path.split('/').pop() ?? a.path;
  const item = new vscode.TreeItem(base, vscode.TreeItemCollapsibleState.None);
  item.id = `${el.node}:artifact:${a.path}`;
  const dir = a.path.slice(0, a.path.length - base.length - 1);
  item.description = `${formatBytes(a.size)} · ${dir}`;
  item.tooltip = `${visible(a.path)}\n${formatBytes(a.size)} · modified ${new Date(a.mtime).toLocaleString()}`;
  item.iconPath = new vscode.ThemeIcon(
    a.kind === 'log' ? 'output' : a.kind === 'git-repo' ? 'repo' : a.kind === 'progress' ? 'graph' : 'file',
  );
  item.contextValue = `artifact.${a.kind}`;
  return item;
}
