/** `gpu-sessions mcp`: the MCP server over stdio. The SDK loads only here (not on the CLI's startup path). */
import * as path from 'node:path';
import { type CliIo, makePool, nodeFor, probeJson, usageError } from '../cliNode';
import { type CliCommand, list } from '../command';
import { localExits } from '../exitCodes';

export const mcp: CliCommand = {
  name: 'mcp',
  usage: `  gpu-sessions mcp [--mcp-dest DIR]...        Model Context Protocol server over stdio for coding agents (tools:
                                              list_nodes, probe_node, tail_log, parse_log, salvage_plan,
                                              salvage_node, release_node and end_rental with confirm: true, salvage_status, watch_node,
                                              data_quality, restore_plan, restore_run with confirm: true);
                                              salvage_node writes only under --mcp-dest (default: current folder)`,
  options: { 'mcp-dest': { type: 'string', multiple: true } },
  exitCodes: localExits(),
  async run({ args, v, g, io }) {
    if (args.length) usageError('mcp takes no arguments (it speaks MCP over stdin/stdout).');
    const destRoots = list(v, 'mcp-dest').map((d) => path.resolve(d));
    const { runMcpServer } = await import('../mcp');
    const { cmdWatch, tuningFromEnv } = await import('../cmdWatch');
    // stdout is the protocol: everything else goes to stderr, and no host key is accepted without a prompt.
    const quiet: CliIo = { out: (s) => io.err(s), err: (s) => io.err(s), isTTY: false };
    const pool = makePool({ ...g, acceptNew: g.acceptNew }, quiet);
    try {
      return await runMcpServer({
        sshConfig: g.sshConfig,
        nodeFor: (name) => nodeFor(name, g),
        destRoots,
        pool,
        freshTransport: (node) => makePool({ ...g, acceptNew: false }, quiet, node).get(node),
        probeJson,
        version: '0.1.0',
        watch: (node, intervalS, signal, out) =>
          cmdWatch(
            [node],
            pool,
            { json: true, intervalS, until: null, tuning: tuningFromEnv(), historyDir: null },
            { out, err: () => undefined },
            signal,
          ),
      });
    } finally {
      pool.dispose();
    }
  },
};
