/** `gpu-sessions data NODE [PATH...]`: is the generation output any good? Judged on the node. */
import { usageError, withNode } from '../cliNode';
import type { CliCommand } from '../command';
import { EXIT, nodeExits } from '../exitCodes';

export const data: CliCommand = {
  name: 'data',
  usage: `  gpu-sessions data NODE [PATH...] [--json] [--sample N] [--response-field PTR] [--prompt-field PTR]
                 [--thresholds NAME=SHARE,...]
                                              is the generation output any good? judges each output file on the
                                              node (empty, thinking-only, cut, repeated, looping answers) without
                                              copying it; exit 7 when any file is degenerate`,
  options: {
    sample: { type: 'string' },
    'response-field': { type: 'string' },
    'prompt-field': { type: 'string' },
    thresholds: { type: 'string' },
  },
  exitCodes: nodeExits({ [EXIT.notReady]: 'a file is degenerate' }),
  async run({ args, v, g, io }) {
    if (args.length < 1) usageError('data takes NODE and optional PATHs.');
    const { dataCliOptions, cmdData } = await import('../cmdData');
    const o = dataCliOptions(v, g.json, args.slice(1), usageError);
    return withNode(args[0], g, io, (t, node, signal) => cmdData(t, node.name, { ...o, roots: node.roots }, io, signal));
  },
};
