/** A line of information (connecting…, generation progress, the rental countdown, no GPUs, nothing found). */
import * as vscode from 'vscode';
import type { TreeContext, TreeNodeOf } from '../types';
import { liveRows } from './node';

export function infoItem(el: TreeNodeOf<'info'>, ctx: TreeContext): vscode.TreeItem {
  // A live row is rendered from the latest figures (the provider refreshes it in place).
  const cur = el.live ? liveRows(el.node, ctx).find((r) => r.type === 'info' && r.live === el.live) : undefined;
  const row = cur?.type === 'info' ? cur : el;
  const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
  if (el.live) item.id = `${el.node}:live:${el.live}`;
  item.description = row.detail;
  item.iconPath = new vscode.ThemeIcon(row.icon ?? 'info', row.color ? new vscode.ThemeColor(row.color) : undefined);
  if (row.tooltip) item.tooltip = row.tooltip;
  // a crashed server's problem row has its menu: Restart Server first, Open Log
  item.contextValue = row.crashedPort !== undefined ? 'problem.crashed' : 'info';
  return item;
}
