/**
 * `gpu-sessions mcp`: a Model Context Protocol server over stdio (the official SDK), so a coding agent
 * drives nodes through the same core as the CLI instead of improvising scp: list_nodes, probe_node,
 * tail_log (bounded), parse_log, salvage_plan, salvage_node (only with confirm: true), salvage_status,
 * watch_node (bounded). Inputs are zod schemas; results are structured JSON, redacted at this boundary
 * (redactOutputValue), so no secret leaves in a result. Nothing stops a server or a node.
 *
 * Loaded only for `gpu-sessions mcp` (main.ts imports it lazily; the SDK is external to the bundle).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';
import { errorMessage, GpuSessionsError } from '../core/util/errors';
import { redactOutputValue } from '../core/util/redact';
import { listNodes } from '../core/ssh/nodes';
import type { NodeSpec } from '../core/ssh/config';
import type { ConnectionPool } from '../core/ssh/pool';
import type { Transport } from '../core/ssh/transport';
import { runOperation } from '../core/remote/operation';
import { RemoteTail } from '../core/remote/tail';
import { ProbeResult, probeOperation } from '../core/node/probe';
import { LogSummarizer, parseStatLine, toJsonRecord } from '../core/sglang/logLines';
import { Salvager, safeNodeName, SalvageManifest } from '../core/salvage/salvage';

export interface McpDeps {
  /** The ssh config the CLI was given (--ssh-config), for list_nodes. */
  sshConfig?: string;
  nodeFor(name: string): NodeSpec;
  pool: ConnectionPool;
  /** probe --json's shape. */
  probeJson(p: ProbeResult): Record<string, unknown>;
  /** watch_node: cmdWatch's JSON lines for a bounded time. */
  watch(node: NodeSpec, intervalS: number, signal: AbortSignal, out: (line: string) => void): Promise<number>;
  version: string;
}

const MAX_TAIL_LINES = 2000;
const MAX_WATCH_S = 300;

function probeNodeRaw(t: Transport, node: NodeSpec) {
  return runOperation(t, probeOperation(node.name, { roots: node.roots }));
}

/** Structured result, redacted: the same object as text (for clients without structured content). */
function result(value: Record<string, unknown>) {
  const v = redactOutputValue(value);
  return { content: [{ type: 'text' as const, text: JSON.stringify(v, null, 2) }], structuredContent: v };
}

function failure(e: unknown) {
  const v = redactOutputValue({ error: errorMessage(e), code: e instanceof GpuSessionsError ? e.code : 'error' });
  return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(v) }], structuredContent: v };
}

async function guarded(fn: () => Promise<Record<string, unknown>>) {
  try {
    return result(await fn());
  } catch (e) {
    return failure(e);
  }
}

/** The last `lines` lines of a remote file (a tail that stops once its backlog is in; bounded in time). */
async function readTail(t: Transport, file: string, lines: number): Promise<{ lines: string[]; notes: string[] }> {
  const out: string[] = [];
  const notes: string[] = [];
  const tail = new RemoteTail(t, { files: [file], initialLines: lines, reconnect: false });
  tail.on('event', (e) => {
    if (e.type === 'line') out.push(e.line);
    else notes.push(`${e.kind}: ${e.message}`);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      tail.start(),
      new Promise((_r, rej) => {
        timer = setTimeout(() => rej(new GpuSessionsError('timeout', `Reading ${file} took longer than 30 s.`)), 30_000);
      }),
    ]);
    // The backlog is printed; let the last chunk arrive.
    await new Promise((r) => setTimeout(r, 200));
  } finally {
    if (timer) clearTimeout(timer);
    tail.stop();
  }
  return { lines: out.slice(-lines), notes };
}

function summarize(lines: string[]): Record<string, unknown> {
  const s = new LogSummarizer();
  const stats: unknown[] = [];
  for (const l of lines) {
    s.add(l);
    const st = parseStatLine(l);
    if (st) stats.push(toJsonRecord(st));
  }
  return { summary: s.summary(), lastStats: stats.slice(-20), statLines: stats.length };
}

/** The newest salvage run folder of a node under dest, with its manifest. */
function latestRun(dest: string, node: string): { dir: string; manifest: SalvageManifest } | null {
  const base = path.join(dest, safeNodeName(node));
  if (!existsSync(base)) return null;
  const runs = readdirSync(base)
    .filter((d) => existsSync(path.join(base, d, 'salvage-manifest.json')))
    .sort((a, b) => statSync(path.join(base, b)).mtimeMs - statSync(path.join(base, a)).mtimeMs);
  if (!runs.length) return null;
  const dir = path.join(base, runs[0]);
  return { dir, manifest: JSON.parse(readFileSync(path.join(dir, 'salvage-manifest.json'), 'utf8')) as SalvageManifest };
}

function verdictOf(m: SalvageManifest, dir: string): Record<string, unknown> {
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

export function buildMcpServer(d: McpDeps): McpServer {
  const server = new McpServer({ name: 'gpu-sessions', version: d.version });
  const node = z.string().min(1).max(256).describe('Host alias from ssh config, or [user@]host[:port]');
  const withNode = async <T>(name: string, fn: (t: Transport, spec: NodeSpec) => Promise<T>): Promise<T> => {
    const spec = d.nodeFor(name);
    return fn(d.pool.get(spec), spec);
  };

  server.registerTool(
    'list_nodes',
    { description: 'Nodes from the ssh config (Host aliases), with host, user, port and how they are reached.', inputSchema: {} },
    async () =>
      guarded(async () => {
        const l = listNodes({ sshConfigFile: d.sshConfig });
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

  server.registerTool(
    'probe_node',
    {
      description: "A node's GPUs, SGLang servers (port, model, flags, log file) and artifacts, in one SSH round trip.",
      inputSchema: { node },
    },
    async ({ node: n }) => guarded(() => withNode(n, async (t, spec) => d.probeJson(await probeNodeRaw(t, spec)))),
  );

  server.registerTool(
    'tail_log',
    {
      description: `The last lines of a file on a node (at most ${MAX_TAIL_LINES}).`,
      inputSchema: {
        node,
        path: z.string().min(1).max(4096).describe('Absolute path on the node'),
        lines: z.number().int().min(1).max(MAX_TAIL_LINES).default(200),
      },
    },
    async ({ node: n, path: p, lines }) =>
      guarded(() =>
        withNode(n, async (t) => {
          const r = await readTail(t, p, lines);
          return { node: n, path: p, lines: r.lines, count: r.lines.length, notes: r.notes };
        }),
      ),
  );

  server.registerTool(
    'parse_log',
    {
      description:
        'SGLang log lines → typed stats (throughput, running/queued requests, accept length) and a summary per rank with errors ' +
        'and readiness. Give `text`, or `node` and `path` (the last `lines` lines are read).',
      inputSchema: {
        text: z
          .string()
          .max(4 * 1024 * 1024)
          .optional(),
        node: node.optional(),
        path: z.string().min(1).max(4096).optional(),
        lines: z.number().int().min(1).max(MAX_TAIL_LINES).default(500),
      },
    },
    async ({ text, node: n, path: p, lines }) =>
      guarded(async () => {
        if (text !== undefined) return summarize(text.split(/\r?\n/));
        if (!n || !p) throw new GpuSessionsError('usage', 'parse_log needs `text`, or `node` and `path`.');
        const r = await withNode(n, (t) => readTail(t, p, lines));
        return { node: n, path: p, ...summarize(r.lines) };
      }),
  );

  server.registerTool(
    'salvage_plan',
    {
      description:
        'What a salvage of the node would save, and what it would leave on the node and why (large files, caches, ' +
        're-downloadable weights, secret stores). Downloads nothing.',
      inputSchema: { node },
    },
    async ({ node: n }) =>
      guarded(() =>
        withNode(n, async (t, spec) => {
          const probe = await probeNodeRaw(t, spec);
          const tmp = mkdtempSync(path.join(os.tmpdir(), 'gpu-sessions-plan-'));
          try {
            const s = new Salvager({ node: spec.name, transport: t, base: tmp, roots: spec.roots, servers: probe.servers });
            const items = await s.plan();
            const pick = (i: (typeof items)[number]) => ({
              remotePath: i.remotePath,
              kind: i.kind,
              size: i.size,
              reason: i.reason ?? null,
            });
            return {
              node: spec.name,
              roots: s.manifest.roots,
              save: items.filter((i) => i.selected).map(pick),
              leave: items.filter((i) => !i.selected).map((i) => ({ ...pick(i), leftReason: i.leftReason ?? null })),
              stillRunning: s.manifest.writers.map((w) => ({ pid: w.pid, server: w.server, writes: w.writes })),
            };
          } finally {
            rmSync(tmp, { recursive: true, force: true });
          }
        }),
      ),
  );

  server.registerTool(
    'salvage_node',
    {
      description:
        'Download everything of value from the node into dest/<node>/<timestamp>/, verify it, and say whether the node is safe to ' +
        'shut down. Requires confirm: true. Stops nothing on the node.',
      inputSchema: {
        node,
        dest: z.string().min(1).max(4096).describe('Local folder (absolute)'),
        confirm: z.boolean().describe('Must be true: the salvage writes into dest and takes time'),
      },
    },
    async ({ node: n, dest, confirm }) =>
      guarded(async () => {
        if (confirm !== true) throw new GpuSessionsError('usage', 'salvage_node downloads into dest: call it again with confirm: true.');
        if (!path.isAbsolute(dest)) throw new GpuSessionsError('usage', `dest must be an absolute folder (got "${dest}").`);
        return withNode(n, async (t, spec) => {
          const probe = await probeNodeRaw(t, spec);
          const s = new Salvager({ node: spec.name, transport: t, base: dest, roots: spec.roots, servers: probe.servers });
          const m = (await s.run())!; // no review: the preselection
          return { node: spec.name, ...verdictOf(m, s.dir) };
        });
      }),
  );

  server.registerTool(
    'salvage_status',
    {
      description: 'The latest salvage of a node under dest: verdict, reasons, what would be lost, report path.',
      inputSchema: { node, dest: z.string().min(1).max(4096) },
    },
    async ({ node: n, dest }) =>
      guarded(async () => {
        const r = latestRun(dest, n);
        if (!r) return { node: n, verdict: null, message: `No salvage of ${n} under ${dest}.` };
        return { node: n, ...verdictOf(r.manifest, r.dir) };
      }),
  );

  server.registerTool(
    'watch_node',
    {
      description: `Watch a node for durationS seconds (at most ${MAX_WATCH_S}): server states and their transitions (starting, ready, serving, stalled, crashed, ...), the last sample.`,
      inputSchema: {
        node,
        durationS: z.number().min(1).max(MAX_WATCH_S).default(20),
        intervalS: z.number().min(1).max(60).default(5),
      },
    },
    async ({ node: n, durationS, intervalS }) =>
      guarded(async () => {
        const spec = d.nodeFor(n);
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), durationS * 1000);
        const transitions: unknown[] = [];
        let last: unknown = null;
        let samples = 0;
        try {
          await d.watch(spec, intervalS, ac.signal, (line) => {
            let o: { type?: string } | null = null;
            try {
              o = JSON.parse(line) as { type?: string };
            } catch {
              return;
            }
            if (o && o.type === 'transition') transitions.push(o);
            else if (o) {
              last = o;
              samples++;
            }
          });
        } finally {
          clearTimeout(timer);
        }
        return { node: n, durationS, samples, transitions, last };
      }),
  );
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
