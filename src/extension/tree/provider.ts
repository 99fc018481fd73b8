/**
 * The Nodes tree provider: dispatches each element to its item file (tree/items/<type>.ts) and
 * re-renders a node when the fleet, its live figures or its salvage verdict change.
 */
import * as vscode from 'vscode';
import type { Fleet } from '../../core/node/fleet';
import type { NodeLive } from '../../core/node/monitor';
import type { SalvageVerdicts } from '../salvageVerdicts';
import { artifactItem } from './items/artifact';
import { errorItem } from './items/error';
import { gpuItem } from './items/gpu';
import { groupChildren, groupItem } from './items/group';
import { infoItem } from './items/info';
import { kindChildren, kindItem } from './items/kind';
import { nodeChildren, nodeItem } from './items/node';
import { serverItem } from './items/server';
import type { TreeContext, TreeNode } from './types';
import { redactOutput } from '../../core/util/redact';

/** The tree's boundary: label, description and tooltip (plain or Markdown) with secrets redacted. */
export function redactTreeItem(item: vscode.TreeItem): vscode.TreeItem {
  if (typeof item.label === 'string') item.label = redactOutput(item.label);
  else if (item.label) item.label = { ...item.label, label: redactOutput(item.label.label) };
  if (typeof item.description === 'string') item.description = redactOutput(item.description);
  if (typeof item.tooltip === 'string') item.tooltip = redactOutput(item.tooltip);
  else if (item.tooltip) {
    const md = new vscode.MarkdownString(redactOutput(item.tooltip.value), item.tooltip.supportThemeIcons);
    md.isTrusted = item.tooltip.isTrusted;
    item.tooltip = md;
  }
  return item;
}

export class NodesTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable, TreeContext {
  private readonly emitter = new vscode.EventEmitter<TreeNode | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly unsubscribe: (() => void)[];
  private readonly nodeItems = new Map<string, TreeNode>();
  /** Live figures per node (log stats, health, progress), supplied by the extension. */
  liveFor: (node: string) => NodeLive | undefined = () => undefined;

  constructor(
    readonly fleet: Fleet,
    /** Latest salvage verdict per node. */
    readonly verdicts: SalvageVerdicts,
  ) {
    this.unsubscribe = [
      fleet.onDidChange((name) => this.emitter.fire(name ? this.nodeItems.get(name) : undefined)),
      verdicts.onDidChange(() => this.refreshView()),
    ];
  }

  /** Re-render one node's subtree (live stats changed); the whole view when the node is not shown. */
  refreshNode(name: string): void {
    this.emitter.fire(this.nodeItems.get(name));
  }

  refreshView(): void {
    this.emitter.fire(undefined);
  }

  /** Every label, description and tooltip goes through the boundary redaction (redactTreeItem). */
  getTreeItem(el: TreeNode): vscode.TreeItem {
    return redactTreeItem(this.buildTreeItem(el));
  }

  private buildTreeItem(el: TreeNode): vscode.TreeItem {
    switch (el.type) {
      case 'node':
        return nodeItem(el, this);
      case 'error':
        return errorItem(el);
      case 'info':
        return infoItem(el);
      case 'group':
        return groupItem(el, this);
      case 'gpu':
        return gpuItem(el);
      case 'server':
        return serverItem(el, this);
      case 'kind':
        return kindItem(el);
      case 'artifact':
        return artifactItem(el);
    }
  }

  getChildren(el?: TreeNode): TreeNode[] {
    if (!el) {
      const items = this.fleet.nodes().map((node): TreeNode => ({ type: 'node', node }));
      this.nodeItems.clear();
      for (const it of items) if (it.type === 'node') this.nodeItems.set(it.node.name, it);
      return items;
    }
    switch (el.type) {
      case 'node':
        return nodeChildren(el, this);
      case 'group':
        return groupChildren(el, this);
      case 'kind':
        return kindChildren(el);
      default:
        return [];
    }
  }

  dispose(): void {
    this.unsubscribe.forEach((u) => u());
    this.emitter.dispose();
  }
}
