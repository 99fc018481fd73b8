/** MCP tool salvage_status: the latest salvage of a node under dest (its verdict, reasons, losses, report). */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import * as path from 'node:path';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { MANIFEST_FILE, parseManifest, safeNodeName, type SalvageManifest } from '../../core/flows/salvage';
import type { ToolContext } from './context';

export function registerSalvageStatus(server: McpServer, c: ToolContext): void {
  server.registerTool(
    'salvage_status',
    {
      description: 'The latest salvage of a node under dest: verdict, reasons, what would be lost, report path.',
      inputSchema: { node: c.node, dest: z.string().min(1).max(4096) },
    },
    async ({ node: n, dest }) =>
      c.guarded(async () => {
        const r = latestRun(c.destUnder(dest), n);
        if (!r) return { node: n, verdict: null, message: `No salvage of ${n} under ${dest}.` };
        return { node: n, ...verdictOf(r.manifest, r.dir) };
      }),
  );
}

/** The newest salvage run folder of a node under dest, with its manifest. */
function latestRun(dest: string, node: string): { dir: string; manifest: SalvageManifest } | null {
  const base = path.join(dest, safeNodeName(node));
  if (!existsSync(base)) return null;
  const runs = readdirSync(base)
    .filter((d) => existsSync(path.join(base, d, MANIFEST_FILE)))
    .sort((a, b) => statSync(path.join(base, b)).mtimeMs - statSync(path.join(base, a)).mtimeMs);
  if (!runs.length) return null;
  const dir = path.join(base, runs[0]);
  const file = path.join(dir, MANIFEST_FILE);
  return { dir, manifest: parseManifest(readFileSync(file, 'utf8'), file) };
}

/** A salvage's verdict as salvage_node and salvage_status answer it. */
export function verdictOf(m: SalvageManifest, dir: string): Record<string, unknown> {
  return {
    verdict: m.verdict,
    reasons: m.reasons,
    reasonDetails: m.reasonDetails,
    lost: m.lost.slice(0, 50),
    lostCount: m.lost.length,
    dest: m.dest ?? dir,
    report: path.join(m.dest ?? dir, 'SALVAGE.md'),
    manifest: path.join(m.dest ?? dir, 'salvage-manifest.json'),
    finishedAt: m.finishedAt,
    stats: m.stats,
  };
}
