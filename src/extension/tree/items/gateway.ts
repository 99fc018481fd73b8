/**
 * An SGLang Model Gateway under its node ("Gateway :30000 · cache_aware · 3/3 healthy") and its
 * workers, each naming the fleet's server its URL reaches. Both re-read the latest probe when rendered, so a
 * worker turning unhealthy is re-rendered in place (same element, same id).
 */
import * as vscode from 'vscode';
import { Gateway, gatewaySummary, workerBad, workerDescription, workerState } from '../../../core/gateway/discover';
import { visible } from '../../../core/util/terminal';
import type { TreeContext, TreeNode, TreeNodeOf } from '../types';

/** The gateway of `pid` in the node's latest probe. */
function currentGateway(ctx: TreeContext, node: string, pid: number): Gateway | undefined {
  return ctx.fleet.status(node).probe?.gateways?.find((g) => g.pid === pid);
}

export function gatewayItem(el: TreeNodeOf<'gateway'>, ctx: TreeContext): vscode.TreeItem {
  const g = currentGateway(ctx, el.node, el.gateway.pid) ?? el.gateway;
  const item = new vscode.TreeItem(visible(gatewaySummary(g)), vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `${el.node}:gateway:${g.pid}`;
  item.description = g.profile ?? undefined;
  const bad = g.ready === false || g.workers.some(workerBad);
  item.iconPath = new vscode.ThemeIcon('type-hierarchy', bad ? new vscode.ThemeColor('list.warningForeground') : undefined);
  item.tooltip = visible(
    `SGLang Model Gateway (${g.title}, pid ${g.pid}, found by its ${g.foundBy === 'title' ? 'process title' : 'command line'})\n` +
      `API :${g.port ?? '?'}${g.metricsPort ? ` · metrics :${g.metricsPort}` : ''}${g.profile ? ` · API ${g.profile}` : ''}\n` +
      `Readiness: ${g.ready === null ? 'unknown' : g.ready ? 'ready' : `not ready${g.readyReason ? ` (${g.readyReason})` : ''}`}\n` +
      `${g.workers.length} worker(s). Give a node back without dropping requests: gpu-sessions release NODE --via ${el.node}`,
    true,
  );
  item.contextValue = 'gateway';
  return item;
}

export function gatewayChildren(el: TreeNodeOf<'gateway'>, ctx: TreeContext): TreeNode[] {
  const g = currentGateway(ctx, el.node, el.gateway.pid) ?? el.gateway;
  if (!g.workers.length) return [{ type: 'info', node: el.node, label: 'No worker', icon: 'circle-outline' }];
  return g.workers.slice(0, 256).map((w) => ({ type: 'gatewayWorker', node: el.node, gatewayPid: g.pid, url: w.url }));
}

export function gatewayWorkerItem(el: TreeNodeOf<'gatewayWorker'>, ctx: TreeContext): vscode.TreeItem {
  const w = currentGateway(ctx, el.node, el.gatewayPid)?.workers.find((x) => x.url === el.url);
  const item = new vscode.TreeItem(
    visible(`${w && w.type !== 'regular' ? w.type : 'worker'} ${el.url}`),
    vscode.TreeItemCollapsibleState.None,
  );
  item.id = `${el.node}:gateway:${el.gatewayPid}:worker:${el.url}`;
  item.description = w ? visible(workerDescription(w)) : 'removed';
  item.iconPath = !w
    ? new vscode.ThemeIcon('circle-slash')
    : workerBad(w)
      ? new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'))
      : w.healthy === true
        ? new vscode.ThemeIcon('pass', new vscode.ThemeColor('charts.green'))
        : new vscode.ThemeIcon('question');
  item.tooltip = w
    ? visible(
        `${el.url} (id ${w.id})\n${workerState(w)}${w.load !== null ? `, ${w.load} request(s) in flight` : ''}\n` +
          (w.node
            ? `Serves as ${w.node} :${w.serverPort} (under that node's Servers)`
            : 'No probed server of the fleet answers at this URL'),
        true,
      )
    : 'The gateway no longer lists this worker.';
  item.contextValue = 'gateway.worker';
  return item;
}
