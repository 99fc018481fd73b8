/** `gpu-sessions guard NODE start|status|stop`: the guard that runs on the node while the laptop sleeps. */
import { usageError, withNode } from '../cliNode';
import type { CliCommand } from '../command';
import { EXIT, nodeExits } from '../exitCodes';

export const guard: CliCommand = {
  name: 'guard',
  usage: `  gpu-sessions guard NODE start (--s3 s3://bucket/prefix [--s3-endpoint URL] | --to DIR_ON_NODE) [--interval S]
                 [--data PATHS] [--when-done notify|stop|terminate] [--idle MIN] [--until ISO] [--yes] [--json]
                 [--thresholds NAME=SHARE,...] [--stop-client-on-bad-data]
  gpu-sessions guard NODE status [--json]     guard NODE stop [--json]
                                              a guard that runs ON the node while the laptop sleeps: every interval
                                              it copies new and changed work files (salvage's rules) to S3 or a
                                              folder on the node, verified by SHA-256, checks the data, and acts
                                              when the job is done, at --until or on a shutdown; exit 10 not started`,
  options: {
    s3: { type: 'string' },
    's3-endpoint': { type: 'string' },
    to: { type: 'string' },
    interval: { type: 'string' },
    data: { type: 'string' },
    'when-done': { type: 'string' },
    idle: { type: 'string' },
    until: { type: 'string' },
    yes: { type: 'boolean', short: 'y' },
    thresholds: { type: 'string' },
    'stop-client-on-bad-data': { type: 'boolean' },
  },
  exitCodes: nodeExits({ [EXIT.guardNotStarted]: 'guard not started' }),
  async run({ args, v, g, io }) {
    const sub = args[1];
    if (args.length !== 2 || !['start', 'status', 'stop'].includes(sub ?? ''))
      usageError('guard takes NODE and start, status or stop (gpu-sessions guard NODE start --to DIR_ON_NODE).');
    const G = await import('../cmdGuard');
    if (sub === 'start') {
      const o = (await import('../../core/flows/guard')).guardStartOptions(v, g.json, usageError);
      return withNode(args[0], g, io, (t, node, signal) => G.cmdGuardStart(t, node.name, { ...o, roots: node.roots }, io, signal));
    }
    return withNode(args[0], g, io, (t, node, signal) =>
      sub === 'status' ? G.cmdGuardStatus(t, node.name, g.json, io, signal) : G.cmdGuardStop(t, node.name, g.json, io, signal),
    );
  },
};
