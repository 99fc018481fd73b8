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

import { cfg } from './config';
import { BlockRedactor, redactOutput as scrubOutput } from '../core/util/redact';
const LOG_SCHEME = 'gpu-sessions-log';

interface LiveLog {
  uri: vscode.Uri;
  tail: RemoteTail;
  lines: RingBuffer<string>;
  redactors: Map<string, BlockRedactor>;
  multi: boolean;
  dirty: boolean;
  label: string;
  /** Follow the end (true until the user scrolls up; true again once they scroll back to the end). */
  follow: boolean;
  /**
   * Until this time, visible-range changes are ours (new content being applied, our reveal) and do not
   * mean the user scrolled: set when VS Code fetches new content, shortened once it is applied.
   */
  settlingUntil: number;
}

/** The last `slack` lines count as "the end": a view showing them follows. */
function showsEnd(lastVisibleLine: number, lineCount: number, slack = 2): boolean {
  return lastVisibleLine >= lineCount - 1 - slack;
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
      vscode.window.onDidChangeVisibleTextEditors(() => {
        this.decorateVisible();
        for (const ed of vscode.window.visibleTextEditors) {
          const live = this.logs.get(ed.document.uri.toString());
          if (live?.follow) this.revealEnd(ed, live);
        }
      }),
      // New content applied: follow it (the document has the new lines now, whatever their number).
      vscode.workspace.onDidChangeTextDocument((e) => {
        const live = this.logs.get(e.document.uri.toString());
        if (!live) return;
        for (const ed of vscode.window.visibleTextEditors) {
          if (ed.document !== e.document) continue;
          if (live.follow) this.revealEnd(ed, live);
          else live.settlingUntil = Date.now() + 150;
          this.decorate(ed);
        }
      }),
      // Scroll lock: a scroll that leaves the end stops following; back at the end, it follows again.
      vscode.window.onDidChangeTextEditorVisibleRanges((e) => {
        const live = this.logs.get(e.textEditor.document.uri.toString());
        if (!live || !e.visibleRanges.length) return;
        const last = e.visibleRanges[e.visibleRanges.length - 1].end.line;
        if (showsEnd(last, e.textEditor.document.lineCount)) live.follow = true;
        else if (Date.now() >= live.settlingUntil) live.follow = false;
      }),
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
      const lines = new RingBuffer<string>(Math.max(100, cfg<number>('tail.maxLines', 5000)));
      const tail = new RemoteTail(t, { files, initialLines: Math.max(0, cfg<number>('tail.initialLines', 200)) });
      const live: LiveLog = {
        uri,
        tail,
        lines,
        redactors: new Map(),
        multi: files.length > 1,
        dirty: true,
        label,
        follow: true,
        settlingUntil: 0,
      };
      tail.on('event', (e: TailEvent) => this.onEvent(live, e));
      this.logs.set(key, live);
      lines.push(`──── ${nodeName}: following ${files.join(', ')} (last ${cfg<number>('tail.initialLines', 200)} lines, then live) ────`);
      tail.start().catch((e) => {
        lines.push(`──── could not start the tail: ${e instanceof Error ? e.message : String(e)} ────`);
        live.dirty = true;
      });
    }
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.languages.setTextDocumentLanguage(doc, 'log');
    const ed = await vscode.window.showTextDocument(doc, { preview: false });
    const live = this.logs.get(key);
    if (live?.follow) this.revealEnd(ed, live);
    this.decorate(ed);
    return ed;
  }

  /** Whether the view of this tail follows the end (false after the user scrolled up). */
  following(uri: vscode.Uri): boolean | undefined {
    return this.logs.get(uri.toString())?.follow;
  }

  private revealEnd(ed: vscode.TextEditor, live: LiveLog): void {
    const n = ed.document.lineCount;
    live.settlingUntil = Date.now() + 1000;
    void Promise.resolve(ed.revealRange(new vscode.Range(n - 1, 0, n - 1, 0), vscode.TextEditorRevealType.Default)).then(
      () => (live.settlingUntil = Date.now() + 150),
      () => undefined,
    );
  }

  private onEvent(live: LiveLog, e: TailEvent): void {
    if (e.type === 'line') {
      // One block redactor per file: a private key the log prints line by line is redacted as a block.
      let r = live.redactors.get(e.file);
      if (!r) live.redactors.set(e.file, (r = new BlockRedactor()));
      const line = scrubOutput(r.line(e.line));
      live.lines.push(live.multi ? `[${shortName(e.file)}] ${line}` : line);
    } else {
      live.lines.push(`──── ${e.file ? shortName(e.file) + ': ' : ''}${e.kind}: ${e.message} ────`);
    }
    live.dirty = true;
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    const live = this.logs.get(uri.toString());
    if (!live) return '(this tail has stopped; open it again from the GPU Sessions view)\n';
    // VS Code applies this content next: the visible-range changes that follow are not the user's.
    live.settlingUntil = Date.now() + 1000;
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
      // The reveal follows in onDidChangeTextDocument, once the new lines are in the document.
      this.emitter.fire(live.uri);
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

  /** The node left the list (the demo was stopped): its tails end, saying so in their view. */
  stopNode(nodeName: string): void {
    for (const live of this.logs.values()) {
      if (!live.uri.path.startsWith(`/${nodeName}/`)) continue;
      live.tail.stop();
      live.lines.push(`──── ${nodeName} was removed: this tail has stopped ────`);
      live.dirty = true;
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
