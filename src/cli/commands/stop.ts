/** `gpu-sessions stop NODE --port PORT [--drain]`: stop a server. */
import { withNode } from '../cliNode';
import { type CliCommand, flag } from '../command';
import { nodeExits } from '../exitCodes';
import { serverCommandOptions } from './common';

/** --port and --drain (stop, restart); --drain-timeout with them. */
export const serverOptions = {
  port: { type: 'string' },
  drain: { type: 'boolean' },
  'drain-timeout': { type: 'string' },
} as const;

export const stop: CliCommand = {
  name: 'stop',
  usage: `  gpu-sessions stop NODE --port PORT [--drain] stop a server (optionally after its running requests finish)`,
  options: serverOptions,
  exitCodes: nodeExits(),
  async run({ args, v, g, io }) {
    const o = await serverCommandOptions('stop', args, v);
    const { cmdStop } = await import('../cmdLaunch');
    return withNode(args[0], g, io, (t, node, signal) =>
      cmdStop(t, node.name, { port: o.port, drain: flag(v, 'drain'), json: g.json, drainTimeoutS: o.drainS }, io, signal),
    );
  },
};
