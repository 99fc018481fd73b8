/**
 * Which nodes the tree shows: "This machine" (when enabled), the running demo node, and the nodes of
 * ssh config and the gpuSessions.nodes setting. Reloaded at activation and when settings change.
 */
import { existsSync } from 'node:fs';
import * as os from 'node:os';
import * as vscode from 'vscode';
import type { Fleet } from '../core/node/fleet';
import type { NodeSpec } from '../core/ssh/config';
import { GroupedNodes, groupNodes, treeGrouping } from '../core/ssh/groups';
import { NodeListing, defaultSshConfigFile, listNodes, resolveNode } from '../core/ssh/nodes';
import { LOCAL_NODE_NAME } from '../core/ssh/pool';
import type { Logger } from '../core/util/logger';
import { cfg, pathSetting } from './config';
import type { DemoNode } from './demo';

export function fleetOptions(): { maxDepth: number; maxArtifacts: number } {
  return { maxDepth: cfg('artifacts.maxDepth', 6), maxArtifacts: cfg('artifacts.maxCount', 2000) };
}

export class NodeList {
  private listing: NodeListing | undefined;

  constructor(
    private readonly fleet: Fleet,
    private readonly demo: DemoNode,
    private readonly log: Logger,
    private readonly showLog: () => void,
  ) {}

  /** A ProxyJump hop by alias, from the latest listing. */
  resolveHop(spec: string): NodeSpec | undefined {
    return this.listing ? resolveNode(spec, this.listing) : undefined;
  }

  /** The main ssh config file (gpuSessions.sshConfigFile, else ~/.ssh/config). */
  rootConfigFile(): string {
    return pathSetting('sshConfigFile', (m) => this.log.warn(m)) || defaultSshConfigFile();
  }

  /**
   * The tree's top level: flat, or grouped by Included ssh config file / gpuSessions.nodes[].group; hosts that are
   * clearly not GPU nodes (`notGpu`, code hosts) last under "Other hosts".
   */
  group(nodes: NodeSpec[], notGpu?: (n: NodeSpec) => boolean): GroupedNodes {
    const mode = treeGrouping(cfg<string>('tree.grouping', 'configFile'));
    return groupNodes(nodes, { mode, rootConfigFile: this.rootConfigFile(), notGpu });
  }

  reload(): void {
    const file = pathSetting('sshConfigFile');
    const current = listNodes({ sshConfigFile: this.rootConfigFile(), settingsNodes: cfg<unknown[]>('nodes', []) });
    this.listing = current;
    for (const d of current.diagnostics) this.log.warn(`${d.file}:${d.line}: ${d.message}`);
    // A missing ~/.ssh/config is normal (nodes may come from settings): log it, do not nag. A missing
    // file the user configured, or a malformed line, is worth a notification.
    const notable = current.diagnostics.filter((d) => !(d.line === 0 && !file && !existsSync(d.file.replace(/^~(?=\/)/, os.homedir()))));
    if (notable.length) {
      const d = notable[0];
      const more = notable.length > 1 ? ` (and ${notable.length - 1} more; see the log)` : '';
      void vscode.window
        .showWarningMessage(`GPU Sessions: ${d.file}${d.line ? `:${d.line}` : ''}: ${d.message}${more}`, 'Show Log')
        .then((c) => c && this.showLog());
    }
    const demo = this.demo.current;
    const nodes: NodeSpec[] = [];
    if (cfg<boolean>('showLocalMachine', false))
      nodes.push({ name: LOCAL_NODE_NAME, host: 'localhost', port: 0, identityFiles: [], source: 'local' });
    if (demo) nodes.push(demo.node);
    const fromConfig = cfg<boolean>('includeSshConfigHosts', true) ? current.nodes : current.nodes.filter((n) => n.source !== 'ssh-config');
    nodes.push(...fromConfig.filter((n) => !demo || n.name !== demo.node.name));
    this.fleet.setNodes(nodes);
    this.fleet.setOptions(fleetOptions());
  }
}
