/** MCP tool parse_log: SGLang log lines (given, or the tail of a node's file) → stats and a summary. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GpuSessionsError } from '../../core/util/errors';
import { NODE_DATA, type ToolContext } from './context';
import { MAX_TAIL_LINES, readTail, summarize } from './nodeRead';

export function registerParseLog(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'parse_log',
    {
      description:
        'SGLang log lines → typed stats (throughput, running/queued requests, accept length) and a summary per rank with errors ' +
        'and readiness. Give `text`, or `node` and `path` (the last `lines` lines are read).',
      inputSchema: {
        text: z
          .string()
          .max(4 * 1024 * 1024)
          .optional(),
        node: c.node.optional(),
        path: z.string().min(1).max(4096).optional(),
        lines: z.number().int().min(1).max(MAX_TAIL_LINES).default(500),
      },
    },
    async ({ text, node: n, path: p, lines }) =>
      c.guarded(async () => {
        if (text !== undefined) return summarize(text.split(/\r?\n/));
        if (!n || !p) throw new GpuSessionsError('usage', 'parse_log needs `text`, or `node` and `path`.');
        const r = await c.withNode(n, (t, spec) => readTail(t, spec, p, lines));
        return { node: n, path: p, ...summarize(r.lines), truncated: r.truncated, dataFromNode: NODE_DATA };
      }),
  );
}
