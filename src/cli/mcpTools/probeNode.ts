/** MCP tool probe_node: probe --json's object, with the provider's price and end (`rental`, `provider.rental`). */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { ToolContext } from './context';
import { probeNodeRaw } from './nodeRead';

export function registerProbeNode(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'probe_node',
    {
      description:
        "A node's GPUs, SGLang servers (port, model, flags, log file) and artifacts, in one SSH round trip; with the rental's " +
        'price and end from its provider where the node can tell (rental, as `gpu-sessions probe --json`).',
      inputSchema: { node: c.node },
    },
    async ({ node: n }) =>
      c.guarded(() =>
        c.withNode(n, async (t, spec) => {
          const p = await probeNodeRaw(t, spec);
          const { readProviderRental, rentalTerms } = await import('../../core/node/rental');
          const provider = await readProviderRental(t, p.provider);
          return c.deps.probeJson(p, { provider, terms: rentalTerms({ price: null, deadline: null }, provider) });
        }),
      ),
  );
}
