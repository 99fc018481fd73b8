/** `gpu-sessions release NODE [--via NODE...]`: give a node back without dropping a request. */
import * as path from 'node:path';
import { nodeFor, usageError } from '../cliNode';
import { type CliCommand, flag, list, num, str } from '../command';
import { EXIT, nodeExits } from '../exitCodes';
import { withPool } from './common';

export const release: CliCommand = {
  name: 'release',
  usage: `  gpu-sessions release NODE [--via NODE...] [--drain-timeout S] [--dest DIR] [--dry-run] [--yes] [--json]
                                              give a node back without dropping a request: take its servers out
                                              of every gateway routing to them (on NODE and the --via nodes), wait
                                              until they are idle, then salvage with the servers stopped (into
                                              --dest, default ./salvage); exit 0 safe, 5 unsafe`,
  options: {
    via: { type: 'string', multiple: true },
    'drain-timeout': { type: 'string' },
    dest: { type: 'string' },
    'dry-run': { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
  },
  exitCodes: nodeExits({ [EXIT.ok]: 'safe', [EXIT.unsafe]: 'unsafe' }),
  async run({ args, v, g, io }) {
    if (args.length !== 1) usageError("release takes exactly one NODE (the gateways' nodes go in --via).");
    const drainS = num(v, 'drain-timeout') ?? 300;
    if (!(drainS > 0)) usageError('--drain-timeout is a positive number of seconds.');
    const node = nodeFor(args[0], g);
    const via = list(v, 'via')
      .flatMap((x) => x.split(','))
      .filter(Boolean)
      .map((x) => nodeFor(x, g));
    const { cmdRelease } = await import('../cmdRelease');
    return withPool(g, io, node, ['SIGINT'], (pool, signal) =>
      cmdRelease(
        node,
        via,
        pool,
        {
          via: via.map((x) => x.name),
          drainTimeoutS: drainS,
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
