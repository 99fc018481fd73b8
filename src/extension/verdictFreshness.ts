/**
 * Keeps what the tree says about salvage true to the moment: a verdict is stamped with the
 * node's state at the first probe after it and dropped as soon as a probe differs (servers, boot, files); the
 * "Node vanished" row of Keep Node Salvaged goes when the node answers again.
 */
import type * as vscode from 'vscode';
import type { Fleet } from '../core/node/fleet';
import { staleReason, verdictStamp } from '../core/salvage/report/verdictStamp';
import type { Logger } from '../core/util/logger';
import type { SalvageVerdicts } from './salvageVerdicts';

export class VerdictFreshness implements vscode.Disposable {
  private readonly off: () => void;

  constructor(
    private readonly fleet: Fleet,
    private readonly verdicts: SalvageVerdicts,
    private readonly refresh: (node: string) => void,
    private readonly log: Logger,
  ) {
    this.off = fleet.onDidChange((name) => (name ? this.check(name) : this.listChanged()));
  }

  /** A node that left the list (the demo stopped, a Host removed) takes its verdict with it: it may come back changed. */
  private listChanged(): void {
    for (const n of this.verdicts.nodes()) if (!this.fleet.node(n)) this.verdicts.drop(n);
    for (const n of this.fleet.nodes()) this.check(n.name);
  }

  check(node: string): void {
    const st = this.fleet.status(node);
    if (st.state !== 'ok' || !st.probe) return;
    const p = st.probe;
    if (this.verdicts.keep(node)?.phase === 'vanished') {
      this.verdicts.setKeep(node, undefined);
      this.log.info(`${node} answers again: the "vanished" row is cleared (its last report stays in its folder).`);
      this.refresh(node);
    }
    const v = this.verdicts.get(node);
    if (!v || Date.parse(p.probedAt) < v.at) return;
    const now = verdictStamp(p);
    if (!v.stamp) {
      v.stamp = now;
      return;
    }
    const why = staleReason(v.stamp, now);
    if (!why) return;
    this.log.info(
      `${node}: the salvage verdict of ${new Date(v.at).toLocaleTimeString()} no longer holds (${why}); it is no longer shown.`,
    );
    this.verdicts.drop(node);
  }

  dispose(): void {
    this.off();
  }
}
