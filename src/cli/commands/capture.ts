/** `gpu-sessions capture NODE --out FILE`: the running servers as a launch profile. */
import * as path from 'node:path';
import { withNode } from '../cliNode';
import { type CliCommand, str } from '../command';
import { nodeExits } from '../exitCodes';
import { serverCommandOptions } from './common';

export const capture: CliCommand = {
  name: 'capture',
  usage: `  gpu-sessions capture NODE --out FILE        save the running servers as a launch profile`,
  options: { out: { type: 'string' } },
  exitCodes: nodeExits(),
  async run({ args, v, g, io }) {
    await serverCommandOptions('capture', args, v);
    const { cmdCapture } = await import('../cmdLaunch');
    return withNode(args[0], g, io, (t, node) => cmdCapture(t, node.name, { out: path.resolve(str(v, 'out')!) }, io));
  },
};
