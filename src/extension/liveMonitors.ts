/**
 * Live monitoring: one NodeMonitor (log-tail channel, health, progress) per probed node with servers,
 * feeding the tree and the status bar, and one NodeGuard over it (server states, failure classes, node
 * conditions) whose transitions become alerts. Monitors of removed nodes are disposed.
 */
import type { Fleet } from '../core/node/fleet';
import { NodeGuard } from '../core/node/guard';
import { RankWatch } from '../core/gateway/rankWatch';
import { NodeLive, NodeMonitor } from '../core/node/monitor';
import type { Alerts } from './alerts';
import { HistoryStore } from '../core/node/history';
import { Deadline, Spend, WatchEconomics, deadlineAt, perMillionPhrase } from '../core/node/spend';
import { ProviderRentals, type RentalTerms, rentalTerms } from '../core/node/rental';
import type { ProbeResult } from '../core/node/probe';
import { EventEmitter } from 'node:events';
import type { Transport } from '../core/ssh/transport';
import type { Logger } from '../core/util/logger';
import { cfg } from './config';
import { Disposables, toDisposable } from './disposable';
import type { ThroughputStatus } from './statusBar';
import { StoppedByYou } from './stoppedByYou';
import { ReleasedByYou } from './releasedByYou';
import { StableFigure } from '../core/util/stableFigure';
import type { NodesTreeProvider } from './tree';
import type { DataSampleFile } from '../core/data/watch';
import { GoneServer, LastSeenServers } from '../core/node/lastSeenServers';
import { isTracebackHeader, shownFailureMessage } from '../core/sglang/exceptionLine';
import type { GuardTransition } from '../core/node/guard';

export class LiveMonitors extends Disposables {
  private readonly monitors = new Map<string, NodeMonitor>();
  private readonly guards = new Map<string, NodeGuard>();
  /** Set after construction (alerts need the commands registered first). */
  alerts: Alerts | undefined;
  private readonly histories = new Map<string, HistoryStore>();
  private readonly economics = new Map<string, { key: string; e: WatchEconomics }>();
  private readonly money = new Map<string, { spend?: Spend; deadline?: Deadline }>();
  private readonly lastRecord = new Map<string, number>();
  private readonly recorded = new EventEmitter();
  /** Servers the extension stopped: their end is not a crash (no alert, a neutral row). */
  readonly stopped = new StoppedByYou();
  /** Gateway workers removed and nodes released by the extension (Release Node): neutral, expected. */
  readonly released = new ReleasedByYou();
  private readonly ranks = new RankWatch();
  /** What each node's provider says of its price and end (read on the node, at most every 10 min). */
  private readonly rentals = new ProviderRentals();
  /** Per node, the servers its probes listed (a crashed one stays listed with its command line). */
  private readonly seen = new Map<string, LastSeenServers>();
  /** node|port → the exception line of a crash whose guard message is only the traceback's header. */
  private readonly exceptions = new Map<string, string>();
  /** Folder of the per-node history (the extension's global storage); null: kept in memory only. */
  historyDir: string | null = null;
  /** The data guard's latest files of a node (set after construction): each sample keeps their shares (the dashboard). */
  dataFor: ((node: string) => DataSampleFile[] | undefined) | undefined;

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
    // The guard judges after every probe. The tree's auto-refresh runs only while the view is visible;
    // alerts must not depend on that: probe each followed node whose last probe is older than the interval.
    const timer = setInterval(() => this.pollGuards(), 5000);
    this.register(toDisposable(() => clearInterval(timer)));
  }

  /**
   * Multi-node servers over the whole fleet: a rank ≥ 1 that goes is an alert on the rank-0 server's node (its
   * guard), judged from every node's latest probe; a node that does not answer now is unknown, not lost.
   */
  private judgeRanks(): void {
    const fleet: Array<{ node: string; servers: NonNullable<ReturnType<Fleet['status']>['probe']>['servers'] }> = [];
    const unknown = new Set<string>();
    for (const n of this.fleet.nodes()) {
      const st = this.fleet.status(n.name);
      if (st.state === 'ok' && st.probe) fleet.push({ node: n.name, servers: st.probe.servers });
      else unknown.add(n.name);
    }
    const byNode = this.ranks.values(fleet, unknown);
    for (const { node } of fleet) this.guards.get(node)?.setRanks(byNode.get(node) ?? []);
  }

  private pollGuards(): void {
    const secs = cfg<number>('alerts.pollIntervalSeconds', 20);
    if (!(secs > 0)) return;
    for (const name of this.monitors.keys()) {
      const st = this.fleet.status(name);
      if (st.state === 'probing' || !this.fleet.node(name)) continue;
      if (Date.now() - (st.updatedAt ?? 0) < secs * 1000 - 1000) continue;
      void this.fleet.refresh(name).catch(() => undefined);
    }
  }

  /** The connections were reset (settings changed): the monitors' channels are gone, follow again over new ones. */
  refollow(): void {
    const names = new Set([...this.monitors.keys(), ...this.fleet.nodes().map((n) => n.name)]);
    this.monitors.forEach((m) => m.dispose());
    this.monitors.clear();
    // (the guards keep their states and attach to the new monitors: no alert is repeated)
    // Every node with a probe is followed again, not only those still monitored: the node list's reload just
    // before can drop a monitor, and with the view hidden no probe would bring it back (no live figures, no alerts).
    for (const n of names) if (this.fleet.node(n)) this.onFleetChange(n);
  }

  live(node: string): NodeLive | undefined {
    const l = this.monitors.get(node)?.live();
    const g = this.guards.get(node);
    if (!l || !g) return l;
    const sample = g.sample();
    const all = g.problems();
    const stoppedAt = (port: number | undefined) => (port === undefined ? undefined : this.stopped.at(node, port));
    // A server the user stopped: gone as a problem (crashed), or gone gracefully (SIGTERM drain: stopping, stopped).
    const ended = sample.servers.filter((v) => v.state === 'stopping' || v.state === 'stopped').map((v) => v.port);
    const mine = [...all.map((p) => p.port), ...ended].filter((port): port is number => stoppedAt(port) !== undefined);
    const stoppedByYou = [...new Set(mine)].map((port) => ({ port, at: stoppedAt(port)! }));
    // a worker Release Node removed, or the gateway it left with none (not ready: its review said so): neutral rows
    const byYou = (p: { key: string; to: string }) =>
      this.released.removedAt(node, p.key) ?? (p.to === 'not-ready' ? this.released.emptiedAt(node, p.key)?.at : undefined);
    // never the literal "Traceback (most recent call last):": the exception line
    const shown = (m: string, port: number | undefined) => shownFailureMessage(m, this.exceptions.get(`${node}|${port}`));
    return {
      ...l,
      servers: l.servers.map((s) => {
        const v = sample.servers.find((x) => x.port === s.port);
        return v ? { ...s, state: v.state, stateReason: shown(v.reason, s.port), stateClass: v.class } : s;
      }),
      problems: all
        .filter((p) => stoppedAt(p.port) === undefined && byYou(p) === undefined)
        .map((p) => ({ ...p, message: shown(p.message, p.port) })),
      stoppedByYou,
      removedByYou: this.removedByYou(node, all, byYou),
      ...this.moneyOf(node),
    };
  }

  /**
   * The neutral rows of what Release Node / Take It Out of Rotation removed from gateways on `node`: the guard's
   * removals and its emptied gateway, and every marked removal the gateway no longer lists that the guard could not
   * report (it never saw the worker listed: a gateway started just before the release).
   */
  private removedByYou(
    node: string,
    problems: ReadonlyArray<{ key: string; to: string; message: string }>,
    byYou: (p: { key: string; to: string }) => number | undefined,
  ): NonNullable<NodeLive['removedByYou']> {
    const out = problems.flatMap((p) => {
      const at = byYou(p);
      return at === undefined ? [] : [{ key: p.key, message: p.message, at }];
    });
    const gateways = this.fleet.status(node).probe?.gateways ?? [];
    const listed = (port: number, url: string) => gateways.some((g) => g.port === port && g.workers.some((w) => w.url === url));
    for (const r of this.released.removals(node))
      if (!out.some((o) => o.key === r.key) && !listed(r.port, r.url))
        out.push({ key: r.key, message: `worker ${r.url} was removed from gateway :${r.port}`, at: r.at });
    return out;
  }

  /** Servers of the node that crashed and are gone from its probe: listed under Servers with their last command line. */
  crashedServers(node: string): GoneServer[] {
    const seen = this.seen.get(node);
    if (!seen) return [];
    return seen.crashed(this.fleet.status(node).probe?.servers ?? [], this.live(node)?.problems ?? []);
  }

  /** The server last seen on a port of the node, alive or crashed (Restart Server's argument). */
  lastSeenServer(node: string, port: number): GoneServer['server'] | undefined {
    return this.seen.get(node)?.get(port);
  }

  /** A crash whose message is only the traceback's header: its exception line, read from the log, is shown instead. */
  private readException(tr: GuardTransition): void {
    if (tr.to !== 'crashed' || tr.port === undefined || !tr.logFile || !isTracebackHeader(tr.message)) return;
    const key = `${tr.node}|${tr.port}`;
    void this.alerts?.readExceptionLine(tr.node, tr.logFile).then((exc) => {
      if (!exc) return;
      this.exceptions.set(key, exc);
      this.status.update(this.lives());
      this.tree.refreshNode(tr.node);
    });
  }

  guard(node: string): NodeGuard | undefined {
    return this.guards.get(node);
  }

  /** The node's history: samples and transitions of the last 24 h, bounded (survives a window reload). */
  historyOf(node: string): HistoryStore {
    let h = this.histories.get(node);
    if (!h) {
      h = new HistoryStore(this.historyDir ?? '/nonexistent-gpu-sessions-history', node, { maxBytes: 4 * 1024 * 1024, maxEntries: 20_000 });
      this.histories.set(node, h);
    }
    return h;
  }

  onDidRecord(fn: (node: string) => void): () => void {
    this.recorded.on('record', fn);
    return () => this.recorded.off('record', fn);
  }

  /** Spend and deadline of a node (settings over the provider's own price and end; rentalOf). */
  moneyOf(node: string): { spend?: Spend; deadline?: Deadline } {
    return this.money.get(node) ?? {};
  }

  /** One line for the dashboard and tooltips: spend, $/M tokens, deadline. */
  summary(node: string): string {
    const m = this.moneyOf(node);
    const parts: string[] = [];
    // one money figure: the window's when known (stable at a constant rate), shown rounded and moved only by a real change
    const win = m.spend?.perMillionTokensWindow ?? null;
    const pm = m.spend ? this.perMtokShown(node, win ?? m.spend.perMillionTokens) : null;
    const pmText = m.spend
      ? perMillionPhrase(
          win !== null
            ? { perMillionTokens: null, perMillionTokensWindow: pm, windowS: m.spend.windowS }
            : { perMillionTokens: pm, perMillionTokensNow: m.spend.perMillionTokensNow },
        )
      : null;
    if (m.spend)
      parts.push(
        `$${m.spend.total.toFixed(2)} since ${m.spend.since.slice(0, 16).replace('T', ' ')} at $${m.spend.perHour}/h` +
          (m.spend.priceSource ? ` from ${m.spend.priceSource}` : '') +
          (pmText ? ` · ${pmText}` : ''),
      );
    if (m.deadline) parts.push(m.deadline.message + (m.deadline.source ? ` (end from ${m.deadline.source})` : ''));
    const p = this.live(node)?.problems ?? [];
    if (p.length) parts.push(`not OK: ${p.map((x) => `${x.port !== undefined ? `:${x.port} ` : ''}${x.to}`).join(', ')}`);
    return parts.join('\n');
  }

  private readonly perMtok = new Map<string, StableFigure>();

  /** $/M output tokens as shown: rounded, and moved only by a real change (core/util/stableFigure.ts). */
  private perMtokShown(node: string, v: number | null): number | null {
    let f = this.perMtok.get(node);
    if (!f) this.perMtok.set(node, (f = new StableFigure()));
    return f.next(v);
  }

  /**
   * The node's price and rental deadline: a per-node setting (gpuSessions.nodePricePerHour, rentalDeadlines) over
   * what the node's provider says (core/node/rental.ts), that over the default price (gpuSessions.pricePerHour).
   */
  private rentalOf(node: string): { terms: RentalTerms; leadMin: number } {
    const prices = cfg<Record<string, number>>('nodePricePerHour', {}) ?? {};
    const ok = (x: unknown): x is number => typeof x === 'number' && x >= 0 && Number.isFinite(x);
    const dflt = cfg<number | null>('pricePerHour', null);
    const deadlines = cfg<Record<string, string>>('rentalDeadlines', {}) ?? {};
    const d = deadlines[node] ? new Date(deadlines[node]) : null;
    const terms = rentalTerms(
      {
        price: ok(prices[node]) ? { value: prices[node], source: 'settings' } : null,
        deadline: d && !Number.isNaN(d.getTime()) ? { at: d, source: 'settings' } : null,
        defaultPrice: ok(dflt) ? { value: dflt, source: 'settings' } : null,
      },
      this.rentals.get(node),
    );
    return { terms, leadMin: cfg<number>('deadlineWarningMinutes', 30) ?? 30 };
  }

  /**
   * The node's rental deadline now (for the countdown row): seconds left at `now`, not at the last sample, and
   * the job's ETA from the live guard (as `watch --deadline` computes it). undefined when no deadline is known.
   */
  deadlineOf(node: string, now = Date.now()): { deadline: Deadline; leadS: number } | undefined {
    const { terms, leadMin } = this.rentalOf(node);
    if (!terms.deadline) return undefined;
    const job = this.guards.get(node)?.sample().job;
    return {
      deadline: deadlineAt(terms.deadline, now, job?.state === 'running' ? job.etaS : null, terms.deadlineSource),
      leadS: leadMin * 60,
    };
  }

  private economicsFor(node: string): WatchEconomics | null {
    const { terms, leadMin } = this.rentalOf(node);
    if (terms.pricePerHour === null && !terms.deadline) return null;
    const key = `${terms.pricePerHour}|${terms.priceSource}|${terms.deadline?.toISOString()}|${terms.deadlineSource}|${leadMin}`;
    const cur = this.economics.get(node);
    if (cur && cur.key === key) return cur.e;
    const e = new WatchEconomics({ ...terms, leadMs: leadMin * 60_000 });
    this.economics.set(node, { key, e });
    return e;
  }

  /** Reads the node's provider price and end when due (at most every 10 min), then shows them. */
  private readRental(name: string, probe: ProbeResult | undefined): void {
    const t = this.transportFor(name);
    if (!t || !probe || !this.rentals.due(name)) return;
    const before = JSON.stringify(this.rentals.get(name));
    void this.rentals.refresh(name, t, probe.provider).then((r) => {
      if (JSON.stringify(r) === before) return;
      this.record(name, true);
      this.status.update(this.lives());
      this.tree.refreshNode(name);
    });
  }

  /** A sample into the node's history (at most every 5 s), with spend and deadline. */
  private record(name: string, force = false): void {
    const g = this.guards.get(name);
    if (!g) return;
    const now = Date.now();
    if (!force && now - (this.lastRecord.get(name) ?? 0) < 5000) return;
    this.lastRecord.set(name, now);
    const s = g.sample();
    const e = this.economicsFor(name);
    const extra = e ? e.annotate(s) : {};
    this.money.set(name, extra);
    const data = this.dataFor?.(name);
    this.historyOf(name).addSample({ ...s, ...extra, ...(data?.length ? { data } : {}) });
    for (const tr of e?.transitions(s, extra) ?? []) {
      this.historyOf(name).addTransition(tr);
      this.alerts?.notify(tr);
    }
    this.recorded.emit('record', name);
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
          this.seen.delete(n);
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
        // Only the rows that show live figures: re-rendering the node would drop its rows' handles.
        this.tree.refreshLive(name);
        this.record(name);
      });
      this.monitors.set(name, m);
      const kept = this.guards.get(name);
      if (kept) kept.attach(m);
    }
    if (!this.guards.has(name)) {
      const g = new NodeGuard(name, m);
      g.onTransition((tr) => {
        this.log.info(
          `${tr.node}: ${tr.port !== undefined ? `:${tr.port} ` : ''}${tr.from} → ${tr.to}${tr.class ? ` [${tr.class}]` : ''} ${tr.message}`,
        );
        const removedByYou =
          tr.subject === 'gateway' && !!tr.worker && this.released.removedAt(name, `gateway:${tr.port}:${tr.worker}`) !== undefined;
        const mine =
          removedByYou || (tr.port !== undefined && tr.subject === 'server' && this.stopped.judge(name, tr.port, tr.from, tr.to));
        if (tr.port !== undefined && tr.subject === 'server' && tr.to !== 'crashed') this.exceptions.delete(`${name}|${tr.port}`);
        if (!mine) this.readException(tr);
        // what the release's review predicted: a lost rank, a gateway it left with no worker (503)
        const expected =
          tr.to === 'rank-lost'
            ? this.released.expectedRankLoss(tr.message)
            : tr.subject === 'gateway' && !tr.worker && tr.to === 'not-ready' && tr.port !== undefined
              ? this.released.expectedNotReady(name, tr.port)
              : undefined;
        if (!mine) this.alerts?.notify(tr, expected ? `expected: you released ${expected}` : undefined);
        else this.alerts?.clear(tr, false); // stopped by you: not an alert (and an earlier one on it is withdrawn)
        // A deliberate stop is drawn neutral on the dashboard, not as a red "crashed".
        this.historyOf(name).addTransition(mine ? { ...tr, byYou: true } : tr);
        this.status.update(this.lives());
        this.tree.refreshNode(name);
      });
      this.guards.set(name, g);
    }
    const probe = st.probe;
    this.readRental(name, probe);
    // A new process on a port the user stopped ends "stopped by you" (a restarted server's later death alerts).
    for (const sv of probe?.servers ?? []) this.stopped.observe(name, sv.port, sv.pid);
    let seen = this.seen.get(name);
    if (!seen) this.seen.set(name, (seen = new LastSeenServers()));
    seen.observe(probe.servers);
    const mon = m;
    mon
      .update(probe)
      .then(() => {
        // The fleet's probe does not read progress.json; the monitor does (its own exec): the guard judges the job
        // (done at 100 %, its ETA against the rental end) from that reading, as the watch loop does from its probe's.
        const progress = probe.progress ?? mon.live().progress ?? undefined;
        this.guards.get(name)?.update(progress ? { ...probe, progress } : probe);
        this.judgeRanks();
        this.record(name, true);
      })
      .catch((e) => this.log.warn(`Monitoring ${name}: ${e instanceof Error ? e.message : String(e)}`));
  }
}
