/** MCP tool salvage_plan: what a salvage would save and leave, and why; downloads nothing. */
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { Salvager } from '../../core/flows/salvage';
import { NODE_DATA, type ToolContext } from './context';
import { probeNodeRaw } from './nodeRead';

export function registerSalvagePlan(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'salvage_plan',
    {
      description:
        'What a salvage of the node would save, and what it would leave on the node and why (large files, caches, ' +
        're-downloadable weights, secret stores). Downloads nothing.',
      inputSchema: { node: c.node },
    },
    async ({ node: n }) =>
      c.guarded(() =>
        c.withNode(n, async (t, spec) => {
          const probe = await probeNodeRaw(t, spec);
          const tmp = mkdtempSync(path.join(os.tmpdir(), 'gpu-sessions-plan-'));
          try {
            const s = new Salvager({ node: spec.name, transport: t, base: tmp, roots: spec.roots, servers: probe.servers });
            const items = await s.plan();
            const pick = (i: (typeof items)[number]) => ({
              remotePath: i.remotePath,
              kind: i.kind,
              size: i.size,
              reason: i.reason ?? null,
            });
            return {
              node: spec.name,
              roots: s.manifest.roots,
              save: items.filter((i) => i.selected).map(pick),
              leave: items.filter((i) => !i.selected).map((i) => ({ ...pick(i), leftReason: i.leftReason ?? null })),
              stillRunning: s.manifest.writers.map((w) => ({ pid: w.pid, server: w.server, writes: w.writes })),
              listing: s.manifest.listing
                ? { truncated: s.manifest.listing.truncated, notListed: s.manifest.listing.notListed, bound: s.manifest.listing.bound }
                : null,
              truncated: s.manifest.listing?.truncated === true,
              dataFromNode: NODE_DATA,
            };
          } finally {
            rmSync(tmp, { recursive: true, force: true });
          }
        }),
      ),
  );
}
