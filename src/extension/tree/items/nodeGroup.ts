/** A group of nodes at the top of the tree: an Included ssh config file, or a gpuSessions.nodes[].group. */
import * as vscode from 'vscode';
import { visible } from '../../../core/util/terminal';
import type { TreeNodeOf } from '../types';

export function nodeGroupItem(el: TreeNodeOf<'nodeGroup'>): vscode.TreeItem {
  const item = new vscode.TreeItem(visible(el.label), vscode.TreeItemCollapsibleState.Expanded);
  item.id = `nodeGroup:${el.key}`;
  const n = el.nodes.length;
  item.description = `${n} node${n === 1 ? '' : 's'}`;
  item.tooltip = el.file
    ? `${visible(el.file)}\nHosts of this ssh config file (gpuSessions.tree.grouping: configFile)`
    : `gpuSessions.nodes entries with "group": ${JSON.stringify(visible(el.label))}`;
  item.iconPath = new vscode.ThemeIcon(el.file ? 'file-code' : 'folder');
  // not "node…": the node menus match viewItem =~ /^node/
  item.contextValue = el.file ? 'folder.sshConfig' : 'folder.group';
  return item;
}
