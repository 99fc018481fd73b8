/** MCP tool salvage_node: salvage the node into dest (under the server's --mcp-dest roots); requires confirm: true. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GpuSessionsError } from '../../core/util/errors';
import { Salvager } from '../../core/flows/salvage';
import type { ToolContext } from './context';
import { probeNodeRaw } from './nodeRead';
import { verdictOf } from './salvageStatus';

export function registerSalvageNode(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'salvage_node',
    {
      description:
        'Download everything of value from the node into dest/<node>/<timestamp>/, verify it, and say whether the node is safe to ' +
        'shut down. Requires confirm: true. Stops nothing on the node.',
      inputSchema: {
        node: c.node,
        dest: z
          .string()
          .min(1)
          .max(4096)
          .describe('Local folder (absolute), under a folder the server was started with (--mcp-dest; default its working folder)'),
        confirm: z.boolean().describe('Must be true: the salvage writes into dest and takes time'),
      },
    },
    async ({ node: n, dest, confirm }) =>
      c.guarded(async () => {
        if (confirm !== true) throw new GpuSessionsError('usage', 'salvage_node downloads into dest: call it again with confirm: true.');
        const base = c.destUnder(dest);
        return c.withNode(n, async (t, spec) => {
          const probe = await probeNodeRaw(t, spec);
          const s = new Salvager({ node: spec.name, transport: t, base, roots: spec.roots, servers: probe.servers });
          const m = (await s.run())!; // no review: the preselection
          return { node: spec.name, ...verdictOf(m, s.dir) };
        });
      }),
  );
}
