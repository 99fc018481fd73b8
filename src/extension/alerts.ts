/**
 * Alerts: one notification per transition into trouble from the live guard (core/node/guard.ts), debounced
 * (the same subject at most once a minute; more than three within ten seconds are folded into one), with a
 * setting per class (`gpuSessions.alerts.<name>`), and actions: Open Log (at the error line), Salvage Node
 * (job done, crashed), Show Node; a generation output file turning degenerate: Open Sample, Open File.
 */
import * as vscode from 'vscode';
import type { GuardTransition } from '../core/node/guard';
import { isOkValue } from '../core/node/guard';
import { runOperation } from '../core/remote/operation';
import { plainNotificationText } from '../core/security/nodePaths';
import { lastLinesOperation } from '../core/remote/tail';
import { redactOutput } from '../core/util/redact';
import type { Transport } from '../core/ssh/transport';
import { cfg } from './config';
import { isErrorState, plainState } from '../core/node/plainWords';
import { exceptionLine, isTracebackHeader, shownFailureMessage } from '../core/sglang/exceptionLine';
import type { SglangServer } from '../core/sglang/serverArgv';
import { Disposables } from './disposable';
import { ScriptDocuments } from './scriptDocuments';

/** The setting a transition falls under: its failure class, else its condition. */
function alertSetting(t: GuardTransition): string {
  const byTo: Record<string, string> = {
    done: 'jobDone',
    'disk-full': 'diskFull',
    'gpu-lost': 'gpu',
    unreachable: 'unreachable',
    'dp-imbalance': 'dpImbalance',
    'accept-drop': 'acceptDrop',
    'deadline-near': 'deadline',
    'rental-ended': 'deadline',
    'job-overrun': 'deadline',
    'kv-pressure': 'kvPressure',
    'data-degenerate': 'dataDegenerate',
    'data-suspect': 'dataSuspect',
  };
  if (t.to in byTo) return byTo[t.to];
  const byClass: Record<string, string> = {
    crash: 'crash',
    oom: 'oom',
    'kv-pressure': 'kvPressure',
    hang: 'hang',
    nccl: 'nccl',
    gpu: 'gpu',
  };
  return t.class ? byClass[t.class] : 'crash';
}

interface ShownAlert {
  transition: GuardTransition;
  text: string;
  actions: string[];
  at: number;
  severity: Severity;
  /** node|subject|key|state */
  subject: string;
  /** the subject recovered (or the user stopped it) since */
  withdrawn?: boolean;
}

type Severity = 'error' | 'warning' | 'info';

function showBySeverity(text: string, actions: string[], severity: Severity): Thenable<string | undefined> {
  if (severity === 'error') return vscode.window.showErrorMessage(text, ...actions);
  if (severity === 'info') return vscode.window.showInformationMessage(text, ...actions);
  return vscode.window.showWarningMessage(text, ...actions);
}

const SAME_SUBJECT_MS = 60_000;
const STORM_WINDOW_MS = 10_000;
const STORM_MAX = 3;

export class Alerts extends Disposables {
  /** Recent notifications (newest last, at most 50): for the extension API and its tests. */
  readonly shown: ShownAlert[] = [];
  private readonly lastBySubject = new Map<string, number>();
  private recent: number[] = [];
  private folded = 0;
  /** The alert shown last per subject (node|subject|key), until it recovers. */
  private readonly open = new Map<string, ShownAlert>();
  private foldTimer: NodeJS.Timeout | null = null;
  /** The sampled rows behind a file's data verdict (Open Sample), supplied by the extension. */
  dataSample?: (node: string, path: string) => string;

  constructor(
    private readonly transportFor: (node: string) => Transport | undefined,
    private readonly docs: ScriptDocuments,
    /** The server the tree lists on that port (Restart Server's argument), if any. */
    private readonly serverOf: (node: string, port: number) => SglangServer | undefined,
    /** how a notification is shown (tests replace it) */
    private readonly show: (text: string, actions: string[], severity: Severity) => Thenable<string | undefined> = showBySeverity,
  ) {
    super();
  }

  /** `expected`: why the user expected it (a rank loss their own Release Node predicted): an info, not an error. */
  notify(t: GuardTransition, expected?: string): void {
    if (isOkValue(t.to)) return this.clear(t, true);
    if (!cfg<boolean>(`alerts.${alertSetting(t)}`, t.to !== 'data-suspect')) return;
    const now = Date.now();
    const subject = `${t.node}|${t.subject}|${t.port ?? t.gpu ?? t.mount ?? t.path ?? ''}|${t.to}`;
    const last = this.lastBySubject.get(subject);
    if (last !== undefined && now - last < SAME_SUBJECT_MS) return;
    this.lastBySubject.set(subject, now);
    this.recent = this.recent.filter((x) => now - x < STORM_WINDOW_MS);
    if (this.recent.length >= STORM_MAX) {
      this.folded++;
      this.foldTimer ??= setTimeout(() => {
        const n = this.folded;
        this.folded = 0;
        this.foldTimer = null;
        void this.show(`GPU Sessions: ${n} more problem(s) on your nodes — see the GPU Sessions view.`, ['Show Node'], 'warning').then(
          (a) => (a ? this.act(t, a) : undefined),
        );
      }, STORM_WINDOW_MS);
      return;
    }
    this.recent.push(now);
    void this.present(t, subject, now, expected);
  }

  /** The notification itself: plain words, the exception line, error severity when something stopped working. */
  private async present(t: GuardTransition, subject: string, now: number, expected?: string): Promise<void> {
    const where = t.port !== undefined ? `:${t.port}` : t.gpu !== undefined ? `GPU ${t.gpu}` : (t.mount ?? '');
    let detail = t.message;
    if (t.logFile && isTracebackHeader(detail)) detail = shownFailureMessage(detail, await this.readExceptionLine(t.node, t.logFile));
    const error = isErrorState(t.to, t.class);
    const said = plainNotificationText(redactOutput(detail).slice(0, 300));
    const text = `${t.node}${where ? ` ${where}` : ''} ${plainState(t.to, t.class, t.message)} — ${said}${expected ? ` (${expected})` : ''}`;
    const actions: string[] = [];
    // a stalled server still runs, a crashed one is gone: either way Restart Server comes first (with the command
    // line it ran with)
    if (t.subject === 'server' && t.port !== undefined && (t.to === 'stalled' || t.to === 'unhealthy' || t.to === 'crashed'))
      actions.push('Restart Server');
    if (t.logFile) actions.push('Open Log');
    if (t.subject === 'data' && t.path) actions.push('Open Sample', 'Open File');
    if (['done', 'crashed', 'deadline-near', 'rental-ended', 'job-overrun', 'gpu-lost'].includes(t.to)) actions.push('Salvage Node');
    // the job is done or the rental ends: the node can go (Release Node salvages, then frees it)
    if (['done', 'deadline-near', 'rental-ended'].includes(t.to)) actions.push('Release Node');
    actions.push('Show Node');
    const severity: Severity = expected ? 'info' : error ? 'error' : 'warning';
    const shown: ShownAlert = { transition: t, text, actions, at: now, severity, subject };
    this.shown.push(shown);
    if (this.shown.length > 50) this.shown.shift();
    this.open.set(subject.replace(/\|[^|]*$/, ''), shown);
    const a = await this.show(text, actions, shown.severity);
    if (a && !shown.withdrawn) await this.act(t, a);
    else if (a)
      void vscode.window.showInformationMessage(`GPU Sessions: ${t.node}${where ? ` ${where}` : ''} is fine again; nothing to do.`);
  }

  /** The last exception line of the server's log (a crash's alert quotes it, not the traceback's header). */
  async readExceptionLine(node: string, file: string): Promise<string | null> {
    const tr = this.transportFor(node);
    if (!tr) return null;
    try {
      const r = await runOperation(tr, lastLinesOperation(file, 400, 10_000));
      return exceptionLine(r.stdout.toString('utf8').split('\n'));
    } catch {
      return null;
    }
  }

  /**
   * The subject is fine again (or the user stopped it): an alert still open about it is withdrawn (its action does
   * nothing harmful) and, for a recovery, a short note says so. VS Code offers no way to close a shown toast.
   */
  clear(t: GuardTransition, recovered = false): void {
    const key = `${t.node}|${t.subject}|${t.port ?? t.gpu ?? t.mount ?? t.path ?? ''}`;
    const open = this.open.get(key);
    if (!open) return;
    this.open.delete(key);
    open.withdrawn = true;
    this.lastBySubject.delete(open.subject);
    if (recovered) {
      const where = t.port !== undefined ? ` :${t.port}` : t.gpu !== undefined ? ` GPU ${t.gpu}` : '';
      const text = `${t.node}${where} is fine again (${plainState(t.to, t.class, t.message)}) — the earlier alert no longer applies.`;
      this.shown.push({ transition: t, text, actions: [], at: Date.now(), severity: 'info', subject: key });
      void this.show(text, [], 'info');
    }
  }

  /** Runs a notification action (also what the extension-host test calls). */
  async act(t: GuardTransition, action: string): Promise<vscode.TextEditor | undefined> {
    if (action === 'Open Log' && t.logFile) return this.openLogAt(t.node, t.logFile, t.message);
    if (action === 'Open File' && t.path) return this.openLogAt(t.node, t.path, '');
    if (action === 'Open Sample' && t.path && this.dataSample) {
      const uri = this.docs.put(t.node, `${t.path.replace(/^\/+/, '')}.sample.md`, this.dataSample(t.node, t.path));
      return vscode.window.showTextDocument(await vscode.workspace.openTextDocument(uri), { preview: false });
    }
    if (action === 'Restart Server' && t.port !== undefined) {
      const srv = this.serverOf(t.node, t.port);
      const el = srv ? { type: 'server', node: t.node, server: srv, ...(t.to === 'crashed' ? { crashed: true } : {}) } : t.node;
      await vscode.commands.executeCommand('gpuSessions.restartServer', el);
    }
    if (action === 'Salvage Node') await vscode.commands.executeCommand('gpuSessions.salvageNode', t.node);
    if (action === 'Release Node') await vscode.commands.executeCommand('gpuSessions.releaseNode', t.node);
    if (action === 'Show Node') await vscode.commands.executeCommand('gpuSessions.nodes.focus');
    return undefined;
  }

  /** The end of a remote log (read-only), scrolled to the last line containing `needle`. */
  async openLogAt(node: string, file: string, needle: string): Promise<vscode.TextEditor | undefined> {
    const t = this.transportFor(node);
    if (!t) return undefined;
    const r = await runOperation(t, lastLinesOperation(file, 5000, 30_000));
    const text = redactOutput(r.stdout.toString('utf8'));
    const uri = this.docs.put(node, file.replace(/^\/+/, ''), text);
    const doc = await vscode.workspace.openTextDocument(uri);
    const ed = await vscode.window.showTextDocument(doc, { preview: false });
    const lines = text.split('\n');
    const probe = needle.slice(0, 120);
    let at = -1;
    for (let i = lines.length - 1; i >= 0; i--)
      if (probe && lines[i].includes(probe)) {
        at = i;
        break;
      }
    if (at >= 0) {
      const range = new vscode.Range(at, 0, at, lines[at].length);
      ed.selection = new vscode.Selection(range.start, range.end);
      ed.revealRange(range, vscode.TextEditorRevealType.InCenter);
    }
    return ed;
  }

  override dispose(): void {
    if (this.foldTimer) clearTimeout(this.foldTimer);
    super.dispose();
  }
}
