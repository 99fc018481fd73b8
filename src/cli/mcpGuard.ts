/**
 * MCP tools of the node guard (issue 47): guard_status (reads its state and journal, changes nothing),
 * guard_start and guard_stop (both require confirm: true). They drive the same flow as `gpu-sessions guard`
 * and answer its JSON shapes.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import type { Transport } from '../core/ssh/transport';
import type { NodeSpec } from '../core/ssh/config';
import { GpuSessionsError } from '../core/util/errors';
import { runOperation } from '../core/remote/operation';
import { guardStart, guardStartOptions } from '../core/flows/guard';
import { guardStatusOperation, guardStopOperation } from '../core/guard/operations';
import { guardStatusJson } from './cmdGuard';

interface GuardToolDeps {
  node: z.ZodString;
  withNode<T>(name: string, fn: (t: Transport, spec: NodeSpec) => Promise<T>): Promise<T>;
  guarded(fn: () => Promise<Record<string, unknown>>): Promise<unknown>;
}

const usage = (m: string): never => {
  throw new GpuSessionsError('usage', m);
};

export function registerGuardTools(server: McpServer, d: GuardToolDeps): void {
  server.registerTool(
    'guard_status',
    {
      description:
        "The node guard's state: running, pid, settings, last verified sync, bytes at risk (written since their last verified " +
        'copy) and the journal (job done, syncs, data events, rental ended or kept, last gasp). Changes nothing.',
      inputSchema: { node: d.node },
    },
    async ({ node }) =>
      d.guarded(() =>
        d.withNode(node, async (t, spec) => guardStatusJson(spec.name, await runOperation(t, guardStatusOperation()))),
      ) as never,
  );

  server.registerTool(
    'guard_start',
    {
      description:
        'Start the guard ON the node (detached; it outlives the connection): every intervalS it copies new and changed work files ' +
        '(salvage rules) to s3 (a presigned POST policy under the prefix, at most 7 days) or to a folder on the node (to), each ' +
        'verified by SHA-256; checks data; whenDone notify|stop|terminate (stop/terminate end the rental only after a safe final ' +
        'sync). A running guard is reported unless replace. Requires confirm: true.',
      inputSchema: {
        node: d.node,
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
      d.guarded(async () => {
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
        return d.withNode(a.node, async (t, spec) => ({ node: spec.name, ...(await guardStart(t, { ...o, roots: spec.roots })) }));
      }) as never,
  );

  server.registerTool(
    'guard_stop',
    {
      description: 'Stop the node guard (it copies nothing more). Requires confirm: true.',
      inputSchema: { node: d.node, confirm: z.boolean().describe('Must be true: the node is unguarded afterwards') },
    },
    async ({ node, confirm }) =>
      d.guarded(async () => {
        if (confirm !== true)
          throw new GpuSessionsError('usage', 'guard_stop leaves the node unguarded: call it again with confirm: true.');
        return d.withNode(node, async (t, spec) => ({ node: spec.name, ...(await runOperation(t, guardStopOperation())) }));
      }) as never,
  );
}
