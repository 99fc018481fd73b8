/**
 * `gpu-sessions release NODE [--via NODE...] [--drain-timeout S] [--dest DIR] [--dry-run] [--yes] [--json]`:
 * give a node back without dropping a request — take its servers out of every gateway that routes to them
 * (gateways on NODE and on the --via nodes), wait for their running requests to reach 0, then salvage it with the
 * servers stopped (core/flows/release.ts). Exit: the salvage's (0 safe, 5 unsafe); 0 for --dry-run.
 * The gateways are never stopped.
 */
import { Salvager } from '../core/flows/salvage';
import type { NodeSpec } from '../core/ssh/config';
import type { ConnectionPool } from '../core/ssh/pool';
import type { Transport } from '../core/ssh/transport';
import { visible } from '../core/util/terminal';
import { routingLines } from '../core/gateway/rotation';
import { ReleaseFleetNode, executeRelease, multiNodeWarnings, planRelease, releaseJson } from '../core/flows/release';
import type { CliIo } from './cliNode';

interface ReleaseCliOptions {
  via: string[];
  drainTimeoutS: number;
  dest: string;
  dryRun: boolean;
  yes: boolean;
  json: boolean;
}

export async function cmdRelease(
  node: NodeSpec,
  via: NodeSpec[],
  pool: ConnectionPool,
  o: ReleaseCliOptions,
  io: CliIo,
  signal?: AbortSignal,
): Promise<number> {
  const fleetNode = (n: NodeSpec): ReleaseFleetNode => ({ name: n.name, host: n.host, transport: pool.get(n) });
  const say = (m: string) => {
    if (!o.json) io.err(m + '\n');
  };
  const target = fleetNode(node);
  const vias = via.map(fleetNode);
  const plan = await planRelease(target, vias, signal);
  const transports = new Map<string, Transport>([
    [target.name, target.transport],
    ...vias.map((v) => [v.name, v.transport] as [string, Transport]),
  ]);

  const review: string[] = routingLines(plan.targets);
  if (!plan.targets.length)
    review.push(`No gateway on ${[node.name, ...via.map((v) => v.name)].join(', ')} routes to ${node.name}'s servers.`);
  const serverPorts = plan.servers.map((s) => ':' + s.port).join(' ') || 'none';
  review.push(`Then drain and stop ${plan.servers.length} server(s) on ${node.name} (${serverPorts}) and salvage into ${o.dest}.`);
  review.push(...multiNodeWarnings(plan));
  if (o.dryRun) {
    if (o.json)
      io.out(
        JSON.stringify(
          {
            ...releaseJson({
              node: node.name,
              gateways: plan.targets.map((tg) => ({ node: tg.node, port: tg.gateway.port, removed: tg.workers.map((w) => w.url) })),
              drained: [],
              salvage: null,
              warnings: multiNodeWarnings(plan),
            }),
            dryRun: true,
          },
          null,
          2,
        ) + '\n',
      );
    else io.out(`Dry run (nothing changed):\n${review.map((l) => '  ' + l).join('\n')}\n`);
    return 0;
  }
  if (!o.json) io.err(review.join('\n') + '\n');
  if (!o.yes && io.isTTY && io.ask) {
    const a = (await io.ask(`Release ${node.name}? [y/N] `)).trim().toLowerCase();
    if (a !== 'y' && a !== 'yes') {
      io.err('Nothing changed.\n');
      return 1;
    }
  }
  const r = await executeRelease(plan, transports, {
    drainTimeoutMs: o.drainTimeoutS * 1000,
    signal,
    onProgress: say,
    salvage: async (servers) => {
      const s = new Salvager({
        node: node.name,
        transport: target.transport,
        base: o.dest,
        roots: node.roots,
        servers,
        stopServers: true,
        signal,
        onProgress: (p) => {
          if (!o.json && (p.step === 'stop' || p.step === 'verdict')) io.err(`[${p.step}] ${p.message}\n`);
        },
      });
      const m = await s.run();
      return m ? { verdict: m.verdict, dest: m.dest } : null;
    },
  });
  if (o.json) io.out(JSON.stringify(releaseJson(r), null, 2) + '\n');
  else {
    for (const g of r.gateways)
      io.out(`Gateway :${g.port} on ${g.node}: removed ${g.removed.map((u) => visible(u)).join(', ') || 'nothing'}\n`);
    for (const d of r.drained)
      io.out(
        `Server :${d.port}: ${d.runningAtStart === null ? 'load unknown' : `${d.runningAtStart} running`} at start, drained in ${d.seconds} s\n`,
      );
    if (r.salvage) io.out(`Salvaged into ${r.salvage.dest}\n`);
    io.out(
      r.salvage?.verdict === 'safe'
        ? `VERDICT: safe to shut down ${node.name}.\n`
        : `VERDICT: NOT safe to shut down ${node.name} (see ${r.salvage?.dest ?? 'the salvage'}/SALVAGE.md).\n`,
    );
  }
  return r.salvage?.verdict === 'safe' ? 0 : 5;
}
