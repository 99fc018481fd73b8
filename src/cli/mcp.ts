/**
 * `gpu-sessions mcp`: a Model Context Protocol server over stdio (the official SDK), so a coding agent
 * drives nodes through the same core as the CLI instead of improvising scp. Its tools live one per file in
 * mcpTools/ (list_nodes, probe_node, data_quality, tail_log, parse_log, salvage_plan, salvage_node, release_node,
 * salvage_status, restore_plan, restore_run, guard_status, guard_start, guard_stop, end_rental, watch_node); every
 * tool that changes anything requires confirm: true.
 * Inputs are zod schemas; results are structured JSON, redacted at this boundary (redactOutputValue), so no secret
 * leaves in a result, made inert (controls escaped) and bounded in bytes (mcpResult.ts). tail_log reads only the
 * node's logs, artifacts and files under its salvage roots, never a device or FIFO; salvage_node writes only under
 * the dest roots given at start-up. Nothing stops a server except release_node (confirm: true), which stops the
 * servers it released.
 *
 * Loaded only for `gpu-sessions mcp` (commands/mcp.ts imports it lazily; the SDK is external to the bundle).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { type McpDeps, toolContext } from './mcpTools/context';
import { MCP_TOOLS } from './mcpTools';

export function buildMcpServer(d: McpDeps): McpServer {
  const server = new McpServer({ name: 'gpu-sessions', version: d.version });
  const c = toolContext(d);
  for (const register of MCP_TOOLS) register(server, c);
  return server;
}

export async function runMcpServer(d: McpDeps): Promise<number> {
  const server = buildMcpServer(d);
  const transport = new StdioServerTransport();
  await server.connect(transport);
  await new Promise<void>((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.close().catch(() => undefined);
  return 0;
}
