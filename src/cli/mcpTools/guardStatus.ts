/** MCP tool guard_status: the node guard's state and journal (`gpu-sessions guard NODE status --json`); changes nothing. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { runOperation } from '../../core/remote/operation';
import { guardStatusOperation } from '../../core/guard/operations';
import { guardStatusJson } from '../cmdGuard';
import type { ToolContext } from './context';

export function registerGuardStatus(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'guard_status',
    {
      description:
        "The node guard's state: running, pid, settings, last verified sync, bytes at risk (written since their last verified " +
        'copy) and the journal (job done, syncs, data events, rental ended or kept, last gasp). Changes nothing.',
      inputSchema: { node: c.node },
    },
    async ({ node }) =>
      c.guarded(() => c.withNode(node, async (t, spec) => guardStatusJson(spec.name, await runOperation(t, guardStatusOperation())))),
  );
}
