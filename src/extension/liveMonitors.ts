/**
 * Live monitoring: one NodeMonitor (log-tail channel, health, progress) per probed node with servers,
 * feeding the tree and the status bar. Monitors of removed nodes are disposed.
 */
import type { Fleet } from '../core/node/fleet';
import { NodeLive, NodeMonitor } from '../core/node/monitor';
import type { Transport } from '../core/ssh/transport';
import type { Logger } from '../core/util/logger';
import { cfg } from './config';
import { Disposables, toDisposable } from './disposable';
import type { ThroughputStatus } from './statusBar';
import type { NodesTreeProvider } from './tree';

export class LiveMonitors extends Disposables {
  private readonly monitors = new Map<string, NodeMonitor>();

  constructor(
    private readonly fleet: Fleet,
    private readonly transportFor: (nodeName: string) => Transport | undefined,
    private readonly tree: NodesTreeProvider,
    private readonly status: ThroughputStatus,
    private readonly log: Logger,
  ) {
    super();
    this.register(toDisposable(() => this.monitors.forEach((m) => m.dispose())));
    this.register(toDisposable(fleet.onDidChange((name) => this.onFleetChange(name))));
  }

  /** The connections were reset (settings changed): the monitors' channels are gone, follow again over new ones. */
  refollow(): void {
    const names = [...this.monitors.keys()];
    this.monitors.forEach((m) => m.dispose());
    this.monitors.clear();
    for (const n of names) if (this.fleet.node(n)) this.onFleetChange(n);
  }

  live(node: string): NodeLive | undefined {
    return this.monitors.get(node)?.live();
  }

  private lives(): NodeLive[] {
    return [...this.monitors.values()].map((m) => m.live());
  }

  private onFleetChange(name: string | undefined): void {
    if (!name) {
      for (const [n, m] of this.monitors)
        if (!this.fleet.node(n)) {
          m.dispose();
          this.monitors.delete(n);
        }
      this.status.update(this.lives());
      return;
    }
    const st = this.fleet.status(name);
    if (st.state !== 'ok' || !st.probe || !cfg<boolean>('followServerLogs', true)) return;
    let m = this.monitors.get(name);
    if (!m) {
      const t = this.transportFor(name);
      if (!t) return;
      m = new NodeMonitor(name, t);
      m.onDidChange(() => {
        this.status.update(this.lives());
        // Only the rows that show live figures: re-rendering the node would drop its rows' handles.
        this.tree.refreshLive(name);
      });
      this.monitors.set(name, m);
    }
    m.update(st.probe).catch((e) => this.log.warn(`Monitoring ${name}: ${e instanceof Error ? e.message : String(e)}`));
  }
}
