/** A failure under a node (unreachable, host key, auth…): its action shows the log, never an endless spinner. */
import * as vscode from 'vscode';
import { visible } from '../../../core/util/terminal';
import { ERROR_TITLE, TreeNodeOf } from '../types';

export function errorItem(el: TreeNodeOf<'error'>): vscode.TreeItem {
  const item = new vscode.TreeItem(ERROR_TITLE[el.code] ?? 'Error', vscode.TreeItemCollapsibleState.None);
  item.description = visible(el.message.split('\n')[0]);
  item.tooltip = visible(el.message, true);
  item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('errorForeground'));
  item.contextValue = 'error';
  if (el.code === 'host-key-unknown') {
    // Asked only from here (a user's action), never from a background reconnect.
    item.label = 'Host key not trusted — click to review it';
    item.tooltip = `${visible(el.message, true)}\n\nClick to see the key's fingerprint and decide whether to trust it.`;
    item.command = { command: 'gpuSessions.refreshNode', title: 'Review Host Key', arguments: [el.node] };
  } else item.command = { command: 'gpuSessions.showLog', title: 'Show Log' };
  return item;
}
