/**
 * Live log tails inside VS Code: a read-only text document per tail (scheme `gpu-sessions-log`),
 * language `log` so VS Code colours levels, fed by a RemoteTail on the node's pooled connection.
 * It starts with the last N lines, follows like `tail -F` (truncation, rotation and reconnects are
 * marked), keeps at most `gpuSessions.tail.maxLines` lines (ring buffer), highlights readiness and
 * errors, follows the end unless you scrolled up, and stops when its tab closes.
 */
import * as vscode from 'vscode';
import { classifyLine } from '../core/sglang/logLines';
import { RemoteTail, RingBuffer, TailEvent } from '../core/remote/tail';
import type { Transport } from '../core/ssh/transport';

export const LOG_SCHEME = 'gpu-sessions-log';

interface LiveLog {
  uri: vscode.Uri;
  tail: RemoteTail;
  lines: RingBuffer<string>;
  multi: boolean;
  dirty: boolean;
  label: string;
}

function shortName(p: string): string {
  return p.split('/').pop() ?? p;
}

export class LogViews implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  private readonly logs = new Map<string, LiveLog>();
  private readonly disposables: vscode.Disposable[] = [];
  private timer: NodeJS.Timeout;
  private readonly readyDeco = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor('diffEditor.insertedLineBackground'),
    isWholeLine: true,
    overviewRulerColor: new vscode.ThemeColor('charts.green'),
    overviewRulerLane: vscode.OverviewRulerLane.Right,
  });
  private readonly errorDeco = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor('diffEditor.removedLineBackground'),
    isWholeLine: true,
    overviewRulerColor: new vscode.ThemeColor('errorForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Right,
  });
  private readonly markerDeco = vscode.window.createTextEditorDecorationType({
    fontStyle: 'italic',
    color: new vscode.ThemeColor('descriptionForeground'),
    isWholeLine: true,
  });

  constructor() {
    this.disposables.push(
      vscode.workspace.registerTextDocumentContentProvider(LOG_SCHEME, this),
      this.emitter,
      this.readyDeco,
      this.errorDeco,
      this.markerDeco,
      vscode.window.tabGroups.onDidChangeTabs(() => this.stopClosed()),
      vscode.window.onDidChangeVisibleTextEditors(() => this.decorateVisible()),
    );
    // Coalesce updates: at most 4 document refreshes per second per log.
    this.timer = setInterval(() => this.flush(), 250);
  }

  /** Open (or focus) a live tail of one or more remote files. */
  async open(nodeName: string, t: Transport, files: string[], title?: string): Promise<vscode.TextEditor> {
    const label = title ?? (files.length === 1 ? shortName(files[0]) : `${files.length} logs`);
    const uri = vscode.Uri.from({
      scheme: LOG_SCHEME,
      path: `/${nodeName}/${label}`,
      query: new URLSearchParams({ f: JSON.stringify(files) }).toString(),
    });
    const key = uri.toString();
    if (!this.logs.has(key)) {
      const cfg = vscode.workspace.getConfiguration('gpuSessions');
      const lines = new RingBuffer<string>(Math.max(100, cfg.get<number>('tail.maxLines', 5000)));
      const tail = new RemoteTail(t, { files, initialLines: Math.max(0, cfg.get<number>('tail.initialLines', 200)) });
      const live: LiveLog = { uri, tail, lines, multi: files.length > 1, dirty: true, label };
      tail.on('event', (e: TailEvent) => this.onEvent(live, e));
      this.logs.set(key, live);
      lines.push(
        `──── ${nodeName}: following ${files.join(', ')} (last ${cfg.get<number>('tail.initialLines', 200)} lines, then live) ────`,
      );
      tail.start().catch((e) => {
        lines.push(`──── could not start the tail: ${e instanceof Error ? e.message : String(e)} ────`);
        live.dirty = true;
      });
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'log');
    const ed = await vscode.window.showTextDocument(doc, { preview: false });
    this.decorate(ed);
    return ed;
  }

  private onEvent(live: LiveLog, e: TailEvent): void {
    if (e.type === 'line') {
      live.lines.push(live.multi ? `[${shortName(e.file)}] ${e.line}` : e.line);
    } else {
      live.lines.push(`──── ${e.file ? shortName(e.file) + ': ' : ''}${e.kind}: ${e.message} ────`);
    }
    live.dirty = true;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const live = this.logs.get(uri.toString());
    if (!live) return '(this tail has stopped; open it again from the GPU Sessions view)\n';
    const arr = live.lines.toArray();
    const head = live.lines.dropped
      ? [`──── ${live.lines.dropped} earlier line(s) dropped (ring buffer of ${live.lines.capacity}); the full file stays on the node ────`]
      : [];
    return [...head, ...arr].join('\n') + '\n';
  }

  private flush(): void {
    for (const live of this.logs.values()) {
      if (!live.dirty) continue;
      live.dirty = false;
      const ed = vscode.window.visibleTextEditors.find((x) => x.document.uri.toString() === live.uri.toString());
      // Follow the end unless the user scrolled away from it (scroll lock).
      const atEnd =
        !ed || ed.visibleRanges.length === 0 || ed.visibleRanges[ed.visibleRanges.length - 1].end.line >= ed.document.lineCount - 3;
      this.emitter.fire(live.uri);
      if (ed) {
        setTimeout(() => {
          if (atEnd)
            ed.revealRange(
              new vscode.Range(ed.document.lineCount - 1, 0, ed.document.lineCount - 1, 0),
              vscode.TextEditorRevealType.Default,
            );
          this.decorate(ed);
        }, 50);
      }
    }
  }

  private decorateVisible(): void {
    for (const ed of vscode.window.visibleTextEditors) if (ed.document.uri.scheme === LOG_SCHEME) this.decorate(ed);
  }

  private decorate(ed: vscode.TextEditor): void {
    if (ed.document.uri.scheme !== LOG_SCHEME) return;
    const ready: vscode.Range[] = [];
    const errors: vscode.Range[] = [];
    const markers: vscode.Range[] = [];
    const n = ed.document.lineCount;
    for (let i = 0; i < n; i++) {
      const text = ed.document.lineAt(i).text;
      if (text.startsWith('──── ')) {
        markers.push(new vscode.Range(i, 0, i, 0));
        continue;
      }
      const k = classifyLine(text.replace(/^\[[^\]]+\] (?=\[)/, '')).kind;
      if (k === 'ready') ready.push(new vscode.Range(i, 0, i, 0));
      else if (k === 'error' || k === 'traceback') errors.push(new vscode.Range(i, 0, i, 0));
    }
    ed.setDecorations(this.readyDeco, ready);
    ed.setDecorations(this.errorDeco, errors);
    ed.setDecorations(this.markerDeco, markers);
  }

  /** Stop tails whose tab is gone. */
  private stopClosed(): void {
    const open = new Set<string>();
    for (const g of vscode.window.tabGroups.all) {
      for (const tab of g.tabs) {
        const input = tab.input as { uri?: vscode.Uri } | undefined;
        if (input?.uri?.scheme === LOG_SCHEME) open.add(input.uri.toString());
      }
    }
    for (const [key, live] of this.logs) {
      if (!open.has(key)) {
        live.tail.stop();
        this.logs.delete(key);
      }
    }
  }

  get active(): number {
    return this.logs.size;
  }

  dispose(): void {
    clearInterval(this.timer);
    for (const l of this.logs.values()) l.tail.stop();
    this.logs.clear();
    for (const d of this.disposables) d.dispose();
  }
}
