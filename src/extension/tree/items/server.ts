/** One SGLang server: port and model, GPUs and parallelism, live stats and health; clicking tails its log. */
import { REDACTED } from '../../../core/util/redact';
import * as vscode from 'vscode';
import { mdFence, mdText, visible } from '../../../core/util/terminal';
import type { SglangServer } from '../../../core/sglang/serverArgv';
import { SECONDARY_RANK_NOTE, headSummary, isSecondaryRank, rankPhrase } from '../../../core/gateway/multinode';
import type { TreeContext, TreeNodeOf } from '../types';

function serverLabel(s: SglangServer): string {
  const model = s.servedModelName ?? (s.modelPath ? s.modelPath.split('/').filter(Boolean).pop() : null) ?? 'unknown model';
  return `:${s.port} ${model}`;
}

function serverDescription(s: SglangServer, stats?: string): string {
  const parts: string[] = [];
  if (s.gpus.length) parts.push(`GPU ${s.gpus.join(',')}`);
  if (s.dp > 1 || s.tp > 1) parts.push(`DP${s.dp} TP${s.tp}${s.enableDpAttention ? ' (DP attention)' : ''}`);
  if ((s.pp ?? 1) > 1) parts.push(`PP${s.pp}`);
  if ((s.ep ?? 1) > 1) parts.push(`EP${s.ep}`);
  const rank = rankPhrase(s);
  if (rank) parts.push(rank);
  if (s.speculativeAlgorithm) parts.push(s.speculativeAlgorithm);
  // a rank ≥ 1 serves no requests: its figures are rank 0's (reference B2)
  if (isSecondaryRank(s)) return parts.join(' · ');
  if (stats) parts.push(stats);
  // SGLang prints its decode stats at INFO: with --log-level warning there is nothing to show, say so.
  else if (s.statLines === false) parts.push(`no stat lines (--log-level ${s.logLevel})`);
  return parts.join(' · ');
}

function healthIcon(health: string): vscode.ThemeIcon {
  switch (health) {
    case 'healthy':
      return new vscode.ThemeIcon('pass-filled', new vscode.ThemeColor('charts.green'));
    case 'busy':
      return new vscode.ThemeIcon('watch', new vscode.ThemeColor('charts.orange'));
    case 'starting':
      return new vscode.ThemeIcon('loading~spin', new vscode.ThemeColor('charts.yellow'));
    case 'dead':
      return new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'));
    default:
      return new vscode.ThemeIcon('pulse');
  }
}

/** Icon of a server state (from the live guard). */
function stateIcon(state: string): vscode.ThemeIcon | null {
  switch (state) {
    case 'serving':
      return new vscode.ThemeIcon('pass-filled', new vscode.ThemeColor('charts.green'));
    case 'ready':
    case 'idle':
      return new vscode.ThemeIcon('circle-large-outline', new vscode.ThemeColor('charts.blue'));
    case 'starting':
      return new vscode.ThemeIcon('loading~spin', new vscode.ThemeColor('charts.yellow'));
    case 'stalled':
      return new vscode.ThemeIcon('debug-pause', new vscode.ThemeColor('charts.orange'));
    case 'unhealthy':
      return new vscode.ThemeIcon('warning', new vscode.ThemeColor('charts.orange'));
    case 'crashed':
      return new vscode.ThemeIcon('error', new vscode.ThemeColor('errorForeground'));
    case 'stopping':
      return new vscode.ThemeIcon('loading~spin', new vscode.ThemeColor('charts.blue'));
    case 'stopped':
      return new vscode.ThemeIcon('debug-stop');
    default:
      return null;
  }
}

/** Clicking a server row tails its log; no arguments: they would die with each re-render (tree/clickCommands.ts). */
function tailClick(node: string, logFile: string, ctx: TreeContext): vscode.Command {
  return ctx.tailCommand
    ? { command: ctx.tailCommand(node, logFile), title: 'Tail Log' }
    : { command: 'gpuSessions.tailLog', title: 'Tail Log', arguments: [node, logFile] };
}

/** States whose reason is only the server's figures (tok/s, running, queued). */
const FIGURE_STATES = new Set(['serving', 'idle', 'ready']);

type ServerLive = NonNullable<ReturnType<TreeContext['liveFor']>>['servers'][number];

/** What the server is (model, where, parallelism, log, config, argv); the live lines are appended by the caller. */
function serverTooltip(s: SglangServer, live: ServerLive | undefined): vscode.MarkdownString {
  const md = new vscode.MarkdownString();
  // Node strings as text or in a fence longer than any backtick run inside, never as markdown.
  md.appendMarkdown('**');
  md.appendText(visible(s.modelPath ?? '?'));
  md.appendMarkdown('** on ');
  md.appendText(visible(`${s.host}:${s.port} (pid ${s.pid})`));
  md.appendMarkdown('\n\n');
  const spec = s.speculativeAlgorithm ? ` · ${s.speculativeAlgorithm}` : '';
  const reasoning = s.reasoningParser ? ` · reasoning ${s.reasoningParser}` : '';
  md.appendText(visible(`TP ${s.tp} · DP ${s.dp}${spec}${reasoning}`));
  md.appendMarkdown('\n\n');
  if (s.logFile) {
    md.appendMarkdown('Log: ');
    md.appendText(visible(s.logFile));
    md.appendMarkdown('\n\n');
  }
  if (live?.logSkipped) {
    md.appendText(visible(`Log not followed: ${live.logSkipped}`));
    md.appendMarkdown('\n\n');
  }
  if (s.statLines === false) {
    md.appendText(visible(`Started with --log-level ${s.logLevel ?? ''}`));
    md.appendMarkdown(': SGLang prints no decode/prefill stat lines, so throughput comes only from /metrics (with --enable-metrics).\n\n');
  }
  if (s.configFile) {
    md.appendMarkdown('Config: ');
    md.appendText(visible(s.configFile));
    md.appendMarkdown(' (read on the node; command-line flags override it)\n\n');
  }
  if (isSecondaryRank(s)) md.appendMarkdown(`${mdText(SECONDARY_RANK_NOTE)}\n\n`);
  if (s.hasApiKey) md.appendMarkdown(`API key: set (${REDACTED})\n\n`);
  md.appendMarkdown(mdFence(s.args.join(' '), 'shell'));
  return md;
}

/**
 * A crashed server gone from the probe, as last seen: state crashed with the exception line (never the traceback's
 * header), Restart Server first on its menu.
 */
function crashedServerItem(el: TreeNodeOf<'server'>, ctx: TreeContext, item: vscode.TreeItem): vscode.TreeItem {
  const s = el.server;
  const c = ctx.crashedFor?.(el.node).find((x) => x.server.port === s.port);
  const why = c?.message ?? 'the server process is gone';
  item.description = `crashed — ${why.length > 120 ? `${why.slice(0, 119)}…` : why} · ${serverDescription(s)}`;
  item.iconPath = stateIcon('crashed') ?? undefined;
  const md = serverTooltip(s, undefined);
  md.appendMarkdown(`\n\nState: **crashed**${c?.class ? ` (${c.class})` : ''} — ${mdText(why)}`);
  md.appendMarkdown('\n\nRestart Server starts it again with this command line.');
  item.tooltip = md;
  item.contextValue = s.logFile ? 'server.crashed.log' : 'server.crashed';
  if (s.logFile) item.command = tailClick(el.node, s.logFile, ctx);
  return item;
}

export function serverItem(el: TreeNodeOf<'server'>, ctx: TreeContext): vscode.TreeItem {
  const s = el.server;
  const item = new vscode.TreeItem(serverLabel(s), vscode.TreeItemCollapsibleState.None);
  item.id = `${el.node}:server:${s.port}:${s.pid}`;
  if (el.crashed) return crashedServerItem(el, ctx, item);
  const live = ctx.liveFor(el.node)?.servers.find((x) => x.port === s.port);
  item.description = serverDescription(s, live?.stats || (live?.logSkipped ? 'log not followed' : undefined));
  const md = serverTooltip(s, live);
  item.tooltip = md;
  const health = live?.health ?? 'unknown';
  item.iconPath = (live?.state ? stateIcon(live.state) : null) ?? healthIcon(health);
  if (live?.state && live.state !== 'serving') item.description = `${live.state} — ${item.description}`;
  // A multi-node server's rank 0: where its other ranks are, or that one is missing (the whole server fails).
  const head = headSummary(
    ctx.fleet.nodes().map((n) => ({ node: n.name, servers: ctx.fleet.status(n.name).probe?.servers ?? [] })),
    el.node,
    s,
  );
  if (head) {
    item.description = `${item.description} · ${head.text}`;
    if (head.missing.length) item.iconPath = new vscode.ThemeIcon('warning', new vscode.ThemeColor('charts.orange'));
  }
  if (live?.state) {
    // A serving or idle server's reason is its figures: the Health line states them, once, from one source (
    // the State line's queue came from /metrics, the Health line's from the log, and they disagreed).
    const reason = live.stateReason && !FIGURE_STATES.has(live.state) ? ` — ${mdText(live.stateReason)}` : '';
    md.appendMarkdown(`\n\nState: **${live.state}**${live.stateClass ? ` (${live.stateClass})` : ''}${reason}`);
  }
  if (live) {
    const healthDetail = live.healthDetail ? ` (${mdText(live.healthDetail)})` : '';
    const stats = live.stats ? ` · ${mdText(live.stats)} (from ${live.source})` : '';
    md.appendMarkdown(`\n\nHealth: **${health}**${healthDetail}${stats}`);
  }
  item.contextValue = s.logFile ? 'server.log' : 'server';
  if (s.logFile) item.command = tailClick(el.node, s.logFile, ctx);
  return item;
}
