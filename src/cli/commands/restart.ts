/** `gpu-sessions restart NODE --port PORT [--drain]`: stop a server and start it again with the same command line. */
import { withNode } from '../cliNode';
import { type CliCommand, flag } from '../command';
import { EXIT, nodeExits } from '../exitCodes';
import { serverCommandOptions } from './common';
import { serverOptions } from './stop';

export const restart: CliCommand = {
  name: 'restart',
  usage: `  gpu-sessions restart NODE --port PORT [--drain]
                                              stop a server and start it again with the same command line`,
  options: { ...serverOptions, 'ready-timeout': { type: 'string' } },
  exitCodes: nodeExits({ [EXIT.notReady]: 'the restarted instance did not become ready' }),
  async run({ args, v, g, io }) {
    const { port, readyS, drainS } = await serverCommandOptions('restart', args, v);
    return withNode(args[0], g, io, async (t, _node, signal) => {
      const { restartServer } = await import('../../core/launch/restart');
      const r = await restartServer(t, {
        port,
        drain: flag(v, 'drain'),
        drainTimeoutMs: drainS ? drainS * 1000 : undefined,
        readyTimeoutMs: readyS ? readyS * 1000 : undefined,
        signal,
        onProgress: g.json ? undefined : (m) => io.err(m + '\n'),
      });
      if (g.json)
        io.out(
          JSON.stringify(
            { message: r.message, stop: r.stop, outcome: r.launch?.outcome ?? null, instances: r.launch?.instances ?? [] },
            null,
            2,
          ) + '\n',
        );
      else io.out(r.message + '\n');
      return r.launch?.outcome === 'ready' ? 0 : r.launch ? EXIT.notReady : EXIT.failed;
    });
  },
};
