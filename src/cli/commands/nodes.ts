/** `gpu-sessions nodes`: the nodes of the ssh config. */
import { listNodes } from '../../core/ssh/nodes';
import type { CliCommand } from '../command';
import { localExits } from '../exitCodes';

export const nodes: CliCommand = {
  name: 'nodes',
  usage: `  gpu-sessions nodes [--json]                 list nodes from ssh config`,
  options: {},
  exitCodes: localExits(),
  async run({ g, io }) {
    const listing = listNodes({ sshConfigFile: g.sshConfig });
    for (const d of listing.diagnostics) io.err(`warning: ${d.file}:${d.line}: ${d.message}\n`);
    if (g.json) {
      io.out(
        JSON.stringify(
          listing.nodes.map((n) => ({ name: n.name, host: n.host, user: n.user ?? null, port: n.port, proxyJump: n.proxyJump ?? null })),
          null,
          2,
        ) + '\n',
      );
    } else if (listing.nodes.length === 0) {
      io.out(`No nodes. Add Host entries to ${g.sshConfig ?? '~/.ssh/config'} or gpuSessions.nodes in VS Code settings.\n`);
    } else {
      for (const n of listing.nodes)
        io.out(`${n.name}\t${n.user ? n.user + '@' : ''}${n.host}:${n.port}${n.proxyJump ? `\tvia ${n.proxyJump}` : ''}\n`);
    }
    return 0;
  },
};
