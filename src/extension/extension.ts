/**
 * GPU Sessions — the thin VS Code layer over src/core. Every registration goes into
 * context.subscriptions; long-lived objects dispose their timers and channels.
 */
import { existsSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Fleet } from '../core/node/fleet';
import { KnownHostsStore } from '../core/ssh/knownHosts';
import type { Logger } from '../core/util/logger';
import { NodeListing, listNodes, resolveNode } from '../core/ssh/nodes';
import { ConnectionPool, LOCAL_NODE_NAME } from '../core/ssh/pool';
import { defaultKnownHostsFiles } from '../core/ssh/knownHostsFiles';
import type { NodeSpec } from '../core/ssh/config';
import type { HostKeyPrompt } from '../core/ssh/transport';
import { NodeMonitor } from '../core/node/monitor';
import { registerLaunchCommands } from './launchCommands';
import { LogViews } from './logView';
import { salvageNodeCommand } from './salvageCommand';
import { ThroughputStatus } from './statusBar';
import { NodesTreeProvider, TreeNode } from './tree';

interface DemoHandle {
  node: NodeSpec;
  knownHostsFile: string;
  stop(): Promise<void>;
}

export interface GpuSessionsApi {
  fleet: Fleet;
  tree: NodesTreeProvider;
  reloadNodes(): void;
  demo(): DemoHandle | undefined;
}

function cfg<T>(key: string, def: T): T {
  return vscode.workspace.getConfiguration('gpuSessions').get<T>(key, def);
}

function expandHome(p: string): string {
  return p.startsWith('~/') ? path.join(os.homedir(), p.slice(2)) : p;
}

export function activate(context: vscode.ExtensionContext): GpuSessionsApi {
  const channel = vscode.window.createOutputChannel('GPU Sessions', { log: true });
  context.subscriptions.push(channel);
  const log: Logger = {
    trace: (m) => channel.trace(m),
    info: (m) => channel.info(m),
    warn: (m) => channel.warn(m),
    error: (m) => channel.error(m),
  };
  let demo: DemoHandle | undefined;
  const knownHostsFor = (node?: NodeSpec) => {
    const custom = cfg<string>('knownHostsFile', '');
    if (custom) return [expandHome(custom)];
    if (demo && node?.name === demo.node.name) return [demo.knownHostsFile];
    return defaultKnownHostsFiles(node);
  };
  // Filled by reloadNodes() below (once at activation, then on settings changes).
  let listing: NodeListing | undefined;

  const secretKey = (file: string) => `gpuSessions.passphrase:${file}`;
  const pools = new Map<string, ConnectionPool>();
  const poolFor = (files: string[]) => {
    const k = files.join('\n');
    let p = pools.get(k);
    if (!p) {
      p = new ConnectionPool({
        knownHosts: new KnownHostsStore(files),
        resolveHop: (spec) => (listing ? resolveNode(spec, listing) : undefined),
        connectTimeoutMs: cfg<number>('connectTimeoutSeconds', 15) * 1000,
        log,
        confirmHostKey: async (pr: HostKeyPrompt) => {
          const where = pr.port === 22 ? pr.host : `[${pr.host}]:${pr.port}`;
          const accept = 'Accept and Connect';
          const detail = `The authenticity of host ${where} can't be established.\n\n${pr.keyType} key fingerprint:\n${pr.fingerprint}\n\nCompare it with the fingerprint your provider shows. Accepting adds it to ${files[0]}.${pr.otherKnown.length ? `\n\nOther keys known for this host:\n${pr.otherKnown.join('\n')}` : ''}`;
          const choice = await vscode.window.showWarningMessage(
            `GPU Sessions: unknown host key for ${where}`,
            { modal: true, detail },
            accept,
          );
          return choice === accept;
        },
        askPassphrase: async (file) => {
          const stored = await context.secrets.get(secretKey(file));
          if (stored) return stored;
          return vscode.window.showInputBox({
            title: 'GPU Sessions',
            prompt: `Passphrase for ${file}`,
            password: true,
            ignoreFocusOut: true,
          });
        },
        passphraseAccepted: (file, pass) => void context.secrets.store(secretKey(file), pass),
      });
      pools.set(k, p);
    }
    return p;
  };
  context.subscriptions.push({ dispose: () => pools.forEach((p) => p.dispose()) });

  // The fleet routes each node to the pool for its known_hosts files.
  const routingPool = {
    get: (node: NodeSpec) => poolFor(knownHostsFor(node)).get(node),
    forget: (node: NodeSpec) => poolFor(knownHostsFor(node)).forget(node),
  } as unknown as ConnectionPool;
  const fleet = new Fleet(routingPool, { maxDepth: cfg('artifacts.maxDepth', 6), maxArtifacts: cfg('artifacts.maxCount', 2000) });
  context.subscriptions.push({ dispose: () => fleet.dispose() });

  const reloadNodes = () => {
    const file = cfg<string>('sshConfigFile', '');
    const current = listNodes({ sshConfigFile: file ? expandHome(file) : undefined, settingsNodes: cfg<unknown[]>('nodes', []) });
    listing = current;
    for (const d of current.diagnostics) {
      log.warn(`${d.file}:${d.line}: ${d.message}`);
    }
    // A missing ~/.ssh/config is normal (nodes may come from settings): log it, do not nag. A missing
    // file the user configured, or a malformed line, is worth a notification.
    const notable = current.diagnostics.filter((d) => !(d.line === 0 && !file && !existsSync(d.file.replace(/^~(?=\/)/, os.homedir()))));
    if (notable.length) {
      const d = notable[0];
      void vscode.window
        .showWarningMessage(
          `GPU Sessions: ${d.file}${d.line ? `:${d.line}` : ''}: ${d.message}${notable.length > 1 ? ` (and ${notable.length - 1} more; see the log)` : ''}`,
          'Show Log',
        )
        .then((c) => c && channel.show());
    }
    const nodes: NodeSpec[] = [];
    if (cfg<boolean>('showLocalMachine', false))
      nodes.push({ name: LOCAL_NODE_NAME, host: 'localhost', port: 0, identityFiles: [], source: 'local' });
    if (demo) nodes.push(demo.node);
    const fromConfig = cfg<boolean>('includeSshConfigHosts', true) ? current.nodes : current.nodes.filter((n) => n.source !== 'ssh-config');
    nodes.push(...fromConfig.filter((n) => !demo || n.name !== demo.node.name));
    fleet.setNodes(nodes);
    fleet.setOptions({ maxDepth: cfg('artifacts.maxDepth', 6), maxArtifacts: cfg('artifacts.maxCount', 2000) });
  };
  reloadNodes();

  const tree = new NodesTreeProvider(fleet);
  const view = vscode.window.createTreeView<TreeNode>('gpuSessions.nodes', { treeDataProvider: tree, showCollapseAll: true });
  context.subscriptions.push(tree, view);

  // Live monitoring: one log-tail channel per node with servers, health, progress → tree + status bar.
  const monitors = new Map<string, NodeMonitor>();
  const status = new ThroughputStatus();
  const logViews = new LogViews();
  context.subscriptions.push(status, logViews, { dispose: () => monitors.forEach((m) => m.dispose()) });
  tree.liveFor = (n) => monitors.get(n)?.live();
  const refreshLive = (name: string) => {
    status.update([...monitors.values()].map((m) => m.live()));
    tree.refreshLive(name);
  };
  context.subscriptions.push({
    dispose: fleet.onDidChange((name) => {
      if (!name) {
        for (const [n, m] of monitors)
          if (!fleet.node(n)) {
            m.dispose();
            monitors.delete(n);
          }
        status.update([...monitors.values()].map((m) => m.live()));
        return;
      }
      monitorNode(name);
    }),
  });
  function monitorNode(name: string): void {
    const st = fleet.status(name);
    if (st.state !== 'ok' || !st.probe || !cfg<boolean>('followServerLogs', true)) return;
    let m = monitors.get(name);
    if (!m) {
      const node = fleet.node(name);
      if (!node) return;
      m = new NodeMonitor(name, routingPool.get(node));
      m.onDidChange(() => refreshLive(name));
      monitors.set(name, m);
    }
    m.update(st.probe).catch((e) => log.warn(`Monitoring ${name}: ${e instanceof Error ? e.message : String(e)}`));
  }

  // Automatic refresh only while the view is visible, and only of nodes already probed.
  let timer: NodeJS.Timeout | undefined;
  const schedule = () => {
    if (timer) clearInterval(timer);
    timer = undefined;
    const secs = cfg<number>('refreshIntervalSeconds', 30);
    if (!view.visible || !(secs > 0)) return;
    timer = setInterval(() => {
      for (const n of fleet.nodes()) if (fleet.status(n.name).state !== 'unknown') void fleet.refresh(n.name);
    }, secs * 1000);
  };
  context.subscriptions.push(view.onDidChangeVisibility(schedule), { dispose: () => timer && clearInterval(timer) });
  schedule();

  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('gpuSessions')) {
        pools.forEach((p) => p.dispose());
        pools.clear();
        // The monitors' channels belonged to those pools: follow again over the new ones.
        const followed = [...monitors.keys()];
        monitors.forEach((m) => m.dispose());
        monitors.clear();
        reloadNodes();
        for (const name of followed) if (fleet.node(name)) monitorNode(name);
        schedule();
      }
    }),
    vscode.commands.registerCommand('gpuSessions.refresh', async () => {
      reloadNodes();
      await fleet.refreshAll();
    }),
    vscode.commands.registerCommand('gpuSessions.refreshNode', async (el?: TreeNode) => {
      if (el?.type === 'node') await fleet.refresh(el.node.name);
    }),
    vscode.commands.registerCommand('gpuSessions.showLog', () => channel.show()),
    vscode.commands.registerCommand('gpuSessions.openSettings', () =>
      vscode.commands.executeCommand('workbench.action.openSettings', 'gpuSessions'),
    ),
    vscode.commands.registerCommand('gpuSessions.copyPath', async (el?: TreeNode) => {
      const p =
        el?.type === 'artifact' ? el.artifact.path : el?.type === 'server' ? (el.server.logFile ?? el.server.args.join(' ')) : undefined;
      if (p) await vscode.env.clipboard.writeText(p);
    }),
    vscode.commands.registerCommand('gpuSessions.showProbe', async (el?: TreeNode) => {
      const name = el?.type === 'node' ? el.node.name : undefined;
      const p = name ? fleet.status(name).probe : undefined;
      if (!p) return;
      const doc = await vscode.workspace.openTextDocument({ language: 'json', content: JSON.stringify(p, null, 2) });
      await vscode.window.showTextDocument(doc, { preview: true });
    }),
    vscode.commands.registerCommand('gpuSessions.forgetPassphrases', async () => {
      for (const n of fleet.nodes()) for (const f of n.identityFiles) await context.secrets.delete(secretKey(f));
      void vscode.window.showInformationMessage('GPU Sessions: stored key passphrases forgotten.');
    }),
    vscode.commands.registerCommand('gpuSessions.startDemoNode', async () => {
      if (demo) {
        void vscode.window.showInformationMessage(`GPU Sessions: the demo node "${demo.node.name}" is already running.`);
        return demo.node.name;
      }
      return vscode.window.withProgress(
        { location: vscode.ProgressLocation.Notification, title: 'GPU Sessions: starting the demo node (7× simulated B200)…' },
        async () => {
          const { startDemoNode } = await import('../sim/demoServer');
          const dir = path.join(context.globalStorageUri.fsPath, 'demo');
          const d = await startDemoNode({ dir, log: (m) => log.info(`demo: ${m}`) });
          const node: NodeSpec = {
            name: d.alias,
            host: '127.0.0.1',
            port: d.port,
            user: 'demo',
            identityFiles: [d.identityFile],
            source: 'demo',
          };
          demo = { node, knownHostsFile: d.knownHostsFile, stop: d.stop };
          log.info(`Demo node on 127.0.0.1:${d.port}, host key ${d.hostKeyFingerprint}, config ${d.sshConfigFile}`);
          reloadNodes();
          await new Promise((r) => setTimeout(r, 2000));
          await fleet.refresh(node.name);
          return node.name;
        },
      );
    }),
    vscode.commands.registerCommand('gpuSessions.tailLog', async (el?: TreeNode | string, remotePath?: string) => {
      let nodeName: string | undefined;
      let file: string | undefined;
      if (typeof el === 'string') {
        nodeName = el;
        file = remotePath;
      } else if (el?.type === 'server') {
        nodeName = el.node;
        file = el.server.logFile ?? undefined;
      } else if (el?.type === 'artifact') {
        nodeName = el.node;
        file = el.artifact.path;
      }
      if (!nodeName || !file) {
        void vscode.window.showInformationMessage(
          'GPU Sessions: choose a server or a log file in the GPU Sessions view (this server has no log file on disk).',
        );
        return;
      }
      const node = fleet.node(nodeName);
      if (!node) return;
      return logViews.open(node.name, routingPool.get(node), [file]);
    }),
    vscode.commands.registerCommand('gpuSessions.tailAllGpuLogs', async (el?: TreeNode | string) => {
      const nodeName = typeof el === 'string' ? el : el?.type === 'node' ? el.node.name : undefined;
      const node = nodeName ? fleet.node(nodeName) : undefined;
      if (!node) return;
      const p = fleet.status(node.name).probe ?? (await fleet.refresh(node.name)).probe;
      let files = [...new Set((p?.servers ?? []).map((s) => s.logFile).filter((f): f is string => !!f))];
      if (!files.length)
        files = (p?.artifacts ?? [])
          .filter((a) => a.kind === 'log' && /gpu\d+|sglang/i.test(a.path))
          .map((a) => a.path)
          .slice(0, 16);
      if (!files.length) {
        void vscode.window.showInformationMessage(`GPU Sessions: no SGLang server logs found on ${node.name}.`);
        return;
      }
      return logViews.open(node.name, routingPool.get(node), files, `all GPU logs (${files.length})`);
    }),
    vscode.commands.registerCommand('gpuSessions.salvageNode', async (el?: TreeNode | string, opts?: { assumeYes?: boolean }) => {
      const name = typeof el === 'string' ? el : el?.type === 'node' ? el.node.name : undefined;
      return salvageNodeCommand(
        {
          fleet,
          transportFor: (n) => routingPool.get(fleet.node(n)!),
          log,
          verdicts: tree.verdicts,
          onVerdict: () => tree.refreshView(),
        },
        name,
        opts,
      );
    }),
    vscode.commands.registerCommand('gpuSessions.stopDemoNode', async () => {
      if (!demo) return;
      const d = demo;
      poolFor(knownHostsFor(d.node)).forget(d.node);
      demo = undefined;
      await d.stop();
      reloadNodes();
    }),
    { dispose: () => void demo?.stop() },
  );

  registerLaunchCommands(context, { fleet, transportFor: (n) => routingPool.get(fleet.node(n)!), log });

  log.info(`GPU Sessions activated: ${fleet.nodes().length} node(s).`);
  return { fleet, tree, reloadNodes, demo: () => demo };
}

export function deactivate(): void {
  /* everything is disposed through context.subscriptions */
}
