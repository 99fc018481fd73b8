/**
 * MCP tool restore_plan: what restoring a salvaged run would do (compares, writes nothing, starts nothing; with
 * launch the adapted launch script as a dry run). The run folder must lie under the server's --mcp-dest folders.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { parseMapOption } from '../../core/restore/mapping';
import { restoreRun } from '../../core/flows/restore';
import { restoreJson } from '../../core/flows/restoreRender';
import type { ToolContext } from './context';
import { map, runDir } from './restoreRun';

export function registerRestorePlan(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'restore_plan',
    {
      description:
        'What restoring a salvaged run onto a node would do: the folder mapping, files to send, already there, conflicts, the new ' +
        "node's shell files kept, git diffs; with launch: the adapted launch script (servers on the node's GPUs). Writes nothing, starts nothing.",
      inputSchema: { run: runDir, node: c.node, map, launch: z.boolean().optional(), fill: z.boolean().optional() },
    },
    async ({ run, node, map: maps, launch, fill }) =>
      c.guarded(() =>
        c.withNode(node, async (t, spec) =>
          restoreJson(
            await restoreRun(t, {
              runDir: c.destUnder(run),
              node: spec.name,
              maps: (maps ?? []).map(parseMapOption),
              planOnly: true,
              launch: Boolean(launch),
              dryRun: Boolean(launch),
              fill: Boolean(fill),
            }),
          ),
        ),
      ),
  );
}
