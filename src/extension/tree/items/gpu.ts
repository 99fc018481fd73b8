/** One GPU: memory, utilization, temperature, power. */
import * as vscode from 'vscode';
import { visible } from '../../../core/util/terminal';
import type { GpuInfo } from '../../../core/node/nvidiaSmi';
import type { TreeNodeOf } from '../types';

function gib(mib: number | null): string {
  return mib === null ? '?' : (mib / 1024).toFixed(1);
}

function gpuDescription(g: GpuInfo): string {
  const mem = `${gib(g.memoryUsedMiB)}/${gib(g.memoryTotalMiB)} GiB`;
  const util = g.utilizationPct === null ? '—' : `${g.utilizationPct}%`;
  const temp = g.temperatureC === null ? '—' : `${g.temperatureC}°C`;
  const pw = g.powerW === null ? '' : ` · ${Math.round(g.powerW)} W`;
  return `${mem} · ${util} · ${temp}${pw}`;
}

export function gpuItem(el: TreeNodeOf<'gpu'>): vscode.TreeItem {
  const g = el.gpu;
  const item = new vscode.TreeItem(`GPU ${g.index} · ${g.name}`, vscode.TreeItemCollapsibleState.None);
  item.id = `${el.node}:gpu:${g.index}`;
  item.description = gpuDescription(g);
  item.tooltip = visible(
    `${g.name}\nUUID ${g.uuid ?? '?'}\nMemory ${g.memoryUsedMiB ?? '?'} / ${g.memoryTotalMiB ?? '?'} MiB\nUtilization ` +
      `${g.utilizationPct ?? '—'} %\nTemperature ${g.temperatureC ?? '—'} °C\nPower ${g.powerW ?? '—'} W`,
    true,
  );
  item.iconPath = new vscode.ThemeIcon(
    'circuit-board',
    g.utilizationPct && g.utilizationPct > 50 ? new vscode.ThemeColor('charts.green') : undefined,
  );
  item.contextValue = 'gpu';
  // Screen readers read the row as a sentence that starts with the GPU's number.
  item.accessibilityInformation = {
    label: visible(
      `GPU ${g.index}, ${g.name}: memory ${gib(g.memoryUsedMiB)} of ${gib(g.memoryTotalMiB)} GiB, utilization ` +
        `${g.utilizationPct ?? 'unknown'} percent, ${g.temperatureC ?? 'unknown'} degrees${g.powerW === null ? '' : `, ${Math.round(g.powerW)} watts`}`,
    ),
    role: 'treeitem',
  };
  return item;
}

/** A lost GPU: error icon, the driver's words ("Unable to determine the device handle … Unknown Error"). */
export function lostGpuItem(el: TreeNodeOf<'lostGpu'>): vscode.TreeItem {
  const l = el.lost;
  const item = new vscode.TreeItem(`GPU ${l.index ?? '?'} · lost`, vscode.TreeItemCollapsibleState.None);
  item.id = `${el.node}:lostGpu:${l.index ?? l.busId ?? l.message}`;
  item.description = visible(l.message);
  item.tooltip = visible(
    `nvidia-smi can no longer read this GPU${l.busId ? ` (bus ${l.busId})` : ''}:\n${l.message}\n\n` +
      'Its work is likely lost or stuck; the other GPUs still report. Salvage the node before the provider replaces it.',
    true,
  );
  item.iconPath = new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'));
  item.contextValue = 'gpu.lost';
  return item;
}
