/**
 * MCP tool guard_start: start the guard ON the node (the same flow and JSON as `gpu-sessions guard NODE start`);
 * requires confirm: true.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GpuSessionsError } from '../../core/util/errors';
import { guardStart, guardStartOptions } from '../../core/flows/guard';
import type { ToolContext } from './context';

const usage = (m: string): never => {
  throw new GpuSessionsError('usage', m);
};

export function registerGuardStart(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'guard_start',
    {
      description:
        'Start the guard ON the node (detached; it outlives the connection): every intervalS it copies new and changed work files ' +
        '(salvage rules) to s3 (a presigned POST policy under the prefix, at most 7 days) or to a folder on the node (to), each ' +
        'verified by SHA-256; checks data; whenDone notify|stop|terminate (stop/terminate end the rental only after a safe final ' +
        'sync). A running guard is reported unless replace. Requires confirm: true.',
      inputSchema: {
        node: c.node,
        s3: z.string().max(2048).optional().describe('s3://bucket/prefix'),
        s3Endpoint: z.string().max(2048).optional(),
        to: z.string().max(4096).optional().describe('A folder on the node (absolute or ~/...), e.g. a network volume'),
        intervalS: z.number().optional(),
        data: z.array(z.string().max(4096)).max(64).optional(),
        whenDone: z.enum(['notify', 'stop', 'terminate']).optional(),
        idleMin: z.number().optional(),
        until: z.string().max(64).optional(),
        replace: z.boolean().optional(),
        confirm: z.boolean().describe('Must be true: it starts a process on the node that may end the rental (whenDone stop|terminate)'),
      },
    },
    async (a) =>
      c.guarded(async () => {
        if (a.confirm !== true)
          throw new GpuSessionsError('usage', 'guard_start starts a process on the node: call it again with confirm: true.');
        const o = guardStartOptions(
          {
            s3: a.s3,
            's3-endpoint': a.s3Endpoint,
            to: a.to,
            interval: a.intervalS !== undefined ? String(a.intervalS) : undefined,
            data: a.data?.join(','),
            'when-done': a.whenDone,
            idle: a.idleMin !== undefined ? String(a.idleMin) : undefined,
            until: a.until,
            yes: a.replace,
          },
          true,
          usage,
        );
        return c.withNode(a.node, async (t, spec) => ({ node: spec.name, ...(await guardStart(t, { ...o, roots: spec.roots })) }));
      }),
  );
}
