/** The MCP server's tools, one file each, in the order the server lists them. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ToolContext } from './context';
import { registerDataQuality } from './dataQuality';
import { registerEndRental } from './endRental';
import { registerGuardStart } from './guardStart';
import { registerGuardStatus } from './guardStatus';
import { registerGuardStop } from './guardStop';
import { registerListNodes } from './listNodes';
import { registerParseLog } from './parseLog';
import { registerProbeNode } from './probeNode';
import { registerReleaseNode } from './releaseNode';
import { registerRestorePlan } from './restorePlan';
import { registerRestoreRun } from './restoreRun';
import { registerSalvageNode } from './salvageNode';
import { registerSalvagePlan } from './salvagePlan';
import { registerSalvageStatus } from './salvageStatus';
import { registerTailLog } from './tailLog';
import { registerWatchNode } from './watchNode';

export const MCP_TOOLS: readonly ((server: McpServer, c: ToolContext) => void)[] = [
  registerListNodes,
  registerProbeNode,
  registerDataQuality,
  registerTailLog,
  registerParseLog,
  registerSalvagePlan,
  registerSalvageNode,
  registerReleaseNode,
  registerSalvageStatus,
  registerRestorePlan,
  registerRestoreRun,
  registerGuardStatus,
  registerGuardStart,
  registerGuardStop,
  registerEndRental,
  registerWatchNode,
];
