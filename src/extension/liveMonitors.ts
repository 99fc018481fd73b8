/**
 * Live monitoring: one NodeMonitor (log-tail channel, health, progress) per probed node with servers,
 * feeding the tree and the status bar, and one NodeGuard over it (server states, failure classes, node
 * conditions) whose transitions become alerts. Monitors of removed nodes are disposed.
 */
import type { Fleet } from '../core/node/fleet';
import { NodeGuard } from '../core/node/guard';
import { NodeLive, NodeMonitor } from '../core/node/monitor';
import type { Alerts } from './alerts';
import type { Transport } from '../core/ssh/transport';
import type { Logger } from '../core/util/logger';
import { cfg } from './config';
import { Disposables, toDisposable } from './disposable';
import type { ThroughputStatus } from './statusBar';
import type { NodesTreeProvider } from './tree';

export class LiveMonitors extends Disposables {
  private readonly monitors = new Map<string, NodeMonitor>();
  private readonly guards = new Map<string, NodeGuard>();
  /** Set after construction (alerts need the commands registered first). */
  alerts: Alerts | undefined;

  constructor(
    private readonly fleet: Fleet,
    private readonly transportFor: (nodeName: string) => Transport | undefined,
    private readonly tree: NodesTreeProvider,
    private readonly status: ThroughputStatus,
    private readonly log: Logger,
  ) {
    super();
    this.register(toDisposable(() => this.monitors.forEach((m) => m.dispose())));
    this.register(toDisposable(() => this.guards.forEach((g) => g.dispose())));
    this.register(toDisposable(fleet.onDidChange((name) => this.onFleetChange(name))));
  }

  live(node: string): NodeLive | undefined {
    const l = this.monitors.get(node)?.live();
    const g = this.guards.get(node);
    if (!l || !g) return l;
    const sample = g.sample();
    return {
      ...l,
      servers: l.servers.map((s) => {
        const v = sample.servers.find((x) => x.port === s.port);
        return v ? { ...s, state: v.state, stateReason: v.reason, stateClass: v.class } : s;
      }),
      problems: g.problems(),
    };
  }

  guard(node: string): NodeGuard | undefined {
    return this.guards.get(node);
  }

  private lives(): NodeLive[] {
    return [...this.monitors.keys()].map((n) => this.live(n)!);
  }

  private onFleetChange(name: string | undefined): void {
    if (!name) {
      for (const [n, m] of this.monitors)
        if (!this.fleet.node(n)) {
          this.guards.get(n)?.dispose();
          this.guards.delete(n);
          m.dispose();
          this.monitors.delete(n);
        }
      this.status.update(this.lives());
      return;
    }
    const st = this.fleet.status(name);
    if (
      st.state === 'error' &&
      st.error &&
      (st.error.code === 'unreachable' || st.error.code === 'timeout' || st.error.code === 'auth-failed')
    )
      this.guards.get(name)?.setUnreachable(st.error.message);
    if (st.state !== 'ok' || !st.probe || !cfg<boolean>('followServerLogs', true)) return;
    let m = this.monitors.get(name);
    if (!m) {
      const t = this.transportFor(name);
      if (!t) return;
      m = new NodeMonitor(name, t);
      m.onDidChange(() => {
        this.status.update(this.lives());
        this.tree.refreshNode(name);
      });
      this.monitors.set(name, m);
      const g = new NodeGuard(name, m);
      g.onTransition((tr) => {
        this.log.info(
          `${tr.node}: ${tr.port !== undefined ? `:${tr.port} ` : ''}${tr.from} → ${tr.to}${tr.class ? ` [${tr.class}]` : ''} ${tr.message}`,
        );
        this.alerts?.notify(tr);
        this.status.update(this.lives());
        this.tree.refreshNode(name);
      });
      this.guards.set(name, g);
    }
    const probe = st.probe;
    const mon = m;
    mon
      .update(probe)
      .then(() => this.guards.get(name)?.update(probe))
      .catch((e) => this.log.warn(`Monitoring ${name}: ${e instanceof Error ? e.message : String(e)}`));
  }
}
