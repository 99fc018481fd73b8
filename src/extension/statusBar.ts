/**
 * Status-bar throughput: total tok/s summed over the latest value of every followed server of every
 * node, plus running requests and generation progress; the tooltip is a per-node/per-server table;
 * clicking focuses the GPU Sessions view.
 */
import * as vscode from 'vscode';
import type { NodeLive } from '../core/node/monitor';
import { formatCount } from '../core/util/format';
import { mdText } from '../core/util/terminal';
import { perMillionPhrase } from '../core/node/spend';

const n0 = formatCount;

export function eta(s: number | null): string {
  if (s === null || !Number.isFinite(s) || s < 0) return '';
  if (s < 90) return `${Math.round(s)}s`;
  if (s < 5400) return `${Math.round(s / 60)}m`;
  if (s < 86400 * 2) return `${(s / 3600).toFixed(1)}h`;
  return `${(s / 86400).toFixed(1)}d`;
}

function progressText(l: NodeLive): string | null {
  const p = l.progress?.progress;
  if (p && p.ok && p.percent !== null)
    return `${p.percent.toFixed(1)}%${p.etaS !== null && p.status !== 'done' ? ` ETA ${eta(p.etaS)}` : ''}${p.status === 'done' ? ' done' : ''}`;
  const d = l.progress?.doneIndices;
  if (d) return `${n0(d.count)} done`;
  return null;
}

export class ThroughputStatus implements vscode.Disposable {
  readonly item: vscode.StatusBarItem;

  constructor() {
    this.item = vscode.window.createStatusBarItem('gpuSessions.throughput', vscode.StatusBarAlignment.Left, 50);
    this.item.name = 'GPU Sessions Throughput';
    this.item.command = 'gpuSessions.nodes.focus';
  }

  update(lives: NodeLive[]): void {
    const withServers = lives.filter((l) => l.servers.length > 0 || l.progress);
    if (withServers.length === 0) {
      this.item.hide();
      return;
    }
    const tok = withServers.reduce((a, b) => a + b.genThroughput, 0);
    const run = withServers.reduce((a, b) => a + b.runningReqs, 0);
    const prog = withServers.map(progressText).find((x) => x);
    const problems = withServers.flatMap((l) => (l.problems ?? []).map((p) => ({ node: l.node, ...p })));
    this.item.text = `${problems.length ? '$(warning)' : '$(pulse)'} ${n0(tok)} tok/s · ${n0(run)} run${prog ? ` · ${prog}` : ''}`;
    // A plain sentence for screen readers (the text holds $(icon) codes, the tooltip Markdown).
    this.item.accessibilityInformation = {
      label:
        `GPU Sessions: ${n0(tok)} tokens per second, ${n0(run)} running requests${prog ? `, ${prog}` : ''}` +
        (problems.length ? `; ${problems.length} server${problems.length === 1 ? '' : 's'} not OK` : ''),
      role: 'status',
    };
    // the warning colour while any node is not OK; the tooltip says why
    this.item.backgroundColor = problems.length ? new vscode.ThemeColor('statusBarItem.warningBackground') : undefined;
    const md = new vscode.MarkdownString(undefined, true);
    if (problems.length) {
      md.appendMarkdown(`**Not OK:**\n\n`);
      for (const p of problems.slice(0, 20)) {
        const port = p.port !== undefined ? ` :${p.port}` : '';
        const cls = p.class ? ` (${p.class})` : '';
        md.appendMarkdown(`- ${mdText(p.node)}${port} **${p.to}**${cls} — ${mdText(p.message.slice(0, 160))}\n`);
      }
      md.appendMarkdown('\n');
    }
    md.appendMarkdown(`**GPU Sessions** — ${n0(tok)} tok/s over ${withServers.reduce((a, b) => a + b.servers.length, 0)} server(s)\n\n`);
    md.appendMarkdown('| node | server | tok/s | running | queue | health |\n|---|---|---:|---:|---:|---|\n');
    for (const l of withServers) {
      for (const s of l.servers)
        md.appendMarkdown(
          `| ${mdText(l.node)} | :${s.port} | ${n0(s.genThroughput)} | ${n0(s.runningReqs)} | ${n0(s.queueReqs)} | ${s.health} |\n`,
        );
      const p = l.progress?.progress;
      if (p && p.ok) {
        const rate = p.ratePerS ? `, ${p.ratePerS.toFixed(2)} req/s` : '';
        const etaText = p.etaS ? `, ETA ${eta(p.etaS)}` : '';
        const status = p.status ? ` (${mdText(String(p.status))})` : '';
        md.appendMarkdown(
          `\n**${mdText(l.node)} progress:** ${p.completed ?? '?'} / ${p.total ?? '?'} completed, ${p.failed ?? 0} ` +
            `failed${rate}${etaText}${status}\n`,
        );
      } else if (p && !p.ok) md.appendMarkdown(`\n**${mdText(l.node)} progress.json:** ${mdText(p.error ?? '')}\n`);
      if (l.spend) {
        const perMillion = perMillionPhrase(l.spend);
        md.appendMarkdown(
          `\n**${mdText(l.node)} spend:** $${l.spend.total.toFixed(2)} at $${l.spend.perHour}/h` +
            `${l.spend.priceSource ? ` from ${mdText(l.spend.priceSource)}` : ''}${perMillion ? ` · ${perMillion}` : ''}\n`,
        );
      }
      md.appendMarkdown(
        `\n[$(graph-line) Dashboard of ${mdText(l.node)}](command:gpuSessions.openDashboard?${encodeURIComponent(JSON.stringify([l.node]))})\n`,
      );
      if (l.deadline)
        md.appendMarkdown(
          `\n**${mdText(l.node)} rental:** ${mdText(l.deadline.message)}${l.deadline.source ? ` (end from ${mdText(l.deadline.source)})` : ''}\n`,
        );
      const d = l.progress?.doneIndices;
      if (d)
        md.appendMarkdown(
          `\n**${mdText(l.node)} .done_indices:** ${n0(d.count)} done, highest ${d.highest ?? '—'}, ${n0(d.gaps)} gap(s)\n`,
        );
    }
    md.isTrusted = { enabledCommands: ['gpuSessions.openDashboard'] };
    this.item.tooltip = md;
    this.item.show();
  }

  dispose(): void {
    this.item.dispose();
  }
}
