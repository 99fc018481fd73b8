/**
 * Node Dashboard: a webview per node with time-series charts (uPlot, shipped in media/vendor — no CDN) of
 * the history the live guard records. The extension shapes what is drawn (dashboardModel.ts: the node total and
 * $/Mtok first, per-server small multiples, GPU legends, labelled markers, a summary per chart, the empty state)
 * and posts it; the webview (media/dashboard.js) only draws it. Retry in the empty state probes the node again.
 * Strict CSP (nonce'd scripts, nothing remote), VS Code theme colours, and no work while the panel is hidden.
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { HistoryEntry } from '../core/node/history';
import { DashboardModel, buildDashboardModel } from './dashboardModel';
import { Disposables, toDisposable } from './disposable';

interface DashboardSource {
  history(node: string): HistoryEntry[];
  summary(node: string): string;
  onDidRecord(fn: (node: string) => void): () => void;
  /** The node's state now (its last probe); absent: judged from the samples alone. */
  reachable?(node: string): { ok: boolean; reason?: string };
  /** Probes the node again (the empty state's Retry). */
  retry?(node: string): Promise<unknown>;
}

const REFRESH_MS = 5000;

export class Dashboards extends Disposables {
  private readonly panels = new Map<string, vscode.WebviewPanel>();
  /** What each panel last drew (the extension-host test reads it). */
  readonly drawn = new Map<string, { samples: number; ports: number[] }>();
  /** The model each panel was last sent (the extension-host test reads it). */
  readonly posted = new Map<string, DashboardModel>();

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
    this.posted.delete(node);
    panel.webview.html = this.html(panel.webview, media);
    let timer: NodeJS.Timeout | null = null;
    const post = () => {
      if (!panel.visible) return; // no work while hidden
      const entries = this.source.history(node);
      const model = buildDashboardModel({
        node,
        entries,
        reachable: this.source.reachable?.(node),
        text: this.source.summary(node),
      });
      const ports = model.charts.filter((c) => c.group === 'server').map((c) => Number(c.id.slice('server-'.length)));
      this.drawn.set(node, { samples: model.times.length, ports });
      this.posted.set(node, model);
      void panel.webview.postMessage(model);
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
      if (m?.type === 'retry') {
        // the empty state's Retry: probe the node again, then draw what came of it
        void Promise.resolve(this.source.retry?.(node))
          .catch(() => undefined)
          .then(post);
      }
    });
    panel.onDidDispose(() => {
      if (timer) clearInterval(timer);
      off();
      this.panels.delete(node);
      this.posted.delete(node);
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
  h2 { font-size: 12px; font-weight: 600; margin: 12px 0 4px; text-transform: uppercase; color: var(--vscode-descriptionForeground); }
  h3 { font-size: 12px; font-weight: 600; margin: 8px 0 2px; }
  #summary { margin: 6px 0 10px; color: var(--vscode-descriptionForeground); white-space: pre-wrap; }
  #empty { margin: 16px 0; padding: 12px; border: 1px solid var(--vscode-editorWidget-border, #444); border-radius: 4px; }
  #empty[hidden] { display: none; }
  #empty p { margin: 0 0 10px; white-space: pre-wrap; }
  button { color: var(--vscode-button-foreground); background: var(--vscode-button-background); border: none; padding: 4px 12px; cursor: pointer; }
  button:hover { background: var(--vscode-button-hoverBackground); }
  .charts { display: flex; flex-wrap: wrap; gap: 8px; }
  .chart { flex: 1 1 100%; }
  .chart.small { flex: 0 1 calc(25% - 8px); min-width: 240px; }
  details > summary { cursor: pointer; margin: 12px 0 4px; font-size: 12px; font-weight: 600; }
  .u-legend { color: var(--vscode-foreground); font-size: 11px; }
  .u-legend .u-marker { border-radius: 2px; }
</style>
</head><body>
<div id="summary">Waiting for samples…</div>
<div id="empty" role="status" hidden><p id="empty-reason"></p><button id="retry" type="button">Retry</button></div>
<div id="charts">
  <div id="group-node" class="charts"></div>
  <h2 id="head-server" hidden>Per server: tok/s</h2>
  <div id="group-server" class="charts"></div>
  <details id="details"><summary>Per-server details (running, queued, KV usage, accept length)</summary><div id="group-detail" class="charts"></div></details>
  <h2 id="head-gpu" hidden>GPUs</h2>
  <div id="group-gpu" class="charts"></div>
</div>
<script nonce="${nonce}" src="${uplot}"></script>
<script nonce="${nonce}" src="${script}"></script>
</body></html>`;
  }
}
