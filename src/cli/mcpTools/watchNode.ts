/** MCP tool watch_node: watch a node for a bounded time; its transitions and last sample. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { ToolContext } from './context';

const MAX_WATCH_S = 300;

export function registerWatchNode(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'watch_node',
    {
      description:
        `Watch a node for durationS seconds (at most ${MAX_WATCH_S}): server states and their transitions ` +
        `(starting, ready, serving, stalled, crashed, ...), the last sample.`,
      inputSchema: {
        node: c.node,
        durationS: z.number().min(1).max(MAX_WATCH_S).default(20),
        intervalS: z.number().min(1).max(60).default(5),
      },
    },
    async ({ node: n, durationS, intervalS }) =>
      c.guarded(async () => {
        const spec = c.deps.nodeFor(n);
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), durationS * 1000);
        const transitions: unknown[] = [];
        let last: unknown = null;
        let samples = 0;
        try {
          await c.deps.watch(spec, intervalS, ac.signal, (line) => {
            let o: { type?: string } | null = null;
            try {
              o = JSON.parse(line) as { type?: string };
            } catch {
              return;
            }
            if (o && o.type === 'transition') transitions.push(o);
            else if (o) {
              last = o;
              samples++;
            }
          });
        } finally {
          clearTimeout(timer);
        }
        return { node: n, durationS, samples, transitions, last };
      }),
  );
}
