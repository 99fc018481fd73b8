/** `gpu-sessions resolve NODE`: what GPU Sessions will connect to, in ssh -G's field names. */
import type { CliCommand } from '../command';
import { localExits } from '../exitCodes';

export const resolve: CliCommand = {
  name: 'resolve',
  usage: `  gpu-sessions resolve NODE [--json]          what GPU Sessions will connect to, in ssh -G's field names (host name,
                                              port, user, identity files, each ProxyJump hop, ProxyCommand,
                                              known_hosts files, host key alias): compare with 'ssh -G NODE'`,
  options: {},
  exitCodes: localExits(),
  async run({ args, g, io }) {
    const { cmdResolve } = await import('../cmdResolve');
    return cmdResolve(args, g, io);
  },
};
