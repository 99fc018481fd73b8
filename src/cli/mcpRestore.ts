/**
 * MCP tools of restore: restore_plan (compares, writes nothing, starts nothing; with launch the adapted launch
 * script as a dry run) and restore_run (requires confirm: true). Both drive the same core flow as
 * `gpu-sessions restore` and answer its JSON shape.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Transport } from '../core/ssh/transport';
import type { NodeSpec } from '../core/ssh/config';
import { GpuSessionsError } from '../core/util/errors';
import { parseMapOption } from '../core/restore/mapping';
import { restoreRun } from '../core/flows/restore';
import { restoreJson } from '../core/flows/restoreRender';

interface RestoreToolDeps {
  node: z.ZodString;
  withNode<T>(name: string, fn: (t: Transport, spec: NodeSpec) => Promise<T>): Promise<T>;
  guarded(fn: () => Promise<Record<string, unknown>>): Promise<unknown>;
  /** The run folder, if it lies under the server's --mcp-dest folders; else a usage error naming them (issue 39, M3). */
  runUnderRoots(run: string): string;
}

const runDir = z
  .string()
  .min(1)
  .max(4096)
  .describe('The salvage run folder (absolute): DEST/<node>/<timestamp>, or DEST/<node> for its newest run');
const map = z
  .array(z.string().min(3).max(8192))
  .max(64)
  .optional()
  .describe('Folder mappings OLD=NEW (the old home maps to the new home by default)');

export function registerRestoreTools(server: McpServer, d: RestoreToolDeps): void {
  server.registerTool(
    'restore_plan',
    {
      description:
        'What restoring a salvaged run onto a node would do: the folder mapping, files to send, already there, conflicts, the new ' +
        "node's shell files kept, git diffs; with launch: the adapted launch script (servers on the node's GPUs). Writes nothing, starts nothing.",
      inputSchema: { run: runDir, node: d.node, map, launch: z.boolean().optional(), fill: z.boolean().optional() },
    },
    async ({ run, node, map: maps, launch, fill }) =>
      d.guarded(() =>
        d.withNode(node, async (t, spec) =>
          restoreJson(
            await restoreRun(t, {
              runDir: d.runUnderRoots(run),
              node: spec.name,
              maps: (maps ?? []).map(parseMapOption),
              planOnly: true,
              launch: Boolean(launch),
              dryRun: Boolean(launch),
              fill: Boolean(fill),
            }),
          ),
        ),
      ) as never,
  );

  server.registerTool(
    'restore_run',
    {
      description:
        'Restore a salvaged run onto a node: every file byte-exact under its old name (mapped), mode kept, hash-checked on the node; ' +
        'conflicts left as they are unless force; with launch, relaunch its servers on the node and wait until ready; with resumeClient, ' +
        'start the generation client. Requires confirm: true.',
      inputSchema: {
        run: runDir,
        node: d.node,
        map,
        force: z.boolean().optional(),
        launch: z.boolean().optional(),
        fill: z.boolean().optional(),
        resumeClient: z.boolean().optional(),
        confirm: z.boolean().describe('Must be true: the restore writes files on the node (and starts servers with launch)'),
      },
    },
    async ({ run, node, map: maps, force, launch, fill, resumeClient, confirm }) =>
      d.guarded(async () => {
        if (confirm !== true) throw new GpuSessionsError('usage', 'restore_run writes on the node: call it again with confirm: true.');
        return d.withNode(node, async (t, spec) =>
          restoreJson(
            await restoreRun(t, {
              runDir: d.runUnderRoots(run),
              node: spec.name,
              maps: (maps ?? []).map(parseMapOption),
              force: Boolean(force),
              launch: Boolean(launch),
              fill: Boolean(fill),
              resumeClient: Boolean(resumeClient),
            }),
          ),
        );
      }) as never,
  );
}
