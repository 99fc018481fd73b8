/** A group of nodes at the top of the tree: an Included ssh config file, or a gpuSessions.nodes[].group. */
import * as vscode from 'vscode';
import { visible } from '../../../core/util/terminal';
import type { TreeNodeOf } from '../types';

export function nodeGroupItem(el: TreeNodeOf<'nodeGroup'>): vscode.TreeItem {
  if (el.other) return otherHostsItem(el);
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

/** Hosts of the ssh config that are clearly not GPU nodes: last, collapsed, still usable. */
function otherHostsItem(el: TreeNodeOf<'nodeGroup'>): vscode.TreeItem {
  const item = new vscode.TreeItem(visible(el.label), vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `nodeGroup:${el.key}`;
  const n = el.nodes.length;
  item.description = `${n} host${n === 1 ? '' : 's'}`;
  item.tooltip =
    'Hosts of your ssh config that are clearly not GPU nodes: code hosts (github.com, gitlab.com, huggingface.co, …) ' +
    'and hosts whose probe found no nvidia-smi. They are listed here so the GPU nodes stay on top.';
  item.iconPath = new vscode.ThemeIcon('server-environment');
  item.contextValue = 'folder.other';
  return item;
}
