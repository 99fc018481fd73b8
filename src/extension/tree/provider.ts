/**
 * The Nodes tree provider: dispatches each element to its item file (tree/items/<type>.ts) and
 * re-renders a node when the fleet, its live figures or its salvage verdict change.
 */
import type { GuardStatus } from '../../core/guard/operations';
import type { GoneServer } from '../../core/node/lastSeenServers';
import * as vscode from 'vscode';
import type { Fleet } from '../../core/node/fleet';
import type { NodeLive } from '../../core/node/monitor';
import type { Deadline } from '../../core/node/spend';
import type { NodeSpec } from '../../core/ssh/config';
import type { GroupedNodes } from '../../core/ssh/groups';
import type { SalvageVerdicts } from '../salvageVerdicts';
import { artifactItem } from './items/artifact';
import { errorItem } from './items/error';
import { gpuItem, lostGpuItem } from './items/gpu';
import { gatewayChildren, gatewayItem, gatewayWorkerItem } from './items/gateway';
import { groupChildren, groupItem } from './items/group';
import { infoItem } from './items/info';
import { kindChildren, kindItem } from './items/kind';
import { nodeChildren, nodeItem } from './items/node';
import { LiveRender, elementKey } from './liveRender';
import { ClickCommands } from './clickCommands';
import { nodeGroupItem } from './items/nodeGroup';
import { serverItem } from './items/server';
import type { TreeContext, TreeNode } from './types';
import type { DataSampleFile } from '../../core/data/watch';
import { redactOutput } from '../../core/util/redact';

/** The tree's boundary: label, description and tooltip (plain or Markdown) with secrets redacted. */
function redactTreeItem(item: vscode.TreeItem): vscode.TreeItem {
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
  /** The data guard's files per node (DataGuards.filesOf), supplied by the extension. */
  dataFor: (node: string) => DataSampleFile[] | undefined = () => undefined;
  /** Crashed servers gone from the probe (LiveMonitors.crashedServers), supplied by the extension. */
  crashedFor: (node: string) => GoneServer[] = () => [];
  /** The node's own guard (NodeGuards.statusOf), supplied by the extension. */
  guardFor: (node: string) => GuardStatus | undefined = () => undefined;
  /** How the top level is grouped (setting gpuSessions.tree.grouping), supplied by the extension; flat until then. */
  groupsFor: (nodes: NodeSpec[]) => GroupedNodes = (nodes) => ({ top: nodes, groups: [] });

  private readonly render: LiveRender;
  private readonly clicks = new ClickCommands();

  tailCommand(node: string, file: string): string {
    return this.clicks.tailLog(node, file);
  }

  constructor(
    readonly fleet: Fleet,
    /** Latest salvage verdict per node. */
    readonly verdicts: SalvageVerdicts,
  ) {
    this.render = new LiveRender({
      render: (el) => this.buildTreeItem(el),
      childrenNow: (el) => this.childrenOf(el),
      fire: (els) => this.emitter.fire(els),
    });
    this.unsubscribe = [
      // A probe (every few seconds while watched) re-renders only what it changed (liveRender.ts).
      fleet.onDidChange((name) =>
        name && this.nodeItems.has(name) && !this.movesGroup(name) ? this.render.schedule(name) : this.refreshView(),
      ),
      verdicts.onDidChange((name) => this.refreshNode(name)),
    ];
  }

  /** Nodes shown under "Other hosts" at the last render of the top level. */
  private otherHosts = new Set<string>();

  /** A probe that turns a host into "Other hosts" (no nvidia-smi) or back moves it: the top level is rebuilt. */
  private movesGroup(name: string): boolean {
    const node = this.fleet.node(name);
    if (!node) return false;
    const other = this.groupsFor([node]).groups.some((g) => g.other);
    return other !== this.otherHosts.has(name);
  }

  /** Something of this node changed that the user should see now (a transition, a verdict): only what changed is re-rendered. */
  refreshNode(name: string): void {
    if (this.nodeItems.has(name)) this.render.update(name, true);
    else this.refreshView();
  }

  refreshView(): void {
    this.emitter.fire(undefined);
  }

  /**
   * Live figures changed: at most one render per node every few seconds, of the rows whose text changed
   * (their objects and handles stay, so hover, click and context menus keep working).
   */
  refreshLive(name: string): void {
    if (this.nodeItems.has(name)) this.render.schedule(name);
  }

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
      case 'gpu': {
        // the same element shows the GPU's latest figures (it is re-rendered in place)
        const now = this.fleet.status(el.node).probe?.gpus.find((g) => g.index === el.gpu.index);
        return gpuItem(now ? { ...el, gpu: now } : el);
      }
      case 'lostGpu':
        return lostGpuItem(el);
      case 'server':
        return serverItem(el, this);
      case 'gateway':
        return gatewayItem(el, this);
      case 'gatewayWorker':
        return gatewayWorkerItem(el, this);
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
        this.render.noteNode(node.name, it);
        return it;
      };
      const g = this.groupsFor(this.fleet.nodes());
      this.otherHosts = new Set(g.groups.filter((x) => x.other).flatMap((x) => x.nodes.map((n) => n.name)));
      // No GPU node known (only code hosts, or hosts without nvidia-smi): the welcome view (Start Demo Node, Add
      // Node) shows instead of a lone "Other hosts" group.
      if (!g.top.length && g.groups.every((x) => x.other)) return [];
      return [
        ...g.top.map(nodeEl),
        ...g.groups.map((x): TreeNode => ({
          type: 'nodeGroup',
          key: x.key,
          label: x.label,
          file: x.file,
          other: x.other,
          nodes: x.nodes.map(nodeEl),
        })),
      ];
    }
    const kids = this.childrenOf(el);
    if (el.type === 'node') this.render.noteChildren(el.node.name, '', kids);
    else if (el.type === 'group' || el.type === 'kind' || el.type === 'gateway') this.render.noteChildren(el.node, elementKey(el), kids);
    return kids;
  }

  private childrenOf(el: TreeNode): TreeNode[] {
    switch (el.type) {
      case 'nodeGroup':
        return el.nodes;
      case 'node':
        return nodeChildren(el, this);
      case 'group':
        return groupChildren(el, this);
      case 'kind':
        return kindChildren(el);
      case 'gateway':
        return gatewayChildren(el, this);
      default:
        return [];
    }
  }

  dispose(): void {
    this.render.dispose();
    this.clicks.dispose();
    this.unsubscribe.forEach((u) => u());
    this.emitter.dispose();
  }
}
