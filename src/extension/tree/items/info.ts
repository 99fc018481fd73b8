/** A line of information (connecting…, generation progress, no GPUs, nothing found). */
import * as vscode from 'vscode';
import type { TreeNodeOf } from '../types';

export function infoItem(el: TreeNodeOf<'info'>): vscode.TreeItem {
  const item = new vscode.TreeItem(el.label, vscode.TreeItemCollapsibleState.None);
  item.description = el.detail;
  item.iconPath = new vscode.ThemeIcon(el.icon ?? 'info');
  item.contextValue = 'info';
  return item;
}
