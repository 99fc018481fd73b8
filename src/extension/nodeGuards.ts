/**
 * The node guard in VS Code (the laptop side): each reachable GPU node's guard is read (`guard status`, one
 * exec) at most once a minute, after a probe; the node gets a Guard row (running · last verified sync · at risk ·
 * what it does when the job is done), and when the laptop comes back a summary of what the guard did meanwhile
 * ("job done 03:12 · synced · rental stopped 03:40"), once per new journal entry. A node that never ran a guard
 * gets no row and no message.
 */
import * as vscode from 'vscode';
import { runOperation } from '../core/remote/operation';
import { GuardStatus, guardStatusOperation } from '../core/guard/operations';
import { awaySummary } from '../core/guard/summary';
import type { Fleet } from '../core/node/fleet';
import type { Transport } from '../core/ssh/transport';
import type { Logger } from '../core/util/logger';
import { errorMessage } from '../core/util/errors';
import { Disposables, toDisposable } from './disposable';

/** How often a node's guard is read (after a probe of that node). */
const CHECK_EVERY_MS = 60_000;

interface NodeGuardsDeps {
  fleet: Fleet;
  transportFor(node: string): Transport | undefined;
  /** Where the newest journal entry already shown is kept, per node (globalState). */
  memento: vscode.Memento;
  /** The node's Guard row changed. */
  refresh(node: string): void;
  log: Logger;
  /** Says what happened while away (a notification); tests replace it. */
  announce?(node: string, summary: string): void;
}

export class NodeGuards extends Disposables {
  private readonly status = new Map<string, GuardStatus>();
  private readonly lastCheck = new Map<string, number>();
  private readonly inFlight = new Map<string, Promise<GuardStatus | undefined>>();

  constructor(private readonly d: NodeGuardsDeps) {
    super();
    const off = d.fleet.onDidChange((name) => {
      if (name) void this.maybeCheck(name);
    });
    this.register(toDisposable(off));
  }

  /** The node's guard as last read; undefined when it never ran one (or it was not read yet). */
  statusOf(node: string): GuardStatus | undefined {
    return this.status.get(node);
  }

  private async maybeCheck(node: string): Promise<void> {
    const st = this.d.fleet.status(node);
    // GPU nodes that answer; never a code host (no guard there) or a node that is not reached
    if (st.state !== 'ok' || !st.probe || st.probe.gpuState === 'no-nvidia-smi') return;
    if (this.inFlight.has(node) || Date.now() - (this.lastCheck.get(node) ?? 0) < CHECK_EVERY_MS) return;
    await this.check(node);
  }

  /** Read the node's guard now (Start/Stop Guard call it after acting: a read already under way is waited for, then
   *  the guard is read again, so the answer is never from before the act). */
  async check(node: string): Promise<GuardStatus | undefined> {
    const t = this.d.transportFor(node);
    if (!t) return this.status.get(node);
    await this.inFlight.get(node)?.catch(() => undefined);
    const p = this.read(node, t);
    this.inFlight.set(node, p);
    try {
      return await p;
    } finally {
      if (this.inFlight.get(node) === p) this.inFlight.delete(node);
    }
  }

  private async read(node: string, t: Transport): Promise<GuardStatus | undefined> {
    this.lastCheck.set(node, Date.now());
    try {
      const g = await runOperation(t, guardStatusOperation(200));
      if (!g.running && !g.startedAt && !g.journal.length) this.status.delete(node);
      else {
        this.status.set(node, g);
        this.announceAway(node, g);
      }
      this.d.refresh(node);
      return g;
    } catch (e) {
      this.d.log.warn(`${node}: could not read its guard: ${errorMessage(e)}`);
      return this.status.get(node);
    }
  }

  /** The journal entries newer than the last one shown: one summary, then remember the newest. */
  private announceAway(node: string, g: GuardStatus): void {
    const key = `gpuSessions.guardSeen.${node}`;
    const seen = this.d.memento.get<string>(key);
    const fresh = g.journal.filter((e) => seen === undefined || e.t > seen);
    if (!fresh.length) return;
    const newest = fresh.reduce((a, e) => (e.t > a ? e.t : a), fresh[0].t);
    void this.d.memento.update(key, newest);
    const summary = awaySummary(fresh);
    if (summary === 'nothing happened') return;
    if (this.d.announce) this.d.announce(node, summary);
    else void vscode.window.showInformationMessage(`GPU Sessions: while you were away, the guard on ${node}: ${summary}.`);
  }
}
