/**
 * The Nodes tree provider: dispatches each element to its item file (tree/items/<type>.ts) and
 * re-renders a node when the fleet, its live figures or its salvage verdict change.
 */
import * as vscode from 'vscode';
import type { Fleet } from '../../core/node/fleet';
import type { NodeLive } from '../../core/node/monitor';
import type { Deadline } from '../../core/node/spend';
import type { NodeSpec } from '../../core/ssh/config';
import type { GroupedNodes } from '../../core/ssh/groups';
import type { SalvageVerdicts } from '../salvageVerdicts';
import { artifactItem } from './items/artifact';
import { errorItem } from './items/error';
import { gpuItem } from './items/gpu';
import { groupChildren, groupItem } from './items/group';
import { infoItem } from './items/info';
import { kindChildren, kindItem } from './items/kind';
import { liveRows, nodeChildren, nodeItem } from './items/node';
import { nodeGroupItem } from './items/nodeGroup';
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
  private readonly emitter = new vscode.EventEmitter<TreeNode | TreeNode[] | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly unsubscribe: (() => void)[];
  private readonly nodeItems = new Map<string, TreeNode>();
  /** Live figures per node (log stats, health, progress), supplied by the extension. */
  liveFor: (node: string) => NodeLive | undefined = () => undefined;
  /** The rental deadline of a node now (LiveMonitors.deadlineOf), supplied by the extension. */
  deadlineFor: (node: string) => { deadline: Deadline; leadS: number } | undefined = () => undefined;
  /** How the top level is grouped (setting gpuSessions.tree.grouping), supplied by the extension; flat until then. */
  groupsFor: (nodes: NodeSpec[]) => GroupedNodes = (nodes) => ({ top: nodes, groups: [] });

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

  /**
   * Live figures changed: re-render only the rows that show them (server items, the progress rows).
   * Re-rendering the node would make VS Code drop the handles of everything below it until the view
   * fetched the children again, and a context-menu command (Tail Log on an artifact) run in that
   * window would receive no element. The node itself is re-rendered only when the set of live rows
   * changes (a progress row appears or goes).
   */
  refreshLive(name: string): void {
    const shown = this.liveShown.get(name);
    if (!shown || shown.rows !== liveRowKinds(liveRows(name, this))) {
      this.refreshNode(name);
      return;
    }
    const els = [...shown.els, ...(this.serverEls.get(name) ?? [])];
    if (els.length) this.emitter.fire(els);
  }

  /** Element objects last handed to the view per node (VS Code refreshes elements by identity). */
  private readonly liveShown = new Map<string, { rows: string; els: TreeNode[] }>();
  private readonly serverEls = new Map<string, TreeNode[]>();

  /** Every label, description and tooltip goes through the boundary redaction (redactTreeItem). */
  getTreeItem(el: TreeNode): vscode.TreeItem {
    return redactTreeItem(this.buildTreeItem(el));
  }

  private buildTreeItem(el: TreeNode): vscode.TreeItem {
    switch (el.type) {
      case 'nodeGroup':
        return nodeGroupItem(el);
      case 'node':
        return nodeItem(el, this);
      case 'error':
        return errorItem(el);
      case 'info':
        return infoItem(el, this);
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
      // One element per node, kept by name: a node inside a group is refreshed through the same object.
      this.nodeItems.clear();
      const nodeEl = (node: NodeSpec) => {
        const it = { type: 'node' as const, node };
        this.nodeItems.set(node.name, it);
        return it;
      };
      const g = this.groupsFor(this.fleet.nodes());
      return [
        ...g.top.map(nodeEl),
        ...g.groups.map((x): TreeNode => ({ type: 'nodeGroup', key: x.key, label: x.label, file: x.file, nodes: x.nodes.map(nodeEl) })),
      ];
    }
    switch (el.type) {
      case 'nodeGroup':
        return el.nodes;
      case 'node': {
        const kids = nodeChildren(el, this);
        const rows = kids.filter((k) => k.type === 'info' && k.live);
        this.liveShown.set(el.node.name, { rows: liveRowKinds(rows), els: rows });
        return kids;
      }
      case 'group': {
        const kids = groupChildren(el, this);
        if (el.group === 'servers')
          this.serverEls.set(
            el.node,
            kids.filter((k) => k.type === 'server'),
          );
        return kids;
      }
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

function liveRowKinds(rows: TreeNode[]): string {
  return rows.map((r) => (r.type === 'info' ? (r.live ?? '') : '')).join(',');
}
