/**
 * MCP tool restore_run: restore a salvaged run onto a node (the same core flow and JSON as `gpu-sessions restore`);
 * requires confirm: true. The run folder must lie under the server's --mcp-dest folders.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GpuSessionsError } from '../../core/util/errors';
import { parseMapOption } from '../../core/restore/mapping';
import { restoreRun } from '../../core/flows/restore';
import { restoreJson } from '../../core/flows/restoreRender';
import type { ToolContext } from './context';

export const runDir = z
  .string()
  .min(1)
  .max(4096)
  .describe('The salvage run folder (absolute): DEST/<node>/<timestamp>, or DEST/<node> for its newest run');
export const map = z
  .array(z.string().min(3).max(8192))
  .max(64)
  .optional()
  .describe('Folder mappings OLD=NEW (the old home maps to the new home by default)');

export function registerRestoreRun(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'restore_run',
    {
      description:
        'Restore a salvaged run onto a node: every file byte-exact under its old name (mapped), mode kept, hash-checked on the node; ' +
        'conflicts left as they are unless force; with launch, relaunch its servers on the node and wait until ready; with resumeClient, ' +
        'start the generation client. Requires confirm: true.',
      inputSchema: {
        run: runDir,
        node: c.node,
        map,
        force: z.boolean().optional(),
        launch: z.boolean().optional(),
        fill: z.boolean().optional(),
        resumeClient: z.boolean().optional(),
        confirm: z.boolean().describe('Must be true: the restore writes files on the node (and starts servers with launch)'),
      },
    },
    async ({ run, node, map: maps, force, launch, fill, resumeClient, confirm }) =>
      c.guarded(async () => {
        if (confirm !== true) throw new GpuSessionsError('usage', 'restore_run writes on the node: call it again with confirm: true.');
        return c.withNode(node, async (t, spec) =>
          restoreJson(
            await restoreRun(t, {
              runDir: c.destUnder(run),
              node: spec.name,
              maps: (maps ?? []).map(parseMapOption),
              force: Boolean(force),
              launch: Boolean(launch),
              fill: Boolean(fill),
              resumeClient: Boolean(resumeClient),
            }),
          ),
        );
      }),
  );
}
