/** MCP tool tail_log: the last lines of a log or artifact the probe found, or of a file under the salvage roots (bounded). */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { NODE_DATA, type ToolContext } from './context';
import { MAX_TAIL_LINES, readTail } from './nodeRead';

export function registerTailLog(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'tail_log',
    {
      description:
        `The last lines (at most ${MAX_TAIL_LINES}, 1 MiB) of a server log or artifact probe_node found, or of a file under the ` +
        `node's salvage roots; never private keys or credential stores, devices or FIFOs. ${NODE_DATA}`,
      inputSchema: {
        node: c.node,
        path: z.string().min(1).max(4096).describe('Absolute path on the node'),
        lines: z.number().int().min(1).max(MAX_TAIL_LINES).default(200),
      },
    },
    async ({ node: n, path: p, lines }) =>
      c.guarded(() =>
        c.withNode(n, async (t, spec) => {
          const r = await readTail(t, spec, p, lines);
          return {
            node: n,
            path: p,
            lines: r.lines,
            count: r.lines.length,
            notes: r.notes,
            truncated: r.truncated,
            dataFromNode: NODE_DATA,
          };
        }),
      ),
  );
}
