/**
 * `gpu-sessions demo`: the embedded demo node (simulated 7x B200), probed, then salvaged against a local S3;
 * `demo --fleet`: two demo nodes with a gateway, one released the safe way (cmdDemoFleet.ts).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { type CliIo, type GlobalOpts, makePool, nodeFor, probeJson, probeNode, usageError } from '../cliNode';
import { type CliCommand, flag, str } from '../command';
import { localExits } from '../exitCodes';
import { formatProbe } from '../format';

interface DemoOptions {
  keep: boolean;
  salvage: boolean;
  dest?: string;
  provider?: string;
  guard?: boolean;
}

export const demo: CliCommand = {
  name: 'demo',
  usage: `  gpu-sessions demo [--keep] [--no-salvage] [--dest DIR] [--provider runpod|vast|none] [--guard] [--json]
                                              start the embedded demo node (simulated 7x B200), probe it, and
                                              salvage it against a local S3 (s3rver) that holds part of its data;
                                              it plays a RunPod pod (default) or a Vast instance for end-rental;
                                              --guard: the node runs its own guard (to the local S3, else a folder)
                                              and shows it; the salvage counts what the guard verified in S3
  gpu-sessions demo --fleet [DIR] [--keep] [--no-salvage] [--dest DIR] [--json]
                                              two demo nodes (gpu-demo-a, gpu-demo-b) with a gateway and a multi-node
                                              server: probe both, then release gpu-demo-b the safe way`,
  options: {
    keep: { type: 'boolean' },
    'no-salvage': { type: 'boolean' },
    fleet: { type: 'boolean' },
    guard: { type: 'boolean' },
    dest: { type: 'string' },
    provider: { type: 'string' },
  },
  exitCodes: localExits(),
  async run({ args, v, g, io }) {
    const dest = str(v, 'dest');
    const o = { keep: flag(v, 'keep'), salvage: !v['no-salvage'], dest: dest ? path.resolve(dest) : undefined };
    if (v.fleet) {
      const { cmdDemoFleet } = await import('../cmdDemoFleet');
      return cmdDemoFleet(args, g, io, o);
    }
    return cmdDemo(args, g, io, { ...o, provider: str(v, 'provider'), guard: flag(v, 'guard') });
  },
};

/** `--keep`: the demo node runs until Ctrl-C. */
async function keepUntilSignal(io: CliIo): Promise<void> {
  io.err('Demo node is running. Press Ctrl-C to stop it.\n');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

async function cmdDemo(args: string[], g: GlobalOpts, io: CliIo, o: DemoOptions): Promise<number> {
  const { keep, salvage, dest } = o;
  const provider = o.provider ?? 'runpod';
  if (!['runpod', 'vast', 'none'].includes(provider)) usageError(`--provider is runpod, vast or none (got "${provider}").`);
  const { startDemoNode } = await import('../../sim/demoServer');
  const dir = args[0] ?? path.join(os.tmpdir(), `gpu-sessions-demo-${os.userInfo().uid}`);
  io.err(
    `Starting the demo node (simulated 7x NVIDIA B200, 7 SGLang servers${provider === 'none' ? '' : `, a ${provider} rental`}) in ${dir} ...\n`,
  );
  const demo = await startDemoNode({
    dir,
    log: (m) => io.err(m + '\n'),
    sim: { provider: provider === 'none' ? null : (provider as 'runpod' | 'vast') },
  });
  try {
    io.err(
      `Demo node "${demo.alias}" listening on 127.0.0.1:${demo.port} (host key ${demo.hostKeyFingerprint}).\n` +
        `  ssh config:  ${demo.sshConfigFile}\n  known_hosts: ${demo.knownHostsFile}\n` +
        `  try:         node dist/cli.js --ssh-config ${demo.sshConfigFile} probe ${demo.alias}\n` +
        `               ssh -F ${demo.sshConfigFile} ${demo.alias} nvidia-smi\n`,
    );
    // Give the simulated servers a moment to come up before probing.
    await new Promise((r) => setTimeout(r, 2500));
    const dg: GlobalOpts = { ...g, sshConfig: demo.sshConfigFile, knownHosts: demo.knownHostsFile };
    const node = nodeFor(demo.alias, dg);
    const pool = makePool(dg, io, node);
    let code = 0;
    // --guard: the node runs its own guard; stopped before the demo ends
    const dguard = o.guard ? await import('../cmdDemoGuard') : null;
    try {
      const p = await probeNode(node, pool);
      if (!g.json) io.out(formatProbe(p));
      if (salvage) {
        const { startDemoS3 } = await import('../../sim/demoS3');
        const s3 = await startDemoS3(demo.home, (m) => io.err(m + '\n'));
        try {
          if (s3)
            io.err(
              `Demo S3 (s3rver) at ${s3.endpoint}: s3://${s3.bucket}/${s3.prefix} already holds ${s3.uploaded.length} completion batch(es).\n`,
            );
          if (dguard) await dguard.demoGuardStart(pool.get(node), node.name, dguard.demoGuardOptions(dir, s3), io);
          io.err(`\nThe generation job is done: waiting for the servers to go idle…\n`);
          await demo.finishJob();
          io.err(`Salvaging ${demo.alias} (the node is about to be shut down)…\n`);
          const { cmdSalvage } = await import('../cmdSalvage');
          code = await cmdSalvage(
            pool.get(node),
            node.name,
            {
              dest: dest ?? path.join(dir, 'salvage'),
              s3: s3 ? `s3://${s3.bucket}/${s3.prefix}` : undefined,
              s3Endpoint: s3?.endpoint,
              yes: true,
              json: g.json,
              includeLarge: false,
              // The demo node is this machine: its roots are the demo's own folders, never this host's volumes.
              volumes: [],
              // The job is done and the node is about to go: stop the servers so the verdict can be safe.
              stopServers: !keep,
            },
            io,
          );
        } finally {
          await s3?.stop();
        }
      } else {
        if (dguard) await dguard.demoGuardStart(pool.get(node), node.name, dguard.demoGuardOptions(dir, null), io);
        if (g.json) io.out(JSON.stringify(probeJson(p), null, 2) + '\n');
      }
    } finally {
      if (dguard) {
        if (keep) await keepUntilSignal(io);
        await dguard.demoGuardStop(pool.get(node), node.name, io);
      }
      pool.dispose();
    }
    if (keep && !dguard) await keepUntilSignal(io);
    // The demo's verdict is informative: exit 0 when it ran (5 would read as a failure of `npm run demo`).
    return code === 5 ? 0 : code;
  } finally {
    await demo.stop();
  }
}
