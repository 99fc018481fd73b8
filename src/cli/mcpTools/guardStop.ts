/** MCP tool guard_stop: stop the node guard; requires confirm: true. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GpuSessionsError } from '../../core/util/errors';
import { runOperation } from '../../core/remote/operation';
import { guardStopOperation } from '../../core/guard/operations';
import type { ToolContext } from './context';

export function registerGuardStop(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'guard_stop',
    {
      description: 'Stop the node guard (it copies nothing more). Requires confirm: true.',
      inputSchema: { node: c.node, confirm: z.boolean().describe('Must be true: the node is unguarded afterwards') },
    },
    async ({ node, confirm }) =>
      c.guarded(async () => {
        if (confirm !== true)
          throw new GpuSessionsError('usage', 'guard_stop leaves the node unguarded: call it again with confirm: true.');
        return c.withNode(node, async (t, spec) => ({ node: spec.name, ...(await runOperation(t, guardStopOperation())) }));
      }),
  );
}
