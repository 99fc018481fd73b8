/** MCP tool release_node: `gpu-sessions release`'s flow and JSON; requires confirm: true (or dryRun: true). */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GpuSessionsError } from '../../core/util/errors';
import type { ToolContext } from './context';

export function registerReleaseNode(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'release_node',
    {
      description:
        'Give a node back without dropping a request: remove its servers from every SGLang Model Gateway that routes to them ' +
        '(gateways on the node and on the via nodes), wait until they have no running request (or drainTimeoutS), then salvage ' +
        'it into dest with its servers stopped. The gateways are never stopped. Requires confirm: true (dryRun: true changes nothing).',
      inputSchema: {
        node: c.node,
        via: z.array(z.string().min(1).max(255)).max(64).default([]).describe('Nodes whose gateways may route to node'),
        dest: z.string().min(1).max(4096).describe('Local folder (absolute)'),
        drainTimeoutS: z.number().min(1).max(3600).default(300),
        dryRun: z.boolean().default(false),
        confirm: z.boolean().describe('Must be true: it removes workers from gateways and stops the node’s servers'),
      },
    },
    async ({ node: n, via, dest, drainTimeoutS, dryRun, confirm }) =>
      c.guarded(async () => {
        if (confirm !== true && !dryRun)
          throw new GpuSessionsError(
            'usage',
            'release_node takes servers out of rotation and stops them: call it again with confirm: true.',
          );
        // Its salvage obeys --mcp-dest like salvage_node's.
        const base = c.destUnder(dest);
        const { cmdRelease } = await import('../cmdRelease');
        let text = '';
        const code = await cmdRelease(
          c.deps.nodeFor(n),
          via.map((v) => c.deps.nodeFor(v)),
          c.deps.pool,
          { via, drainTimeoutS, dest: base, dryRun, yes: true, json: true },
          { out: (x) => (text += x), err: () => undefined, isTTY: false },
        );
        return { exitCode: code, ...(JSON.parse(text) as Record<string, unknown>) };
      }),
  );
}
