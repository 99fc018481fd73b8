/** MCP tool data_quality: the data verdict of the generation output, judged on the node (`gpu-sessions data --json`). */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GpuSessionsError } from '../../core/util/errors';
import { runOperation } from '../../core/remote/operation';
import { nodeReadRefusal } from '../../core/security/nodePaths';
import type { ToolContext } from './context';
import { readScope } from './nodeRead';

export function registerDataQuality(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'data_quality',
    {
      description:
        'Is the generation output any good? Judges JSONL output files ON the node (never downloads them): rows, a bounded ' +
        'sample, shares of empty / thinking-only / cut-at-length / same / looping answers, verdict ok | suspect | degenerate ' +
        'with reasons. With no paths it finds the output files under the work folders. Same JSON as `gpu-sessions data --json`.',
      inputSchema: {
        node: c.node,
        paths: z.array(z.string().min(1).max(4096)).max(64).optional().describe('Files or folders on the node; omit to discover them'),
        sample: z.number().int().min(1).max(100_000).default(1000).describe('Rows from the end, and rows spread through the file'),
        responseField: z.string().max(512).optional().describe('JSON pointer to the response, e.g. /choices/0/message/content'),
        promptField: z.string().max(512).optional().describe('JSON pointer to the prompt'),
      },
    },
    async ({ node: n, paths, sample, responseField, promptField }) =>
      c.guarded(() =>
        c.withNode(n, async (t, spec) => {
          const { dataOperation, checkPointer } = await import('../../core/data/operation');
          const { dataJson } = await import('../cmdData');
          // The same path policy as tail_log: an agent judges the work's output files, not any file.
          if (paths?.length) {
            const scope = await readScope(t, spec);
            for (const p of paths) {
              const why = nodeReadRefusal(p, scope);
              if (why) throw new GpuSessionsError('usage', `data_quality refuses ${JSON.stringify(p)}: ${why}.`);
            }
          }
          const opts = {
            paths: paths ?? [],
            roots: spec.roots,
            sample,
            responseField: responseField !== undefined ? checkPointer(responseField, 'responseField') : undefined,
            promptField: promptField !== undefined ? checkPointer(promptField, 'promptField') : undefined,
          };
          return dataJson(await runOperation(t, dataOperation(spec.name, opts)));
        }),
      ),
  );
}
