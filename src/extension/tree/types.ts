/** The elements of the Nodes tree: [Node group →] Node → GPUs · Servers · Artifacts (grouped by kind). */
import type { Artifact, ArtifactKind } from '../../core/node/probe';
import type { GpuInfo, LostGpu } from '../../core/node/nvidiaSmi';
import type { NodeLive } from '../../core/node/monitor';
import type { Deadline } from '../../core/node/spend';
import type { SglangServer } from '../../core/sglang/serverArgv';
import type { NodeSpec } from '../../core/ssh/config';
import type { Fleet } from '../../core/node/fleet';
import type { SalvageVerdicts } from '../salvageVerdicts';
import type { DataSampleFile } from '../../core/data/watch';
import type { Gateway } from '../../core/gateway/discover';
import type { GuardStatus } from '../../core/guard/operations';
import type { GoneServer } from '../../core/node/lastSeenServers';

export type TreeNode =
  /** Nodes of one Included ssh config file or one gpuSessions.nodes[].group (core/ssh/groups.ts). */
  | { type: 'nodeGroup'; key: string; label: string; file?: string; other?: boolean; nodes: { type: 'node'; node: NodeSpec }[] }
  | { type: 'node'; node: NodeSpec }
  | { type: 'error'; node: string; code: string; message: string }
  /** `live`: a row of live figures (generation progress, the rental countdown, Keep Node Salvaged), re-rendered in place. */
  | {
      type: 'info';
      node: string;
      label: string;
      detail?: string;
      icon?: string;
      /** a theme colour id for the icon */
      color?: string;
      tooltip?: string;
      live?: 'progress' | 'done' | 'deadline' | 'salvage' | 'data' | 'guard';
      /** a problem row of a crashed server: its port (its menu: Restart Server, Open Log) */
      crashedPort?: number;
    }
  | { type: 'group'; node: string; group: 'gpus' | 'servers' | 'artifacts' }
  | { type: 'gpu'; node: string; gpu: GpuInfo }
  /** A GPU nvidia-smi can no longer read while the others still report: listed with the driver's words. */
  | { type: 'lostGpu'; node: string; lost: LostGpu }
  /** `crashed`: gone from the probe, crashed; listed as last seen (its command line) with Restart Server first. */
  | { type: 'server'; node: string; server: SglangServer; crashed?: boolean }
  /** An SGLang Model Gateway on the node, and one of its workers (by URL, read from the latest probe). */
  | { type: 'gateway'; node: string; gateway: Gateway }
  | { type: 'gatewayWorker'; node: string; gatewayPid: number; url: string }
  | { type: 'kind'; node: string; kind: ArtifactKind; items: Artifact[] }
  | { type: 'artifact'; node: string; artifact: Artifact };

export type TreeNodeOf<K extends TreeNode['type']> = Extract<TreeNode, { type: K }>;

/** What the item builders read: the fleet's probes, live figures and salvage verdicts. */
export interface TreeContext {
  readonly fleet: Fleet;
  readonly verdicts: SalvageVerdicts;
  liveFor(node: string): NodeLive | undefined;
  /** The rental deadline now (seconds left at this moment) and the warning lead time; undefined when none is set. */
  deadlineFor(node: string): { deadline: Deadline; leadS: number } | undefined;
  /** The data guard's latest files of the node (core/data), when judged. */
  dataFor?(node: string): DataSampleFile[] | undefined;
  /** Servers that crashed and left the probe, as last seen (LiveMonitors.crashedServers). */
  crashedFor?(node: string): GoneServer[];
  /** The node's own guard (gpu-sessions guard), as last read; undefined when it never ran one. */
  guardFor?(node: string): GuardStatus | undefined;
  /** The id of an argument-free command that tails `file` of `node` (tree/clickCommands.ts). */
  tailCommand?(node: string, file: string): string;
}

export const ERROR_TITLE: Record<string, string> = {
  'host-key-changed': 'Host key changed — refusing to connect',
  'host-key-revoked': 'Host key revoked — refusing to connect',
  'host-key-unknown': 'Host key not trusted',
  'auth-failed': 'Authentication failed',
  unreachable: 'Unreachable',
  timeout: 'Timed out',
  config: 'Configuration problem',
  'remote-failed': 'Probe failed on the node',
  'remote-incomplete': 'Probe cut off — refresh to try again',
  'remote-truncated': 'Probe output too large',
  'remote-malformed': 'Probe output not understood',
  cancelled: 'Cancelled',
  io: 'Local file error',
};
