/** `gpu-sessions watch NODE...`: poll nodes; a line per sample and per transition. */
import { nodeFor, usageError } from '../cliNode';
import { type CliCommand, flag, num, str } from '../command';
import { EXIT, nodeExits } from '../exitCodes';
import { ownTerms, withPool } from './common';

const UNTIL = ['done', 'crashed', 'unhealthy', 'any'] as const;

export const watch: CliCommand = {
  name: 'watch',
  usage: `  gpu-sessions watch NODE... [--json] [--interval SECONDS] [--until done|crashed|unhealthy|any]
                 [--price-per-hour USD] [--deadline ISO-8601] [--data PATH[,PATH] | --no-data]
                                              poll nodes; one line per sample and per transition (server
                                              states, failures, lost GPUs, full disks, job done, spend; the
                                              provider's price and end unless the flags are given)`,
  options: {
    interval: { type: 'string' },
    until: { type: 'string' },
    'price-per-hour': { type: 'string' },
    deadline: { type: 'string' },
    'deadline-lead': { type: 'string' },
    data: { type: 'string' },
    'no-data': { type: 'boolean' },
  },
  exitCodes: nodeExits({ [EXIT.unreachableFirst]: 'watch --until: a node became unreachable first' }),
  async run({ args, v, g, io }) {
    if (args.length === 0) usageError('watch takes one or more NODEs.');
    const intervalS = num(v, 'interval') ?? 5;
    if (!(intervalS >= 0.5 && intervalS <= 86_400)) usageError('--interval is a number of seconds from 0.5 to 86400.');
    const until = str(v, 'until');
    if (until !== undefined && !(UNTIL as readonly string[]).includes(until))
      usageError(`--until must be done, crashed, unhealthy or any (got "${until}").`);
    const own = ownTerms(v);
    if (v.data !== undefined && v['no-data']) usageError('--data and --no-data do not go together.');
    const leadMin = num(v, 'deadline-lead') ?? 30;
    if (!(leadMin >= 0)) usageError('--deadline-lead is a number of minutes.');
    const nodes = [...new Set(args)].map((n) => nodeFor(n, g));
    const data = str(v, 'data');
    return withPool(g, io, nodes[0], ['SIGINT', 'SIGTERM'], async (pool, signal) => {
      const { cmdWatch, tuningFromEnv } = await import('../cmdWatch');
      const { defaultHistoryDir } = await import('../../core/node/history');
      return cmdWatch(
        nodes,
        pool,
        {
          json: g.json,
          intervalS,
          until: (until as (typeof UNTIL)[number] | undefined) ?? null,
          tuning: tuningFromEnv(),
          // the flags' terms; without them the provider's, where the node can tell (read after the first probe)
          terms: { own, leadMs: leadMin * 60_000 },
          historyDir: defaultHistoryDir(),
          data: flag(v, 'no-data') ? null : { paths: typeof data === 'string' ? data.split(',').filter(Boolean) : [], roots: g.roots },
        },
        io,
        signal,
      );
    });
  },
};
