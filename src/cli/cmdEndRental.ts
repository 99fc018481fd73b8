/**
 * `gpu-sessions end-rental NODE (--stop | --terminate | --shutdown) [--dest DIR] [--dry-run] [--yes] [--json]
 * [--verify-timeout S]`: end the rental with the provider's own action, run on the node with the node's own key, only
 * on a fresh safe salvage verdict (core/flows/endRental.ts), and verify it. Exit: 0 ended and verified (or a dry
 * run that would run), 5 refused (reasons[]), 1 not verified or declined.
 */
import type { ProviderAction } from '../core/provider/detect';
import { DEFAULT_VERIFY_TIMEOUT_S, endRental, endRentalExitCode, endRentalJson } from '../core/flows/endRental';
import type { NodeSpec } from '../core/ssh/config';
import type { ConnectionPool } from '../core/ssh/pool';
import type { Transport } from '../core/ssh/transport';
import { GpuSessionsError } from '../core/util/errors';
import type { CliIo } from './cliNode';

export interface EndRentalCliOptions {
  action: ProviderAction;
  dest: string;
  dryRun: boolean;
  yes: boolean;
  json: boolean;
  verifyTimeoutS: number;
}

/** The action flag (exactly one of --stop, --terminate, --shutdown) and --verify-timeout, checked. */
export function endRentalAction(
  v: Record<string, unknown>,
  usage: (m: string) => never,
): { action: ProviderAction; verifyTimeoutS: number } {
  const chosen = (['stop', 'terminate', 'shutdown'] as const).filter((a) => v[a]);
  if (chosen.length !== 1) usage('end-rental needs exactly one of --stop, --terminate or --shutdown.');
  const t = v['verify-timeout'] !== undefined ? Number(v['verify-timeout']) : DEFAULT_VERIFY_TIMEOUT_S;
  if (!(t > 0 && t <= 3600)) usage('--verify-timeout is a number of seconds from 1 to 3600.');
  return { action: chosen[0], verifyTimeoutS: t };
}

export async function cmdEndRental(
  node: NodeSpec,
  pool: ConnectionPool,
  freshTransport: () => Transport,
  o: EndRentalCliOptions,
  io: CliIo,
  signal?: AbortSignal,
): Promise<number> {
  if (!o.dryRun && !o.yes && !(io.isTTY && io.ask))
    throw new GpuSessionsError(
      'usage',
      'end-rental ends a rental for good: pass --yes (or run it in a terminal to confirm), or --dry-run.',
    );
  const say = (m: string) => {
    if (!o.json) io.err(m + '\n');
  };
  const r = await endRental({
    node: node.name,
    transport: pool.get(node),
    freshTransport,
    dest: o.dest,
    action: o.action,
    dryRun: o.dryRun,
    verifyTimeoutMs: o.verifyTimeoutS * 1000,
    signal,
    onProgress: say,
    // once the node no longer answers: the provider's status on this machine with the user's own key, if any
    localStatus: async (p) => {
      const { LocalTransport } = await import('../core/ssh/transport');
      const { localStatusOperation } = await import('../core/provider/actions');
      const { runOperation } = await import('../core/remote/operation');
      const t = new LocalTransport();
      try {
        return await runOperation(t, localStatusOperation(p), signal);
      } finally {
        t.dispose();
      }
    },
    confirm:
      o.yes || !io.ask
        ? undefined
        : async (command, p) => {
            io.err(
              `This ends the ${p.name} rental of ${node.name}${p.instanceId ? ` (${p.instanceId})` : ''} by running on it:\n  ${command}\n`,
            );
            const a = (await io.ask!(`End the rental of ${node.name}? [y/N] `)).trim().toLowerCase();
            return a === 'y' || a === 'yes';
          },
  });
  if (o.json) io.out(JSON.stringify(endRentalJson(r), null, 2) + '\n');
  else {
    const who = `the ${r.provider} rental of ${node.name}${r.instanceId ? ` (${r.instanceId})` : ''}`;
    const head =
      r.outcome === 'refused'
        ? `REFUSED: the rental of ${node.name} was not ended.`
        : r.outcome === 'dry-run'
          ? `Dry run (nothing ended). On ${node.name} this would run:\n  ${r.command}`
          : r.outcome === 'declined'
            ? 'Nothing ended.'
            : r.outcome === 'ended'
              ? `ENDED and verified: ${who} (${r.action}) at ${r.endedAt ?? 'unknown'}.`
              : `NOT VERIFIED: ${r.command} ran on ${node.name}, but the end of the rental could not be verified; check the provider's console.`;
    io.out(head + '\n');
    for (const x of r.reasons) io.out(`  - ${x.code}: ${x.message}\n`);
    for (const e of r.evidence) io.out(`  · ${e}\n`);
  }
  return endRentalExitCode(r);
}
