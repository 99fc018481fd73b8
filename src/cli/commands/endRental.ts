/** `gpu-sessions end-rental NODE (--stop | --terminate | --shutdown)`: end the rental, only on a safe verdict. */
import * as path from 'node:path';
import { makePool, nodeFor, usageError } from '../cliNode';
import { type CliCommand, flag, str } from '../command';
import { EXIT, nodeExits } from '../exitCodes';
import { withPool } from './common';

export const endRental: CliCommand = {
  name: 'end-rental',
  usage: `  gpu-sessions end-rental NODE (--stop | --terminate | --shutdown) [--dest DIR] [--dry-run] [--yes] [--json]
                 [--verify-timeout S]
                                              end the rental with the provider's own action (runpodctl, vastai,
                                              or sudo shutdown), run on the node with its own scoped key, only on a
                                              safe salvage verdict (--dest, default ./salvage) that still holds;
                                              verified by the provider's status and SSH going away (default 180 s);
                                              exit 0 ended, 5 refused (reasons), 1 not verified`,
  options: {
    stop: { type: 'boolean' },
    terminate: { type: 'boolean' },
    shutdown: { type: 'boolean' },
    'verify-timeout': { type: 'string' },
    dest: { type: 'string' },
    'dry-run': { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
  },
  exitCodes: nodeExits({ [EXIT.ok]: 'ended', [EXIT.failed]: 'not verified', [EXIT.unsafe]: 'refused (reasons)' }),
  async run({ args, v, g, io }) {
    if (args.length !== 1) usageError('end-rental takes exactly one NODE.');
    const E = await import('../cmdEndRental');
    const { action, verifyTimeoutS } = E.endRentalAction(v, usageError);
    const node = nodeFor(args[0], g);
    // each check of "does SSH still let a session in" is a new connection (its own pool; the flow disposes it)
    const fresh = () => makePool({ ...g, acceptNew: false }, { ...io, isTTY: false }, node).get(node);
    return withPool(g, io, node, ['SIGINT'], (pool, signal) =>
      E.cmdEndRental(
        node,
        pool,
        fresh,
        {
          action,
          verifyTimeoutS,
          dest: path.resolve(str(v, 'dest') ?? 'salvage'),
          dryRun: flag(v, 'dry-run'),
          yes: flag(v, 'yes'),
          json: g.json,
        },
        io,
        signal,
      ),
    );
  },
};
