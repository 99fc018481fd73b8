/**
 * `gpu-sessions demo --fleet [DIR] [--keep] [--no-salvage] [--dest DIR] [--json]`: the demo as a fleet —
 * two embedded demo nodes (gpu-demo-a, gpu-demo-b; simulated 4× B200 each), two one-GPU SGLang servers on each, a
 * multi-node server (`--tp-size 4 --nnodes 2`: rank 0 on a, rank 1 on b, GPUs 2-3 of each), and the simulated
 * SGLang Model Gateway on a routing to the four one-GPU servers. It probes both nodes (the Gateway, the workers
 * mapped to their nodes, the multi-node server as one), then releases gpu-demo-b the safe way (`release
 * gpu-demo-b --via gpu-demo-a`: out of rotation, drained, salvaged with its servers stopped) — the main job of a
 * fleet. Everything is started over the demo nodes' own SSH, as a user would; everything stops with the demo.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { writeFileSync, readFileSync, existsSync } from 'node:fs';
import type { DemoNode } from '../sim/demoServer';
import { shq } from '../core/util/quote';
import { formatProbe } from './format';
import { CliIo, GlobalOpts, makePool, nodeFor, probeJson, probeNode } from './cliNode';

const FLEET_ALIASES = ['gpu-demo-a', 'gpu-demo-b'] as const;

interface FleetDemoOptions {
  keep: boolean;
  salvage: boolean;
  dest?: string;
}

const read = (f: string) => (existsSync(f) ? readFileSync(f, 'utf8') : '');

/** Bounded wait for a condition on the demo's own files (they are local: the demo node is this machine). On a
 * timeout the error ends with the last lines of `log`, so that a server that could not start says why. */
async function until(what: string, ok: () => boolean, ms: number, log?: string): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) {
      const tail = log ? read(log).trimEnd().split('\n').slice(-5).join('\n') : '';
      throw new Error(`The fleet demo timed out waiting for ${what}.` + (tail ? `\nThe last lines of ${log}:\n${tail}` : ''));
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

const READY = 'The server is fired up and ready to roll!';

export async function cmdDemoFleet(args: string[], g: GlobalOpts, io: CliIo, o: FleetDemoOptions): Promise<number> {
  const { startDemoNode, findFreePortBlock } = await import('../sim/demoServer');
  const dir = path.resolve(args[0] ?? path.join(os.tmpdir(), `gpu-sessions-demo-fleet-${os.userInfo().uid}`));
  io.err(`Starting a two-node demo fleet in ${dir} (2 × simulated 4x NVIDIA B200, a multi-node server, a gateway) ...\n`);
  const nodes: DemoNode[] = [];
  /** What to stop at the end, in reverse order of starting: the nodes, then the gateway. */
  const stops: Array<() => Promise<void>> = [];
  const say = (m: string) => io.err(m + '\n');
  try {
    const sim = { gpuCount: 4, serverCount: 2 };
    // one after the other: each picks its own free block of server ports
    for (const alias of FLEET_ALIASES) {
      const n = await startDemoNode({ dir: path.join(dir, alias), alias, sim, log: say });
      nodes.push(n);
      stops.push(() => n.stop());
      // its servers bind their ports before they are ready: wait, so that the next free-port search cannot pick them
      for (const f of n.layout.logFiles) await until(`the one-GPU servers of ${alias}`, () => read(f).includes(READY), 60_000, f);
    }
    const [a, b] = nodes;
    const sshConfig = path.join(dir, 'ssh_config');
    const knownHosts = path.join(dir, 'known_hosts');
    writeFileSync(sshConfig, nodes.map((n) => read(n.sshConfigFile)).join('\n'), { mode: 0o600 });
    writeFileSync(knownHosts, nodes.map((n) => read(n.knownHostsFile)).join(''), { mode: 0o600 });
    const dg: GlobalOpts = { ...g, sshConfig, knownHosts };
    const pool = makePool(dg, io);
    const specs = FLEET_ALIASES.map((n) => nodeFor(n, dg));
    try {
      const [mnA, mnB, rendezvous, gwPort, gwMetrics] = await findFreePortBlock(29000 + 5 * Math.floor(Math.random() * 200), 5).then(
        (p) => [p, p + 1, p + 2, p + 3, p + 4],
      );
      // the multi-node server: one rank per node, as a user starts it (the same flags, its own rank)
      for (const [i, n] of nodes.entries()) {
        const cmd =
          `. "$HOME/venv/bin/activate"; cd "$HOME"; CUDA_VISIBLE_DEVICES=2,3 setsid nohup python3 -m sglang.launch_server ` +
          `--model-path ${shq(n.layout.modelPath)} --port ${i === 0 ? mnA : mnB} --host 127.0.0.1 --tp-size 4 --nnodes 2 ` +
          `--node-rank ${i} --dist-init-addr 127.0.0.1:${rendezvous} > "$HOME/logs/multinode_rank${i}.log" 2>&1 < /dev/null & echo started`;
        const r = await pool.get(specs[i]).exec(cmd, { timeoutMs: 20_000 });
        if (!r.stdout.toString('utf8').includes('started'))
          throw new Error(`rank ${i} of the multi-node server did not start: ${r.stderr.toString('utf8').trim()}`);
      }
      // the gateway on gpu-demo-a, over both nodes' one-GPU servers (its title hides its flags, as sglang-router's does)
      const urls = [...a.layout.ports, ...b.layout.ports].map((p) => `http://127.0.0.1:${p}`);
      const gw = await pool
        .get(specs[0])
        .exec(
          `. "$HOME/venv/bin/activate"; cd "$HOME"; SMG_SIM_PROFILE=smg-1.x setsid nohup python3 -m sglang_router.launch_router ` +
            `--host 127.0.0.1 --port ${gwPort} --prometheus-port ${gwMetrics} --health-check-interval-secs 5 --drain-settle-secs 1 ` +
            `--worker-urls ${urls.join(' ')} > "$HOME/gateway.log" 2>&1 < /dev/null & echo "pid $!"`,
          { timeoutMs: 20_000 },
        );
      const gwPid = Number(/pid (\d+)/.exec(gw.stdout.toString('utf8'))?.[1] ?? NaN);
      if (!Number.isFinite(gwPid)) throw new Error(`the gateway did not start: ${gw.stderr.toString('utf8').trim()}`);
      stops.push(async () => safeKill(gwPid));
      say(`Waiting for the servers, the multi-node server's two ranks and the gateway ...`);
      const rank0 = path.join(a.home, 'logs', 'multinode_rank0.log');
      const rank1 = path.join(b.home, 'logs', 'multinode_rank1.log');
      await until('rank 0 of the multi-node server', () => read(rank0).includes(READY), 60_000, rank0);
      await until('rank 1', () => read(rank1).includes('Dummy health check server started'), 60_000, rank1);
      say(
        `Fleet ready: ${FLEET_ALIASES.join(', ')}; gateway :${gwPort} on gpu-demo-a; multi-node server :${mnA} (rank 0 on gpu-demo-a).\n` +
          `  ssh config:  ${sshConfig}\n  known_hosts: ${knownHosts}\n` +
          `  try:         node dist/cli.js --ssh-config ${sshConfig} --known-hosts ${knownHosts} watch ${FLEET_ALIASES.join(' ')}\n`,
      );
      const probes = await Promise.all(specs.map((s) => probeNode(s, pool)));
      if (g.json && !o.salvage)
        io.out(
          JSON.stringify(
            probes.map((p) => probeJson(p)),
            null,
            2,
          ) + '\n',
        );
      else if (!g.json) for (const p of probes) io.out(formatProbe(p) + '\n');
      let code = 0;
      if (o.salvage) {
        say(`\nThe job moves off gpu-demo-b: releasing it from the fleet (out of rotation, drained, salvaged) ...`);
        await b.finishJob();
        const { cmdRelease } = await import('./cmdRelease');
        code = await cmdRelease(
          specs[1],
          [specs[0]],
          pool,
          { via: [FLEET_ALIASES[0]], drainTimeoutS: 60, dest: o.dest ?? path.join(dir, 'release'), dryRun: false, yes: true, json: g.json },
          io,
        );
      }
      if (o.keep) {
        say('The fleet is running. Press Ctrl-C to stop it.');
        await new Promise<void>((resolve) => {
          process.once('SIGINT', () => resolve());
          process.once('SIGTERM', () => resolve());
        });
      }
      // informative, as the one-node demo: 5 (unsafe) would read as a failure of the demo itself
      return code === 5 ? 0 : code;
    } finally {
      pool.dispose();
    }
  } finally {
    // the gateway first (it would health-check servers going away), then the nodes
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

function safeKill(pid: number): void {
  try {
    process.kill(pid, 'SIGTERM');
  } catch {
    /* gone */
  }
}
