/**
 * Alerts: one notification per transition into trouble from the live guard (core/node/guard.ts), debounced
 * (the same subject at most once a minute; more than three within ten seconds are folded into one), with a
 * setting per class (`gpuSessions.alerts.<name>`), and actions: Open Log (at the error line), Salvage Node
 * (job done, crashed), Show Node.
 */
import * as vscode from 'vscode';
import type { GuardTransition } from '../core/node/guard';
import { isOkValue } from '../core/node/guard';
import { runOperation } from '../core/remote/operation';
import { lastLinesOperation } from '../core/remote/tail';
import { redactOutput } from '../core/util/redact';
import type { Transport } from '../core/ssh/transport';
import { cfg } from './config';
import { Disposables } from './disposable';
import { SCRIPT_SCHEME, ScriptDocuments } from './scriptDocuments';

/** The setting a transition falls under: its failure class, else its condition. */
export function alertSetting(t: GuardTransition): string {
  const byTo: Record<string, string> = {
    done: 'jobDone',
    'disk-full': 'diskFull',
    'gpu-lost': 'gpu',
    unreachable: 'unreachable',
    'dp-imbalance': 'dpImbalance',
    'accept-drop': 'acceptDrop',
    'deadline-near': 'deadline',
    'kv-pressure': 'kvPressure',
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

export interface ShownAlert {
  transition: GuardTransition;
  text: string;
  actions: string[];
  at: number;
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
  private foldTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly transportFor: (node: string) => Transport | undefined,
    private readonly docs: ScriptDocuments,
    /** how a notification is shown (tests replace it) */
    private readonly show: (text: string, actions: string[]) => Thenable<string | undefined> = (text, actions) =>
      vscode.window.showWarningMessage(text, ...actions),
  ) {
    super();
  }

  notify(t: GuardTransition): void {
    if (isOkValue(t.to)) return;
    if (!cfg<boolean>(`alerts.${alertSetting(t)}`, true)) return;
    const now = Date.now();
    const subject = `${t.node}|${t.subject}|${t.port ?? t.gpu ?? t.mount ?? ''}|${t.to}`;
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
        void this.show(`GPU Sessions: ${n} more problem(s) on your nodes — see the GPU Sessions view.`, ['Show Node']).then((a) =>
          a ? this.act(t, a) : undefined,
        );
      }, STORM_WINDOW_MS);
      return;
    }
    this.recent.push(now);
    const where = t.port !== undefined ? `:${t.port}` : t.gpu !== undefined ? `GPU ${t.gpu}` : (t.mount ?? '');
    const text = `${t.node}${where ? ` ${where}` : ''}: ${t.to}${t.class ? ` (${t.class})` : ''} — ${redactOutput(t.message).slice(0, 300)}`;
    const actions: string[] = [];
    if (t.logFile) actions.push('Open Log');
    if (t.to === 'done' || t.to === 'crashed' || t.to === 'deadline-near') actions.push('Salvage Node');
    actions.push('Show Node');
    this.shown.push({ transition: t, text, actions, at: now });
    if (this.shown.length > 50) this.shown.shift();
    void this.show(text, actions).then((a) => (a ? this.act(t, a) : undefined));
  }

  /** Runs a notification action (also what the extension-host test calls). */
  async act(t: GuardTransition, action: string): Promise<vscode.TextEditor | undefined> {
    if (action === 'Open Log' && t.logFile) return this.openLogAt(t.node, t.logFile, t.message);
    if (action === 'Salvage Node') await vscode.commands.executeCommand('gpuSessions.salvageNode', t.node);
    if (action === 'Show Node') await vscode.commands.executeCommand('gpuSessions.nodes.focus');
    return undefined;
  }

  /** The end of a remote log (read-only), scrolled to the last line containing `needle`. */
  async openLogAt(node: string, file: string, needle: string): Promise<vscode.TextEditor | undefined> {
    const t = this.transportFor(node);
    if (!t) return undefined;
    const r = await runOperation(t, lastLinesOperation(file, 5000, 30_000));
    const text = r.stdout.toString('utf8');
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

export { SCRIPT_SCHEME };
