/** GPUs · Servers · Artifacts under a node, with their counts. */
import * as vscode from 'vscode';
import type { Artifact, ArtifactKind } from '../../../core/node/probe';
import type { TreeContext, TreeNode, TreeNodeOf } from '../types';
import { KIND_ORDER } from './kind';

export function groupItem(el: TreeNodeOf<'group'>, ctx: TreeContext): vscode.TreeItem {
  const p = ctx.fleet.status(el.node).probe;
  const n =
    el.group === 'gpus'
      ? (p?.gpus.length ?? 0) + (p?.lostGpus?.length ?? 0)
      : el.group === 'servers'
        ? (p?.servers.length ?? 0) + (ctx.crashedFor?.(el.node).length ?? 0)
        : (p?.artifacts.length ?? 0);
  const label = el.group === 'gpus' ? 'GPUs' : el.group === 'servers' ? 'Servers' : 'Artifacts';
  const item = new vscode.TreeItem(
    label,
    el.group === 'artifacts' ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.Expanded,
  );
  item.id = `${el.node}:${el.group}`;
  item.description = String(n);
  item.iconPath = new vscode.ThemeIcon(el.group === 'gpus' ? 'circuit-board' : el.group === 'servers' ? 'server-process' : 'files');
  item.contextValue = `group.${el.group}`;
  return item;
}

export function groupChildren(el: TreeNodeOf<'group'>, ctx: TreeContext): TreeNode[] {
  const p = ctx.fleet.status(el.node).probe;
  if (!p) return [];
  if (el.group === 'gpus') {
    const rows: TreeNode[] = p.gpus.map((gpu) => ({ type: 'gpu', node: el.node, gpu }));
    for (const lost of p.lostGpus ?? []) {
      const at = lost.index === null ? rows.length : rows.findIndex((r) => r.type === 'gpu' && r.gpu.index > lost.index!);
      rows.splice(at < 0 ? rows.length : at, 0, { type: 'lostGpu', node: el.node, lost });
    }
    return rows;
  }
  if (el.group === 'servers') {
    // a crashed server stays listed (as last seen: its command line for Restart Server)
    const crashed: TreeNode[] = (ctx.crashedFor?.(el.node) ?? []).map((c) => ({
      type: 'server',
      node: el.node,
      server: c.server,
      crashed: true,
    }));
    const rows: TreeNode[] = [...p.servers.map((server): TreeNode => ({ type: 'server', node: el.node, server })), ...crashed];
    rows.sort((a, b) => (a.type === 'server' && b.type === 'server' ? a.server.port - b.server.port : 0));
    if (!rows.length) return [{ type: 'info', node: el.node, label: 'No SGLang server running', icon: 'circle-outline' }];
    return rows;
  }
  const byKind = new Map<ArtifactKind, Artifact[]>();
  for (const a of p.artifacts) byKind.set(a.kind, [...(byKind.get(a.kind) ?? []), a]);
  const out: TreeNode[] = KIND_ORDER.filter((k) => byKind.has(k)).map((kind) => ({
    type: 'kind',
    node: el.node,
    kind,
    items: byKind.get(kind)!,
  }));
  if (p.artifactsTruncated)
    out.push({
      type: 'info',
      node: el.node,
      label: 'More artifacts not shown',
      detail: 'raise gpuSessions.artifacts.maxCount',
      icon: 'ellipsis',
    });
  if (!out.length) out.push({ type: 'info', node: el.node, label: 'No artifacts found', icon: 'circle-outline' });
  return out;
}
