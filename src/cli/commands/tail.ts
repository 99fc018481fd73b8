/** `gpu-sessions tail NODE PATH`: follow a remote log. */
import { usageError, withNode } from '../cliNode';
import { type CliCommand, flag, num } from '../command';
import { nodeExits } from '../exitCodes';

export const tail: CliCommand = {
  name: 'tail',
  usage: `  gpu-sessions tail NODE PATH [--lines N] [--follow] [--stats] [--raw]
                                              follow a remote log; --stats prints a live one-line summary;
                                              --raw passes the log's bytes (ANSI colours) to the terminal as they are`,
  options: {
    lines: { type: 'string', short: 'n' },
    follow: { type: 'boolean', short: 'f' },
    stats: { type: 'boolean' },
    raw: { type: 'boolean' },
  },
  exitCodes: nodeExits(),
  async run({ args, v, g, io }) {
    if (args.length !== 2) usageError('tail takes NODE and PATH.');
    const n = num(v, 'lines') ?? 10;
    if (!Number.isInteger(n) || n < 0) usageError('--lines must be a whole number.');
    const { cmdTail } = await import('../cmdTail');
    return withNode(args[0], g, io, (t, _n, signal) =>
      cmdTail(
        t,
        args[1],
        { lines: n, follow: flag(v, 'follow'), stats: flag(v, 'stats'), raw: flag(v, 'raw') },
        { out: io.out, err: io.err, raw: io.raw, isTTY: process.stdout.isTTY },
        signal,
      ),
    );
  },
};
