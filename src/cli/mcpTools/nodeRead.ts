/**
 * Reading on a node for the MCP tools (probe_node, tail_log, parse_log, data_quality, salvage_*): the probe, the
 * scope an agent may read, a bounded tail.
 */
import * as path from 'node:path';
import { GpuSessionsError } from '../../core/util/errors';
import type { NodeSpec } from '../../core/ssh/config';
import type { Transport } from '../../core/ssh/transport';
import { runOperation } from '../../core/remote/operation';
import { boundedTailOperation } from '../../core/remote/boundedRead';
import { nodeReadRefusal } from '../../core/security/nodePaths';
import { probeOperation } from '../../core/node/probe';
import { LogSummarizer, parseStatLine, toJsonRecord } from '../../core/sglang/logLines';
import { MCP_RESULT_MAX_BYTES } from '../mcpResult';

export const MAX_TAIL_LINES = 2000;

export function probeNodeRaw(t: Transport, node: NodeSpec) {
  return runOperation(t, probeOperation(node.name, { roots: node.roots }));
}

/**
 * The last `lines` lines of a file the probe found (a server log or artifact) or under the node's salvage
 * roots, never a secret store: a regular file only, bounded per line and in bytes, checked again at its real path.
 */
export async function readTail(
  t: Transport,
  spec: NodeSpec,
  file: string,
  lines: number,
): Promise<{ lines: string[]; notes: string[]; truncated: boolean }> {
  const scope = await readScope(t, spec);
  const why = nodeReadRefusal(file, scope);
  if (why) throw new GpuSessionsError('usage', `tail_log refuses this path: ${why}.`);
  const r = await runOperation(t, boundedTailOperation(file, { lines, maxBytes: MCP_RESULT_MAX_BYTES, resolve: true }, 30_000));
  if (r.code !== 0)
    throw new GpuSessionsError('remote-failed', r.stderr.toString('utf8').trim().slice(0, 500) || `reading ${file} failed (${r.code})`);
  const whyReal = r.resolved && r.resolved !== file ? nodeReadRefusal(r.resolved, scope) : null;
  if (whyReal)
    throw new GpuSessionsError('usage', `tail_log refuses this path: it leads to ${JSON.stringify(r.resolved)}, and ${whyReal}.`);
  const out = r.text.split('\n');
  if (out[out.length - 1] === '') out.pop();
  const notes = r.cutLines ? [`${r.cutLines} line(s) longer than 64 KiB were cut`] : [];
  return { lines: out.slice(-lines), notes, truncated: r.truncated || r.cutLines > 0 };
}

/**
 * What an agent may read on a node (tail_log, data_quality): the servers' logs, the probe's artifacts, and files
 * under the probe's roots, the node's configured roots and the servers' folders.
 */
export async function readScope(t: Transport, spec: NodeSpec): Promise<{ files: string[]; roots: string[] }> {
  const probe = await probeNodeRaw(t, spec);
  return {
    files: [...probe.servers.map((s) => s.logFile ?? ''), ...probe.artifacts.map((a) => a.path)].filter(Boolean),
    roots: [
      ...probe.roots,
      ...(spec.roots ?? []),
      ...probe.servers.flatMap((s) => [s.cwd ?? '', s.logFile ? path.posix.dirname(s.logFile) : '']),
    ].filter(Boolean),
  };
}

/** Log lines → the summary and the last stat lines (parse_log). */
export function summarize(lines: string[]): Record<string, unknown> {
  const s = new LogSummarizer();
  const stats: unknown[] = [];
  for (const l of lines) {
    s.add(l);
    const st = parseStatLine(l);
    if (st) stats.push(toJsonRecord(st));
  }
  return { summary: s.summary(), lastStats: stats.slice(-20), statLines: stats.length };
}
