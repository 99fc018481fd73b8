/**
 * Node Dashboard: a webview per node with time-series charts (uPlot, shipped in media/vendor — no CDN) of
 * the history the live guard records (per server tok/s, running, queued, KV usage, accept length; per GPU
 * utilisation, memory, power, temperature), the guard's transitions marked on the time axis, spend and the
 * rental deadline. Strict CSP (nonce'd scripts, nothing remote), VS Code theme colours, and no work while
 * the panel is hidden.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { HistoryEntry } from '../core/node/history';
import { Disposables, toDisposable } from './disposable';

export interface DashboardSource {
  history(node: string): HistoryEntry[];
  summary(node: string): string;
  onDidRecord(fn: (node: string) => void): () => void;
}

const REFRESH_MS = 5000;

export class Dashboards extends Disposables {
  private readonly panels = new Map<string, vscode.WebviewPanel>();
  /** What each panel last drew (the extension-host test reads it). */
  readonly drawn = new Map<string, { samples: number; ports: number[] }>();

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly source: DashboardSource,
  ) {
    super();
    this.register(toDisposable(() => this.panels.forEach((p) => p.dispose())));
  }

  open(node: string): vscode.WebviewPanel {
    const existing = this.panels.get(node);
    if (existing) {
      existing.reveal();
      return existing;
    }
    const media = vscode.Uri.joinPath(this.extensionUri, 'media');
    const panel = vscode.window.createWebviewPanel('gpuSessions.dashboard', `${node} — Dashboard`, vscode.ViewColumn.Active, {
      enableScripts: true,
      localResourceRoots: [media],
    });
    this.panels.set(node, panel);
    panel.webview.html = this.html(panel.webview, media);
    let timer: NodeJS.Timeout | null = null;
    const post = () => {
      if (!panel.visible) return; // no work while hidden
      const entries = this.source.history(node);
      const samples = entries.filter((e) => e.type === 'sample');
      const transitions = entries
        .filter((e) => e.type === 'transition')
        .map((e) => ({ time: e.time, to: e.to, ok: ['ok', 'running', 'serving', 'idle', 'ready', 'starting'].includes(String(e.to)) }));
      const ports = [...new Set(samples.flatMap((s) => ((s.servers as Array<{ port: number }>) ?? []).map((x) => x.port)))];
      this.drawn.set(node, { samples: samples.length, ports });
      void panel.webview.postMessage({
        type: 'data',
        node,
        samples: samples.slice(-4000),
        transitions,
        summary: this.source.summary(node),
      });
    };
    const schedule = () => {
      if (timer) clearInterval(timer);
      timer = panel.visible ? setInterval(post, REFRESH_MS) : null;
    };
    const off = this.source.onDidRecord((n) => {
      if (n === node) post();
    });
    panel.onDidChangeViewState(() => {
      schedule();
      post();
    });
    panel.webview.onDidReceiveMessage((m: { type?: string }) => {
      if (m?.type === 'ready') post();
    });
    panel.onDidDispose(() => {
      if (timer) clearInterval(timer);
      off();
      this.panels.delete(node);
    });
    schedule();
    return panel;
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const nonce = randomBytes(16).toString('base64');
    const uplot = webview.asWebviewUri(vscode.Uri.joinPath(media, 'vendor', 'uPlot.iife.min.js'));
    const uplotCss = webview.asWebviewUri(vscode.Uri.joinPath(media, 'vendor', 'uPlot.min.css'));
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, 'dashboard.js'));
    const csp = [
      "default-src 'none'",
      `img-src ${webview.cspSource} data:`,
      `style-src ${webview.cspSource} 'nonce-${nonce}'`,
      `script-src 'nonce-${nonce}'`,
      `font-src ${webview.cspSource}`,
    ].join('; ');
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="${uplotCss}">
<style nonce="${nonce}">
  body { color: var(--vscode-foreground); background: var(--vscode-editor-background); font-family: var(--vscode-font-family); }
  h3 { font-size: 12px; font-weight: 600; margin: 8px 0 2px; }
  #summary { margin: 6px 0 10px; color: var(--vscode-descriptionForeground); white-space: pre-wrap; }
  #charts { display: flex; flex-wrap: wrap; gap: 8px; }
  .chart { flex: 1 1 100%; }
  .chart.small { flex: 0 1 calc(25% - 8px); }
  .u-legend { color: var(--vscode-foreground); font-size: 11px; }
</style>
</head><body>
<div id="summary">Waiting for samples…</div>
<div id="charts"></div>
<script nonce="${nonce}" src="${uplot}"></script>
<script nonce="${nonce}" src="${script}"></script>
</body></html>`;
  }
}
