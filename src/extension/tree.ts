/**
 * The Nodes tree: Node → GPUs · Servers · Artifacts (grouped by kind). Failures are items with an
 * action that shows the log, never an endless spinner.
 */
import * as vscode from 'vscode';
import type { Fleet, NodeStatus } from '../core/node/fleet';
import { formatBytes as formatSize } from '../core/util/format';
import type { NodeLive } from '../core/node/monitor';

export { formatSize };
import { eta as formatEta } from './statusBar';
import type { Artifact, ArtifactKind, ProbeResult } from '../core/node/probe';
import type { GpuInfo } from '../core/node/nvidiaSmi';
import type { SglangServer } from '../core/sglang/serverArgv';
import type { NodeSpec } from '../core/ssh/config';

export type TreeNode =
  | { type: 'node'; node: NodeSpec }
  | { type: 'error'; node: string; code: string; message: string }
  | { type: 'info'; node: string; label: string; detail?: string; icon?: string; live?: 'progress' | 'done' }
  | { type: 'group'; node: string; group: 'gpus' | 'servers' | 'artifacts' }
  | { type: 'gpu'; node: string; gpu: GpuInfo }
  | { type: 'server'; node: string; server: SglangServer }
  | { type: 'kind'; node: string; kind: ArtifactKind; items: Artifact[] }
  | { type: 'artifact'; node: string; artifact: Artifact };

const KIND_LABEL: Record<ArtifactKind, string> = {
  log: 'Logs',
  'launch-script': 'Launch scripts',
  script: 'Shell scripts',
  python: 'Python scripts',
  progress: 'Progress files',
  config: 'Configs',
  patch: 'Patches',
  'git-repo': 'Git repositories',
};
const KIND_ORDER: ArtifactKind[] = ['launch-script', 'log', 'progress', 'config', 'patch', 'script', 'python', 'git-repo'];

const ERROR_TITLE: Record<string, string> = {
  'host-key-changed': 'Host key changed — refusing to connect',
  'host-key-revoked': 'Host key revoked — refusing to connect',
  'host-key-unknown': 'Host key not trusted',
  'auth-failed': 'Authentication failed',
  unreachable: 'Unreachable',
  timeout: 'Timed out',
  config: 'Configuration problem',
};

export function gib(mib: number | null): string {
  return mib === null ? '?' : (mib / 1024).toFixed(1);
}

export function nodeDescription(p: ProbeResult | undefined, st: NodeStatus): string {
  if (st.state === 'probing' && !p) return 'connecting…';
  if (st.state === 'error') return ERROR_TITLE[st.error?.code ?? ''] ?? 'error';
  if (!p) return '';
  const parts: string[] = [];
  if (p.gpuState !== 'ok')
    parts.push(p.gpuState === 'no-nvidia-smi' ? 'no GPU driver' : p.gpuState === 'no-driver' ? 'driver not loaded' : 'no GPU');
  else {
    const names = new Map<string, number>();
    for (const g of p.gpus) names.set(g.name, (names.get(g.name) ?? 0) + 1);
    parts.push([...names].map(([n, c]) => `${c}× ${n}`).join(', '));
  }
  parts.push(`${p.servers.length} server${p.servers.length === 1 ? '' : 's'}`);
  return parts.join(' · ');
}

export function gpuDescription(g: GpuInfo): string {
  const mem = `${gib(g.memoryUsedMiB)}/${gib(g.memoryTotalMiB)} GiB`;
  const util = g.utilizationPct === null ? '—' : `${g.utilizationPct}%`;
  const temp = g.temperatureC === null ? '—' : `${g.temperatureC}°C`;
  const pw = g.powerW === null ? '' : ` · ${Math.round(g.powerW)} W`;
  return `${mem} · ${util} · ${temp}${pw}`;
}

export function serverLabel(s: SglangServer): string {
  const model = s.servedModelName ?? (s.modelPath ? s.modelPath.split('/').filter(Boolean).pop() : null) ?? 'unknown model';
  return `:${s.port} ${model}`;
}

export function serverDescription(s: SglangServer, stats?: string): string {
  const parts: string[] = [];
  if (s.gpus.length) parts.push(`GPU ${s.gpus.join(',')}`);
  if (s.dp > 1 || s.tp > 1) parts.push(`DP${s.dp} TP${s.tp}`);
  if (s.speculativeAlgorithm) parts.push(s.speculativeAlgorithm);
  if (stats) parts.push(stats);
  return parts.join(' · ');
}

export class NodesTreeProvider implements vscode.TreeDataProvider<TreeNode>, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<TreeNode | TreeNode[] | undefined>();
  readonly onDidChangeTreeData = this.emitter.event;
  private readonly unsubscribe: () => void;
  private readonly nodeItems = new Map<string, TreeNode>();
  /** Live figures per node (log stats, health, progress), supplied by the extension. */
  liveFor: (node: string) => NodeLive | undefined = () => undefined;
  /** Latest salvage verdict per node. */
  readonly verdicts = new Map<string, { verdict: 'safe' | 'unsafe'; dest: string; at: number }>();

  constructor(private readonly fleet: Fleet) {
    this.unsubscribe = fleet.onDidChange((name) => {
      const item = name ? this.nodeItems.get(name) : undefined;
      this.emitter.fire(item);
    });
  }

  /** Re-render one node's subtree (live stats changed); the whole view when the node is not shown. */
  refreshNode(name: string): void {
    this.emitter.fire(this.nodeItems.get(name));
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
    const now = this.liveRows(name)
      .map((r) => (r.type === 'info' ? r.live : ''))
      .join(',');
    if (!shown || shown.rows !== now) {
      this.emitter.fire(this.nodeItems.get(name));
      return;
    }
    const els = [...shown.els, ...(this.serverEls.get(name) ?? [])];
    if (els.length) this.emitter.fire(els);
  }

  /** Element objects last handed to the view per node (VS Code refreshes elements by identity). */
  private readonly liveShown = new Map<string, { rows: string; els: TreeNode[] }>();
  private readonly serverEls = new Map<string, TreeNode[]>();

  /** The generation-progress rows of a node, from the live monitor. */
  private liveRows(name: string): TreeNode[] {
    const out: TreeNode[] = [];
    const live = this.liveFor(name);
    const pr = live?.progress?.progress;
    const di = live?.progress?.doneIndices;
    if (pr && pr.ok) {
      const eta = pr.etaS !== null && pr.status !== 'done' ? ` · ETA ${formatEta(pr.etaS)}` : '';
      out.push({
        type: 'info',
        node: name,
        live: 'progress',
        label: `Generation ${pr.percent !== null ? pr.percent.toFixed(1) + '%' : ''}`,
        detail: `${pr.completed ?? '?'} / ${pr.total ?? '?'} done · ${pr.failed ?? 0} failed${pr.ratePerS ? ` · ${pr.ratePerS.toFixed(2)}/s` : ''}${eta}${pr.status ? ` · ${pr.status}` : ''}`,
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
    return out;
  }

  refreshView(): void {
    this.emitter.fire(undefined);
  }

  getTreeItem(el: TreeNode): vscode.TreeItem {
    switch (el.type) {
      case 'node': {
        const st = this.fleet.status(el.node.name);
        const p = st.probe;
        const item = new vscode.TreeItem(el.node.name, vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `node:${el.node.name}`;
        const v = this.verdicts.get(el.node.name);
        item.description =
          nodeDescription(p, st) + (v ? (v.verdict === 'safe' ? ' · ✓ salvaged, safe to shut down' : ' · ✗ salvage incomplete') : '');
        item.contextValue = st.state === 'error' ? 'node.error' : st.state === 'ok' ? 'node.ok' : 'node';
        item.iconPath =
          st.state === 'error'
            ? new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'))
            : st.state === 'probing'
              ? new vscode.ThemeIcon('loading~spin')
              : new vscode.ThemeIcon('server-environment', p && p.servers.length ? new vscode.ThemeColor('charts.green') : undefined);
        const md = new vscode.MarkdownString(undefined, true);
        md.appendMarkdown(
          `**${el.node.name}** — \`${el.node.user ? el.node.user + '@' : ''}${el.node.host}:${el.node.port}\`${el.node.proxyJump ? ` via \`${el.node.proxyJump}\`` : ''}\n\n`,
        );
        if (p) {
          md.appendMarkdown(`| | |\n|---|---|\n`);
          md.appendMarkdown(`| Host | ${p.hostname ?? '?'} |\n| OS | ${p.os ?? '?'} (${p.kernel ?? '?'}) |\n`);
          md.appendMarkdown(`| Driver | ${p.driverVersion ?? '—'} |\n| CUDA | ${p.cudaVersion ?? '—'} |\n`);
          md.appendMarkdown(
            `| CPU | ${p.cpuModel ?? '?'} × ${p.cpuCores ?? '?'} |\n| RAM | ${p.memTotalKiB ? (p.memTotalKiB / 1048576).toFixed(0) + ' GiB' : '?'} |\n`,
          );
          md.appendMarkdown(`\nProbed ${new Date(p.probedAt).toLocaleTimeString()} in ${p.durationMs} ms`);
        }
        if (st.error) md.appendMarkdown(`\n\n$(error) ${st.error.message.replace(/\n/g, '  \n')}`);
        if (v)
          md.appendMarkdown(
            `\n\n**Salvage:** ${v.verdict === 'safe' ? 'safe to shut down' : 'NOT safe — see SALVAGE.md'} (${new Date(v.at).toLocaleTimeString()}) → \`${v.dest}\``,
          );
        item.tooltip = md;
        return item;
      }
      case 'error': {
        const item = new vscode.TreeItem(ERROR_TITLE[el.code] ?? 'Error', vscode.TreeItemCollapsibleState.None);
        item.description = el.message.split('\n')[0];
        item.tooltip = el.message;
        item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('errorForeground'));
        item.contextValue = 'error';
        item.command = { command: 'gpuSessions.showLog', title: 'Show Log' };
        return item;
      }
      case 'info': {
        // A live row is rendered from the latest figures (it is refreshed in place by refreshLive).
        const cur = el.live ? this.liveRows(el.node).find((r) => r.type === 'info' && r.live === el.live) : undefined;
        const row = cur?.type === 'info' ? cur : el;
        const item = new vscode.TreeItem(row.label, vscode.TreeItemCollapsibleState.None);
        if (el.live) item.id = `${el.node}:live:${el.live}`;
        item.description = row.detail;
        item.iconPath = new vscode.ThemeIcon(row.icon ?? 'info');
        item.contextValue = 'info';
        return item;
      }
      case 'group': {
        const p = this.fleet.status(el.node).probe;
        const n =
          el.group === 'gpus' ? (p?.gpus.length ?? 0) : el.group === 'servers' ? (p?.servers.length ?? 0) : (p?.artifacts.length ?? 0);
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
      case 'gpu': {
        const g = el.gpu;
        const item = new vscode.TreeItem(`GPU ${g.index} · ${g.name}`, vscode.TreeItemCollapsibleState.None);
        item.id = `${el.node}:gpu:${g.index}`;
        item.description = gpuDescription(g);
        item.tooltip = `${g.name}\nUUID ${g.uuid ?? '?'}\nMemory ${g.memoryUsedMiB ?? '?'} / ${g.memoryTotalMiB ?? '?'} MiB\nUtilization ${g.utilizationPct ?? '—'} %\nTemperature ${g.temperatureC ?? '—'} °C\nPower ${g.powerW ?? '—'} W`;
        item.iconPath = new vscode.ThemeIcon(
          'circuit-board',
          g.utilizationPct && g.utilizationPct > 50 ? new vscode.ThemeColor('charts.green') : undefined,
        );
        item.contextValue = 'gpu';
        return item;
      }
      case 'server': {
        const s = el.server;
        const item = new vscode.TreeItem(serverLabel(s), vscode.TreeItemCollapsibleState.None);
        item.id = `${el.node}:server:${s.port}:${s.pid}`;
        const live = this.liveFor(el.node)?.servers.find((x) => x.port === s.port);
        item.description = serverDescription(s, live?.stats || (live?.logSkipped ? 'log not followed' : undefined));
        const md = new vscode.MarkdownString();
        md.appendMarkdown(`**${s.modelPath ?? '?'}** on ${s.host}:${s.port} (pid ${s.pid})\n\n`);
        md.appendMarkdown(
          `TP ${s.tp} · DP ${s.dp}${s.speculativeAlgorithm ? ` · ${s.speculativeAlgorithm}` : ''}${s.reasoningParser ? ` · reasoning ${s.reasoningParser}` : ''}\n\n`,
        );
        if (s.logFile) md.appendMarkdown(`Log: \`${s.logFile}\`\n\n`);
        if (live?.logSkipped) md.appendText(`Log not followed: ${live.logSkipped}\n\n`);
        md.appendCodeblock(s.args.join(' '), 'shell');
        item.tooltip = md;
        const health = live?.health ?? 'unknown';
        item.iconPath =
          health === 'healthy'
            ? new vscode.ThemeIcon('pass-filled', new vscode.ThemeColor('charts.green'))
            : health === 'busy'
              ? new vscode.ThemeIcon('watch', new vscode.ThemeColor('charts.orange'))
              : health === 'starting'
                ? new vscode.ThemeIcon('loading~spin', new vscode.ThemeColor('charts.yellow'))
                : health === 'dead'
                  ? new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'))
                  : new vscode.ThemeIcon('pulse');
        if (live)
          md.appendMarkdown(
            `\n\nHealth: **${health}**${live.healthDetail ? ` (${live.healthDetail})` : ''}${live.stats ? ` · ${live.stats} (from ${live.source})` : ''}`,
          );
        item.contextValue = s.logFile ? 'server.log' : 'server';
        if (s.logFile) item.command = { command: 'gpuSessions.tailLog', title: 'Tail Log', arguments: [el] };
        return item;
      }
      case 'kind': {
        const item = new vscode.TreeItem(KIND_LABEL[el.kind], vscode.TreeItemCollapsibleState.Collapsed);
        item.id = `${el.node}:kind:${el.kind}`;
        item.description = String(el.items.length);
        item.iconPath = new vscode.ThemeIcon('folder');
        item.contextValue = 'kind';
        return item;
      }
      case 'artifact': {
        const a = el.artifact;
        const base = a.path.split('/').pop() ?? a.path;
        const item = new vscode.TreeItem(base, vscode.TreeItemCollapsibleState.None);
        item.id = `${el.node}:artifact:${a.path}`;
        const dir = a.path.slice(0, a.path.length - base.length - 1);
        item.description = `${formatSize(a.size)} · ${dir}`;
        item.tooltip = `${a.path}\n${formatSize(a.size)} · modified ${new Date(a.mtime).toLocaleString()}`;
        item.iconPath = new vscode.ThemeIcon(
          a.kind === 'log' ? 'output' : a.kind === 'git-repo' ? 'repo' : a.kind === 'progress' ? 'graph' : 'file',
        );
        item.contextValue = `artifact.${a.kind}`;
        return item;
      }
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
      case 'node': {
        const name = el.node.name;
        const st = this.fleet.status(name);
        if (st.state === 'unknown') {
          void this.fleet.refresh(name);
          return [{ type: 'info', node: name, label: 'Connecting…', icon: 'loading~spin' }];
        }
        if (st.state === 'probing' && !st.probe) return [{ type: 'info', node: name, label: 'Connecting…', icon: 'loading~spin' }];
        const out: TreeNode[] = [];
        if (st.state === 'error' && st.error) out.push({ type: 'error', node: name, code: st.error.code, message: st.error.message });
        const p = st.probe;
        if (!p) return out;
        const rows = this.liveRows(name);
        this.liveShown.set(name, { rows: rows.map((r) => (r.type === 'info' ? r.live : '')).join(','), els: rows });
        out.push(...rows);
        if (p.gpuState !== 'ok')
          out.push({ type: 'info', node: name, label: 'No GPUs', detail: p.gpuMessage ?? undefined, icon: 'circle-slash' });
        else out.push({ type: 'group', node: name, group: 'gpus' });
        out.push({ type: 'group', node: name, group: 'servers' });
        out.push({ type: 'group', node: name, group: 'artifacts' });
        return out;
      }
      case 'group': {
        const p = this.fleet.status(el.node).probe;
        if (!p) return [];
        if (el.group === 'gpus') return p.gpus.map((gpu) => ({ type: 'gpu', node: el.node, gpu }));
        if (el.group === 'servers') {
          if (!p.servers.length) return [{ type: 'info', node: el.node, label: 'No SGLang server running', icon: 'circle-outline' }];
          const els = p.servers.map((server): TreeNode => ({ type: 'server', node: el.node, server }));
          this.serverEls.set(el.node, els);
          return els;
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
      case 'kind':
        return el.items.map((artifact) => ({ type: 'artifact', node: el.node, artifact }));
      default:
        return [];
    }
  }

  dispose(): void {
    this.unsubscribe();
    this.emitter.dispose();
  }
}
