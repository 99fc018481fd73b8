/** A node: its summary, tooltip with the machine's facts, salvage verdict; children: live progress and the groups. */
import { dataRowText } from '../../dataGuards';
import * as vscode from 'vscode';
import { guardRowText } from '../../../core/guard/summary';
import { visible } from '../../../core/util/terminal';
import { isCodeHost } from '../../../core/ssh/groups';
import { connectsTo } from '../../../core/ssh/resolveView';
import type { NodeStatus } from '../../../core/node/fleet';
import type { ProbeResult } from '../../../core/node/probe';
import { deadlineRow } from '../../../core/node/spend';
import { formatDuration } from '../../../core/util/format';
import { isErrorState, plainState } from '../../../core/node/plainWords';
import { eta as formatEta } from '../../statusBar';
import { keepSalvagedRows } from './keepSalvaged';
import { ERROR_TITLE, TreeContext, TreeNode, TreeNodeOf } from '../types';

function nodeDescription(p: ProbeResult | undefined, st: NodeStatus): string {
  if (st.state === 'probing' && !p) return 'connecting…';
  if (shownState(st) === 'error') return ERROR_TITLE[st.error?.code ?? ''] ?? 'error';
  if (!p) return '';
  const parts: string[] = [];
  if (p.gpuState !== 'ok')
    parts.push(p.gpuState === 'no-nvidia-smi' ? 'no GPU driver' : p.gpuState === 'no-driver' ? 'driver not loaded' : 'no GPU');
  else {
    const names = new Map<string, number>();
    for (const g of p.gpus) names.set(g.name, (names.get(g.name) ?? 0) + 1);
    // A lost GPU is counted and named, never dropped (a node with a lost GPU read "6× NVIDIA B200").
    const lost = p.lostGpus?.length ?? 0;
    if (lost && names.size === 1) {
      const [[n, c]] = [...names];
      parts.push(`${c + lost}× ${n} (${lost} lost)`);
    } else parts.push([...names].map(([n, c]) => `${c}× ${n}`).join(', ') + (lost ? ` + ${lost} lost` : ''));
  }
  parts.push(`${p.servers.length} server${p.servers.length === 1 ? '' : 's'}`);
  return parts.join(' · ');
}

/** "22:20": the local time of day, as the verdict and "stopped by you" rows show it. */
function hhmm(ms: number): string {
  return new Date(ms).toTimeString().slice(0, 5);
}

/** The state a node's row shows: a refresh under way keeps the last result's state (ok or error) until it ends. */
function shownState(st: NodeStatus): NodeStatus['state'] {
  if (st.state !== 'probing') return st.state;
  return st.error ? 'error' : st.probe ? 'ok' : 'probing';
}

export function nodeItem(el: TreeNodeOf<'node'>, ctx: TreeContext): vscode.TreeItem {
  const st = ctx.fleet.status(el.node.name);
  const p = st.probe;
  const item = new vscode.TreeItem(el.node.name, vscode.TreeItemCollapsibleState.Collapsed);
  item.id = `node:${el.node.name}`;
  const v = ctx.verdicts.get(el.node.name);
  const money = ctx.liveFor(el.node.name);
  const dl = ctx.deadlineFor(el.node.name)?.deadline;
  item.description =
    nodeDescription(p, st) +
    // whole dollars (cents in the tooltip and dashboard): the row is not re-rendered every second for a cent
    (money?.spend ? ` · $${Math.floor(money.spend.total).toLocaleString('en-US')}` : '') +
    (dl ? ` · ${dl.secondsLeft > 0 ? `ends in ${formatDuration(dl.secondsLeft)}` : 'rental ended'}` : '') +
    (v ? (v.verdict === 'safe' ? ` · ✓ safe as of ${hhmm(v.at)}` : ` · ✗ salvage incomplete (${hhmm(v.at)})`) : '');
  // While a probe runs the row keeps showing the last result: flipping to "probing" and back on every refresh
  // re-rendered the whole node twice per probe, which dropped its rows' handles (hover, context-menu arguments).
  const state = shownState(st);
  // A code host (github.com, …) is listed but offered no GPU action (its menus match /^node/).
  item.contextValue = isCodeHost(el.node) ? 'codeHost' : state === 'error' ? 'node.error' : state === 'ok' ? 'node.ok' : 'node';
  item.iconPath =
    state === 'error'
      ? new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'))
      : state === 'probing'
        ? new vscode.ThemeIcon('loading~spin')
        : ctx.liveFor(el.node.name)?.problems?.length
          ? new vscode.ThemeIcon('warning', new vscode.ThemeColor('list.warningForeground'))
          : new vscode.ThemeIcon('server-environment', p && p.servers.length ? new vscode.ThemeColor('charts.green') : undefined);
  // Strings from the node (and from config) are appended as text, never as markdown.
  const md = new vscode.MarkdownString(undefined, true);
  const n = el.node;
  md.appendMarkdown('**');
  md.appendText(n.name);
  md.appendMarkdown('** — Connects to ');
  md.appendText(connectsTo(n));
  md.appendMarkdown('\n\n');
  if (p) {
    const row = (k: string, value: string) => {
      md.appendMarkdown(`**${k}** `);
      md.appendText(visible(value));
      md.appendMarkdown('  \n');
    };
    row('Host', p.hostname ?? '?');
    row('OS', `${p.os ?? '?'} (${p.kernel ?? '?'})`);
    row('Driver', p.driverVersion ?? '—');
    row('CUDA', p.cudaVersion ?? '—');
    row('CPU', `${p.cpuModel ?? '?'} × ${p.cpuCores ?? '?'}`);
    row('RAM', p.memTotalKiB ? (p.memTotalKiB / 1048576).toFixed(0) + ' GiB' : '?');
    md.appendMarkdown(`\nProbed ${new Date(p.probedAt).toLocaleTimeString()} in ${p.durationMs} ms`);
  }
  if (st.error) {
    md.appendMarkdown('\n\n$(error) ');
    md.appendText(visible(st.error.message, true));
  }
  if (v) {
    const verdict = v.verdict === 'safe' ? 'safe to shut down' : 'NOT safe — see SALVAGE.md';
    md.appendMarkdown(
      `\n\n**Salvage:** ${verdict} as of ${new Date(v.at).toLocaleTimeString()} (dropped when the node's ` +
        `servers, boot or files change) → `,
    );
    md.appendText(v.dest);
  }
  item.tooltip = md;
  return item;
}

export function nodeChildren(el: TreeNodeOf<'node'>, ctx: TreeContext): TreeNode[] {
  const name = el.node.name;
  const st = ctx.fleet.status(name);
  if (st.state === 'unknown') {
    void ctx.fleet.refresh(name);
    return [{ type: 'info', node: name, label: 'Connecting…', icon: 'loading~spin' }];
  }
  if (st.state === 'probing' && !st.probe) return [{ type: 'info', node: name, label: 'Connecting…', icon: 'loading~spin' }];
  const out: TreeNode[] = [];
  if (shownState(st) === 'error' && st.error) out.push({ type: 'error', node: name, code: st.error.code, message: st.error.message });
  const p = st.probe;
  if (!p) return out;
  out.push(...liveRows(name, ctx));
  if (p.gpuState !== 'ok')
    out.push({ type: 'info', node: name, label: 'No GPUs', detail: p.gpuMessage ?? undefined, icon: 'circle-slash' });
  else out.push({ type: 'group', node: name, group: 'gpus' });
  out.push({ type: 'group', node: name, group: 'servers' });
  // the Model Gateways on the node; their rows re-read the latest probe (same id while the pid lives)
  for (const g of p.gateways ?? []) out.push({ type: 'gateway', node: name, gateway: g });
  out.push({ type: 'group', node: name, group: 'artifacts' });
  return out;
}

/** Where the rental's end came from, for the countdown's tooltip. */
function endSource(source: string | undefined): string {
  return !source || source === 'settings'
    ? 'gpuSessions.rentalDeadlines'
    : `from ${source}; a gpuSessions.rentalDeadlines entry overrides it`;
}

/** The rental countdown (gpuSessions.rentalDeadlines, else the provider's end): a warning under the lead time, the job's ETA against it. */
function deadlineRows(name: string, ctx: TreeContext): TreeNode[] {
  const d = ctx.deadlineFor(name);
  if (!d) return [];
  const r = deadlineRow(d.deadline, d.leadS);
  const at = new Date(d.deadline.at);
  return [
    {
      type: 'info',
      node: name,
      live: 'deadline',
      label: r.label,
      detail: r.detail ?? undefined,
      icon: r.state === 'ok' ? 'watch' : r.state === 'near' ? 'warning' : 'error',
      color: r.state === 'near' ? 'list.warningForeground' : r.state === 'ended' ? 'errorForeground' : undefined,
      tooltip:
        `Rental of ${name} ends ${at.toLocaleString()} (${endSource(d.deadline.source)})\n` +
        `${d.deadline.message}\n` +
        `Warning ${formatDuration(d.leadS)} before the end (gpuSessions.deadlineWarningMinutes), with Salvage Node.`,
    },
  ];
}

/** The live rows of a node: what is not OK, the rental countdown, generation progress (progress.json, .done_indices). */
export function liveRows(name: string, ctx: TreeContext): TreeNode[] {
  const out: TreeNode[] = [];
  const live = ctx.liveFor(name);
  // what the live guard says is wrong: crashed servers stay listed here even after their process is gone
  for (const pb of live?.problems ?? [])
    out.push({
      type: 'info',
      node: name,
      label:
        pb.to === 'gpu-lost' && pb.key.startsWith('gpu:')
          ? `GPU ${pb.key.slice(4)} lost`
          : `${pb.port !== undefined ? `:${pb.port} ` : pb.key.startsWith('gpu:') ? `GPU ${pb.key.slice(4)} ` : ''}${plainState(pb.to, pb.class, pb.message)}`,
      detail: pb.message,
      tooltip: `${pb.message}\n\n(${pb.to}${pb.class ? `, ${pb.class}` : ''})`,
      icon: isErrorState(pb.to, pb.class) || pb.to === 'unreachable' ? 'error' : 'warning',
      ...(pb.to === 'crashed' && pb.port !== undefined ? { crashedPort: pb.port } : {}),
      color: isErrorState(pb.to, pb.class) || pb.to === 'unreachable' ? 'errorForeground' : 'list.warningForeground',
    });
  // what the user stopped through the extension: neutral, not a problem
  for (const st of live?.stoppedByYou ?? [])
    out.push({
      type: 'info',
      node: name,
      label: `:${st.port} stopped by you, ${hhmm(st.at)}`,
      detail: 'start it again with Launch Profile',
      tooltip: `You stopped the server on port ${st.port} at ${new Date(st.at).toLocaleTimeString()} (GPU Sessions). Not an alert.`,
      icon: 'debug-stop',
    });
  // workers Release Node took out of gateways: neutral too
  for (const r of live?.removedByYou ?? [])
    out.push({
      type: 'info',
      node: name,
      // a worker ("gateway :8000: http://… removed by you") or the gateway it left with none ("gateway :8000 left
      // with no worker by you")
      label: /^gateway:[^:]+$/.test(r.key)
        ? `${r.key.replace(/^gateway:/, 'gateway :')} left with no worker by you, ${hhmm(r.at)}`
        : `${r.key.replace(/^gateway:([^:]+):/, 'gateway :$1: ')} removed by you, ${hhmm(r.at)}`,
      detail: 'Release Node',
      tooltip: `${r.message}\n\nYou removed it (Release Node) at ${new Date(r.at).toLocaleTimeString()}. Not an alert.`,
      icon: 'info',
    });
  out.push(...deadlineRows(name, ctx));
  out.push(...guardRows(name, ctx));
  out.push(...dataRows(name, ctx));
  const pr = live?.progress?.progress;
  const di = live?.progress?.doneIndices;
  if (pr && pr.ok) {
    const eta = pr.etaS !== null && pr.status !== 'done' ? ` · ETA ${formatEta(pr.etaS)}` : '';
    const rate = pr.ratePerS ? ` · ${pr.ratePerS.toFixed(2)}/s` : '';
    const status = pr.status ? ` · ${pr.status}` : '';
    out.push({
      type: 'info',
      node: name,
      live: 'progress',
      label: `Generation ${pr.percent !== null ? pr.percent.toFixed(1) + '%' : ''}`,
      detail: `${pr.completed ?? '?'} / ${pr.total ?? '?'} done · ${pr.failed ?? 0} failed${rate}${eta}${status}`,
      icon: 'graph',
    });
  } else if (pr && !pr.ok) {
    out.push({ type: 'info', node: name, live: 'progress', label: 'progress.json unreadable', detail: pr.error, icon: 'warning' });
  }
  if (di)
    out.push({
      type: 'info',
      node: name,
      live: 'done',
      label: '.done_indices',
      detail: `${di.count.toLocaleString('en-US')} done · highest ${di.highest ?? '—'} · ${di.gaps.toLocaleString('en-US')} gap(s)`,
      icon: 'checklist',
    });
  out.push(...keepSalvagedRows(name, ctx));
  return out;
}

/** The Guard row: the node's own guard, running or not, its last verified sync and what is at risk. */
function guardRows(name: string, ctx: TreeContext): TreeNode[] {
  const g = ctx.guardFor?.(name);
  if (!g) return [];
  const r = guardRowText(g);
  return [
    {
      type: 'info',
      node: name,
      live: 'guard',
      label: r.label,
      detail: r.detail,
      tooltip: r.tooltip,
      icon: r.ok ? 'shield' : 'warning',
      color: r.ok ? undefined : 'list.warningForeground',
    },
  ];
}

/** The Data row (core/data via DataGuards): "902,087 rows · 0.4 % empty · 3 % cut at length", warning colours when bad. */
function dataRows(name: string, ctx: TreeContext): TreeNode[] {
  const files = ctx.dataFor?.(name);
  if (!files?.length) return [];
  const r = dataRowText(files);
  const bad = files.filter((f) => f.verdict !== 'ok');
  return [
    {
      type: 'info',
      node: name,
      live: 'data',
      label: r.label,
      detail: r.detail,
      icon: r.state === 'ok' ? 'database' : r.state === 'suspect' ? 'warning' : 'error',
      color: r.state === 'suspect' ? 'list.warningForeground' : r.state === 'degenerate' ? 'errorForeground' : undefined,
      tooltip:
        `Generation output judged on ${name} (gpu-sessions data): ${files.length} file(s)\n` +
        (bad.length ? bad.map((f) => `${f.verdict}: ${f.path}`).join('\n') : 'the sampled answers look fine'),
    },
  ];
}
