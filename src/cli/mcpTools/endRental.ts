/**
 * MCP tool end_rental: the same flow as `gpu-sessions end-rental` — only on the latest salvage's safe verdict
 * under dest that still holds, exactly one provider action run on the node with the node's own key, verified —
 * and its JSON. Requires confirm: true (dryRun: true ends nothing and says the exact command).
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { GpuSessionsError } from '../../core/util/errors';
import { DEFAULT_VERIFY_TIMEOUT_S, endRental, endRentalExitCode, endRentalJson } from '../../core/flows/endRental';
import type { ToolContext } from './context';

export function registerEndRental(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'end_rental',
    {
      description:
        "End a node's rental with the provider's own action (stop, terminate, or shutdown), run on the node with the node's own " +
        'scoped key, only when the latest salvage under dest says safe and nothing changed since (new or grown files, servers, ' +
        'boot); verified by the provider status (stopped or gone) and SSH no longer answering. exitCode 0 ended, 5 refused ' +
        '(reasons), 1 not verified. Irreversible: requires confirm: true (dryRun: true ends nothing).',
      inputSchema: {
        node: c.node,
        action: z.enum(['stop', 'terminate', 'shutdown']),
        dest: z.string().min(1).max(4096).describe('The salvage folder (absolute) holding <node>/<timestamp>/'),
        verifyTimeoutS: z.number().min(1).max(3600).default(DEFAULT_VERIFY_TIMEOUT_S),
        dryRun: z.boolean().default(false),
        confirm: z.boolean().describe('Must be true: ending a rental cannot be undone'),
      },
    },
    async ({ node: n, action, dest, verifyTimeoutS, dryRun, confirm }) =>
      c.guarded(async () => {
        if (confirm !== true && !dryRun)
          throw new GpuSessionsError('usage', 'end_rental ends a rental for good: call it again with confirm: true (or dryRun: true).');
        // a transport on a new connection (does SSH still let a session in?); never accepts an unknown host key
        const fresh = c.deps.freshTransport;
        if (!fresh) throw new GpuSessionsError('config', 'end_rental cannot verify here (no fresh SSH connections).');
        const spec = c.deps.nodeFor(n);
        const r = await endRental({
          node: spec.name,
          transport: c.deps.pool.get(spec),
          freshTransport: () => fresh(spec),
          dest: c.destUnder(dest),
          action,
          dryRun,
          verifyTimeoutMs: verifyTimeoutS * 1000,
        });
        return { exitCode: endRentalExitCode(r), ...endRentalJson(r) };
      }),
  );
}
