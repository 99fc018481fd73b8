/** `gpu-sessions history NODE`: what earlier watch runs kept. */
import { usageError } from '../cliNode';
import type { CliCommand } from '../command';
import { localExits } from '../exitCodes';

export const history: CliCommand = {
  name: 'history',
  usage: `  gpu-sessions history NODE [--json]          the samples and transitions kept by earlier watch runs`,
  options: {},
  exitCodes: localExits(),
  async run({ args, g, io }) {
    if (args.length !== 1) usageError('history takes exactly one NODE.');
    const { cmdHistory } = await import('../cmdHistory');
    return cmdHistory(args[0], { json: g.json }, io);
  },
};
