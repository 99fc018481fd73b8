/** `gpu-sessions launch NODE --profile FILE`: start a launch profile's servers and wait until they are ready. */
import * as path from 'node:path';
import { withNode } from '../cliNode';
import { type CliCommand, flag, str } from '../command';
import { EXIT, nodeExits } from '../exitCodes';
import { serverCommandOptions } from './common';

export const launch: CliCommand = {
  name: 'launch',
  usage: `  gpu-sessions launch NODE --profile FILE [--dry-run] [--override] [--ready-timeout S] [--secret NAME=@FILE] [--json]
                                              start a launch profile's servers and wait until they are ready
                                              (--dry-run prints the exact script and the preflight's findings
                                              as warnings, starts nothing, exits 0 for a valid profile);
                                              secrets the profile refers to come from --secret NAME=@FILE
                                              or the environment variable NAME`,
  options: {
    profile: { type: 'string' },
    'dry-run': { type: 'boolean' },
    override: { type: 'boolean' },
    'ready-timeout': { type: 'string' },
    secret: { type: 'string', multiple: true },
  },
  exitCodes: nodeExits({
    [EXIT.usage]: 'usage or invalid profile',
    [EXIT.refused]: 'launch refused by preflight',
    [EXIT.notReady]: 'a launched instance did not become ready',
  }),
  async run({ args, v, g, io }) {
    const o = await serverCommandOptions('launch', args, v);
    const { cmdLaunch } = await import('../cmdLaunch');
    return withNode(args[0], g, io, (t, node, signal) =>
      cmdLaunch(
        t,
        node.name,
        {
          profileFile: path.resolve(str(v, 'profile')!),
          dryRun: flag(v, 'dry-run'),
          json: g.json,
          override: flag(v, 'override'),
          timeoutS: o.readyS,
          secretFiles: o.secretFiles,
        },
        io,
        signal,
      ),
    );
  },
};
