/**
 * GPU Sessions — the thin VS Code layer over src/core. activate() only wires the long-lived objects
 * together; every command lives in commands/, the tree in tree/. Everything is disposed in reverse.
 */
import * as vscode from 'vscode';
import { Fleet } from '../core/node/fleet';
import type { NodeSpec } from '../core/ssh/config';
import { AutoRefresh } from './autoRefresh';
import { registerAllCommands } from './commands';
import { Connections } from './connections';
import { DemoHandle, DemoNode } from './demo';
import { DisposableStore, toDisposable } from './disposable';
import { KeepSalvaged } from './keepSalvaged';
import { announceVanished } from './commands/keepSalvaged';
import { Alerts } from './alerts';
import { Dashboards } from './dashboard';
import { LiveMonitors } from './liveMonitors';
import { DataGuards } from './dataGuards';
import { RecentLines, channelLogger } from './log';
import { LogViews } from './logView';
import { NodeList, fleetOptions } from './nodeList';
import { NodeGuards } from './nodeGuards';
import { NodeResolver } from './resolve';
import { SalvageVerdicts } from './salvageVerdicts';
import { VerdictFreshness } from './verdictFreshness';
import { SCRIPT_SCHEME, ScriptDocuments } from './scriptDocuments';
import type { Services } from './services';
import { ThroughputStatus } from './statusBar';
import { NodesTreeProvider, TreeNode } from './tree';

export interface GpuSessionsApi {
  fleet: Fleet;
  alerts: Alerts;
  live: LiveMonitors;
  dashboards: Dashboards;
  tree: NodesTreeProvider;
  reloadNodes(): void;
  demo(): DemoHandle | undefined;
  /** The last lines written to the GPU Sessions output channel (already redacted), for tests. */
  logText(): string;
}

export function activate(context: vscode.ExtensionContext): GpuSessionsApi {
  const store = new DisposableStore();
  context.subscriptions.push(store);
  const channel = store.add(vscode.window.createOutputChannel('GPU Sessions', { log: true }));
  const recentLog = new RecentLines();
  const log = channelLogger(channel, recentLog);
  const demo = store.add(new DemoNode());
  const connections = store.add(
    new Connections({ secrets: context.secrets, log, demo, resolveHop: (spec): NodeSpec | undefined => nodes.resolveHop(spec) }),
  );
  const fleet = new Fleet(connections.routing, fleetOptions());
  store.add(toDisposable(() => fleet.dispose()));
  const nodes = new NodeList(fleet, demo, log, () => channel.show());
  nodes.reload();

  const verdicts = new SalvageVerdicts();
  const tree = store.add(new NodesTreeProvider(fleet, verdicts));
  const view = store.add(vscode.window.createTreeView<TreeNode>('gpuSessions.nodes', { treeDataProvider: tree, showCollapseAll: true }));
  const transportFor = (n: NodeSpec | string) => connections.transport(typeof n === 'string' ? fleet.node(n)! : n);
  const status = store.add(new ThroughputStatus());
  const logViews = store.add(new LogViews());
  const live = store.add(new LiveMonitors(fleet, (n) => (fleet.node(n) ? transportFor(n) : undefined), tree, status, log));
  feedTree(tree, fleet, nodes, live);
  live.historyDir = vscode.Uri.joinPath(context.globalStorageUri, 'history').fsPath;
  const dashboards = store.add(dashboardsOver(context.extensionUri, fleet, live));
  const autoRefresh = store.add(new AutoRefresh(view, fleet));
  // settings changed: new connections, the node list read again, the monitors following over them
  store.add(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (!e.affectsConfiguration('gpuSessions')) return;
      connections.reset();
      nodes.reload();
      live.refollow();
      autoRefresh.schedule();
    }),
  );

  store.add(new VerdictFreshness(fleet, verdicts, (n) => tree.refreshNode(n), log));
  const keepSalvaged = store.add(
    new KeepSalvaged({ verdicts, refresh: (n) => tree.refreshLive(n), log, onVanished: (n, m) => announceVanished(n, m.dest) }),
  );
  const guards = store.add(
    new NodeGuards({
      fleet,
      transportFor: (n) => (fleet.node(n) ? transportFor(n) : undefined),
      memento: context.globalState,
      refresh: (n) => tree.refreshLive(n),
      log,
    }),
  );
  tree.guardFor = (n) => guards.statusOf(n);
  const resolver = new NodeResolver(fleet);
  const services: Services = {
    context,
    log,
    showLog: () => channel.show(),
    fleet,
    connections,
    nodes,
    demo,
    resolver,
    tree,
    logViews,
    verdicts,
    live,
    dashboards,
    keepSalvaged,
    guards,
    transportFor,
  };
  const docs = store.add(new ScriptDocuments());
  store.add(vscode.workspace.registerTextDocumentContentProvider(SCRIPT_SCHEME, docs));
  for (const d of registerAllCommands(services, docs)) store.add(d);

  log.info(`GPU Sessions activated: ${fleet.nodes().length} node(s).`);
  const alerts = alertsAndData(store, { fleet, transportFor, docs, live, tree });
  return {
    fleet,
    tree,
    alerts,
    live,
    dashboards,
    reloadNodes: () => nodes.reload(),
    demo: () => demo.current,
    logText: () => recentLog.text(),
  };
}

/** The Node Dashboard's panels, fed by the live monitors' history and the fleet's reachability. */
function dashboardsOver(extensionUri: vscode.Uri, fleet: Fleet, live: LiveMonitors): Dashboards {
  return new Dashboards(extensionUri, {
    history: (n) => live.historyOf(n).all(),
    summary: (n) => live.summary(n),
    onDidRecord: (fn) => live.onDidRecord(fn),
    reachable: (n) => {
      const st = fleet.status(n);
      return st.state === 'error' ? { ok: false, reason: st.error?.message } : { ok: true };
    },
    retry: (n) => fleet.refresh(n),
  });
}

/** What the tree's rows read from the live monitors and the node list. */
function feedTree(tree: NodesTreeProvider, fleet: Fleet, nodes: NodeList, live: LiveMonitors): void {
  tree.liveFor = (n) => live.live(n);
  tree.deadlineFor = (n) => live.deadlineOf(n);
  tree.crashedFor = (n) => live.crashedServers(n);
  tree.groupsFor = (ns) => nodes.group(ns, (n) => fleet.status(n.name).probe?.gpuState === 'no-nvidia-smi');
}

/** The alerts (notifications) and the data-quality guards whose transitions they announce, wired to the tree. */
function alertsAndData(
  store: DisposableStore,
  o: { fleet: Fleet; transportFor: Services['transportFor']; docs: ScriptDocuments; live: LiveMonitors; tree: NodesTreeProvider },
): Alerts {
  const { fleet, live, tree } = o;
  const transportOf = (n: string) => (fleet.node(n) ? o.transportFor(n) : undefined);
  const alerts = store.add(
    new Alerts(
      transportOf,
      o.docs,
      // the probe's, else as last seen (a crashed server, restarted with the command line it ran with)
      (n, port) => fleet.status(n).probe?.servers.find((x) => x.port === port) ?? live.lastSeenServer(n, port),
    ),
  );
  live.alerts = alerts;
  const data = store.add(
    new DataGuards({ fleet, transportFor: transportOf, onTransition: (t) => alerts.notify(t), refresh: (n) => tree.refreshLive(n) }),
  );
  tree.dataFor = (n) => data.filesOf(n);
  live.dataFor = (n) => data.filesOf(n);
  alerts.dataSample = (n, p) => data.sampleText(n, p);
  return alerts;
}

export function deactivate(): void {
  /* everything is disposed through context.subscriptions */
}
