/** MCP tool list_nodes: the ssh config's nodes. */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { listNodes } from '../../core/ssh/nodes';
import type { ToolContext } from './context';

export function registerListNodes(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'list_nodes',
    { description: 'Nodes from the ssh config (Host aliases), with host, user, port and how they are reached.', inputSchema: {} },
    async () =>
      c.guarded(async () => {
        const l = listNodes({ sshConfigFile: c.deps.sshConfig });
        return {
          nodes: l.nodes.map((n) => ({
            name: n.name,
            host: n.host,
            user: n.user ?? null,
            port: n.port,
            proxyJump: n.proxyJump ?? null,
            proxyCommand: n.proxyCommand ? true : false,
            sourceFile: n.sourceFile ?? null,
          })),
          diagnostics: l.diagnostics,
        };
      }),
  );
}
