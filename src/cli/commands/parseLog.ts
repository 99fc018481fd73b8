/** `gpu-sessions parse-log [FILE...]`: SGLang log lines → stats. */
import { type CliCommand, flag } from '../command';
import { localExits } from '../exitCodes';

export const parseLog: CliCommand = {
  name: 'parse-log',
  usage: `  gpu-sessions parse-log [FILE...] [--json | --summary]
                                              SGLang log lines → stats (stdin when no FILE)`,
  options: { summary: { type: 'boolean' } },
  exitCodes: localExits(),
  async run({ args, v, g, io }) {
    const { cmdParseLog } = await import('../cmdParseLog');
    return cmdParseLog(args, { json: g.json, summary: flag(v, 'summary') }, { out: io.out, err: io.err });
  },
};
