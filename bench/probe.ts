/**
 * Probe vs a bare OpenSSH round trip, side by side on the same loopback sshd and simulated node.
 * Run by hand: `npm run bench:probe` (root; uses the integration test bed).
 *
 *  - `ssh host true`            : OpenSSH client, new connection each time (the user's baseline)
 *  - `gpu-sessions probe` (CLI) : new process + new connection + one exec (what a script pays)
 *  - pooled probe               : one exec on the warm pooled connection (what a tree refresh pays)
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { KnownHostsStore } from '../src/core/ssh/knownHosts';
import { listNodes } from '../src/core/ssh/nodes';
import { runOperation } from '../src/core/remote/operation';
import { ConnectionPool } from '../src/core/ssh/pool';
import { probeOperation } from '../src/core/node/probe';
import { startSimNode } from '../test/helpers/simnode';

const N = Number(process.env.BENCH_RUNS ?? 15);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  const sim = await startSimNode({});
  const cli = path.resolve(__dirname, '..', '..', 'dist', 'cli.js');
  try {
    const sshT: number[] = [];
    const cliT: number[] = [];
    const poolT: number[] = [];
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0];
    const t = pool.get(node);
    let execs = 0;
    const orig = t.exec.bind(t);
    t.exec = (c, o) => (execs++, orig(c, o));
    await runOperation(t, probeOperation(node.name)); // warm up
    execs = 0;
    for (let i = 0; i < N; i++) {
      let t0 = performance.now();
      const r = spawnSync('ssh', ['-F', sim.sshd.sshConfigFile, '-o', 'BatchMode=yes', node.name, 'true']);
      if (r.status !== 0) throw new Error(`ssh failed: ${r.stderr}`);
      sshT.push(performance.now() - t0);

      t0 = performance.now();
      const c = spawnSync(process.execPath, [cli, '--ssh-config', sim.sshd.sshConfigFile, 'probe', node.name, '--json']);
      if (c.status !== 0) throw new Error(`cli failed: ${c.stderr}`);
      cliT.push(performance.now() - t0);

      t0 = performance.now();
      await runOperation(t, probeOperation(node.name));
      poolT.push(performance.now() - t0);
    }
    pool.dispose();
    const ssh = median(sshT);
    const c = median(cliT);
    const p = median(poolT);
    console.log(
      `\nProbe vs bare SSH round trip (median of ${N}, loopback OpenSSH ${spawnSync('ssh', ['-V'], { encoding: 'utf8' }).stderr.trim()})`,
    );
    console.log(`| what | ms | ratio to \`ssh host true\` |`);
    console.log(`|---|---|---|`);
    console.log(`| \`ssh host true\` (new connection) | ${ssh.toFixed(1)} | 1.00 |`);
    console.log(`| \`gpu-sessions probe --json\` (new process + connection + 1 exec) | ${c.toFixed(1)} | ${(c / ssh).toFixed(2)} |`);
    console.log(`| pooled probe (1 exec on the warm connection) | ${p.toFixed(1)} | ${(p / ssh).toFixed(2)} |`);
    console.log(`\nRemote execs per pooled probe: ${(execs / N).toFixed(2)}`);
  } finally {
    await sim.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
