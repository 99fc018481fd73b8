/** What commands are given: the long-lived objects activate() wires together. */
import type * as vscode from 'vscode';
import type { Fleet } from '../core/node/fleet';
import type { NodeSpec } from '../core/ssh/config';
import type { Transport } from '../core/ssh/transport';
import type { Logger } from '../core/util/logger';
import type { Connections } from './connections';
import type { DemoNode } from './demo';
import type { KeepSalvaged } from './keepSalvaged';
import type { Dashboards } from './dashboard';
import type { LiveMonitors } from './liveMonitors';
import type { LogViews } from './logView';
import type { NodeList } from './nodeList';
import type { NodeResolver } from './resolve';
import type { SalvageVerdicts } from './salvageVerdicts';
import type { NodesTreeProvider } from './tree';
import type { NodeGuards } from './nodeGuards';

export interface Services {
  readonly context: vscode.ExtensionContext;
  readonly log: Logger;
  /** Shows the GPU Sessions output channel. */
  showLog(): void;
  readonly fleet: Fleet;
  readonly connections: Connections;
  readonly nodes: NodeList;
  readonly demo: DemoNode;
  readonly resolver: NodeResolver;
  readonly tree: NodesTreeProvider;
  readonly logViews: LogViews;
  readonly verdicts: SalvageVerdicts;
  readonly live: LiveMonitors;
  readonly dashboards: Dashboards;
  /** Keep Node Salvaged: the watches running per node. */
  readonly keepSalvaged: KeepSalvaged;
  /** The nodes' own guards (gpu-sessions guard), as last read. */
  readonly guards: NodeGuards;
  /** The pooled transport of a node of the fleet. */
  transportFor(node: NodeSpec | string): Transport;
}
