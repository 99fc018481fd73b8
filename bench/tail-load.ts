/**
 * Tail load test: 8 RemoteTails (one channel each, one pooled connection) following 8 simulated SGLang
 * servers that each write ~2,000 log lines/s, for BENCH_SECONDS (default 60). Every line feeds a
 * StatsTracker and a 5,000-line RingBuffer per tail. Prints lines received per second and this process's
 * RSS / heap every 10 s and at the end: memory must stay flat while millions of lines go through.
 *
 * Run by hand as root (uses the integration test bed, user gsbench):
 *   npx tsc -p . && node out/bench/tail-load.js
 * Knobs: BENCH_SECONDS (60), BENCH_TAILS (8), BENCH_LINES_PER_S (2000 lines/s per server, all kinds),
 * BENCH_DROP=1 (sshd drops every connection at each 10 s report: the tails must reconnect and catch up;
 * "missing" at the end must still be 0).
 */
import { KnownHostsStore } from '../src/core/ssh/knownHosts';
import { listNodes } from '../src/core/ssh/nodes';
import { ConnectionPool } from '../src/core/ssh/pool';
import { RemoteTail, RingBuffer } from '../src/core/remote/tail';
import { StatsTracker } from '../src/core/sglang/liveStats';
import { startSimNode } from '../test/helpers/simnode';
import { waitFor } from '../test/helpers/wait';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 60);
const TAILS = Number(process.env.BENCH_TAILS ?? 8);
const LINES_PER_S = Number(process.env.BENCH_LINES_PER_S ?? 2000);
// The simulated server's SGLANG_SIM_LINES_PER_S counts decode lines; about 0.3 prefill and 0.4 access lines
// come with each one (see src/sim/python/sglang/launch_server.py, Sim.step).
const DECODE_PER_S = Math.round(LINES_PER_S / 1.7);
const DROP = process.env.BENCH_DROP === '1';

const mib = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;

function mem(): string {
  const m = process.memoryUsage();
  return `rss ${mib(m.rss)} · heap ${mib(m.heapUsed)} / ${mib(m.heapTotal)} · external ${mib(m.external)}`;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('run as root (creates the test user gsbench and an sshd on 127.0.0.1)');
  console.log(`tail-load: ${TAILS} tails × ~${LINES_PER_S} lines/s for ${SECONDS} s (SGLANG_SIM_LINES_PER_S=${DECODE_PER_S})`);
  const sim = await startSimNode({ user: 'gsbench', startServers: false, gpuCount: TAILS, decodePeriodS: 1 });
  const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
  const tails: RemoteTail[] = [];
  try {
    const env = sim.sshd.ssh(`echo 'export SGLANG_SIM_LINES_PER_S=${DECODE_PER_S}' >> ~/.sim/env.sh && bash ~/launch_all.sh >/dev/null`);
    if (env.status !== 0) throw new Error(`launch failed: ${env.stderr}`);
    await waitFor('the simulated servers', () => Number(sim.sshd.ssh('ls ~/.sim/run/ 2>/dev/null | wc -l').stdout.trim()) >= TAILS, 30_000);

    // Pause the load while the tails start, so that "lines written" can be compared with "lines received".
    const pause = (on: boolean) => {
      const r = sim.sshd.ssh(on ? 'touch ~/.sim/pause_load' : 'rm -f ~/.sim/pause_load');
      if (r.status !== 0) throw new Error(r.stderr);
    };
    const written = () => Number(sim.sshd.ssh(`cat ${sim.layout.logFiles.map((f) => `'${f}'`).join(' ')} | wc -l`).stdout.trim());
    pause(true);
    await new Promise((r) => setTimeout(r, 2000)); // the servers drain and fall silent

    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes.find((n) => n.name === 'simnode')!;
    const t = pool.get(node);
    const stats = new StatsTracker();
    const rings = sim.layout.logFiles.map(() => new RingBuffer<string>(5000));
    const counts = sim.layout.logFiles.map(() => 0);
    const markers: string[] = [];
    for (const [i, f] of sim.layout.logFiles.entries()) {
      const tail = new RemoteTail(t, { files: [f], initialLines: 0 });
      tail.on('event', (e) => {
        if (e.type === 'line') {
          counts[i]++;
          rings[i].push(e.line);
          stats.feed(e.file, e.line);
        } else markers.push(`${e.kind} ${e.file ?? ''}: ${e.message}`);
      });
      tails.push(tail);
    }
    await Promise.all(tails.map((x) => x.start()));
    const w0 = written();
    console.log(`started: ${mem()}`);
    pause(false);

    const cpu0 = process.cpuUsage();
    const t0 = Date.now();
    let last = t0;
    let lastTotal = 0;
    const samples: number[] = [];
    const rss: number[] = [];
    while (Date.now() - t0 < SECONDS * 1000) {
      await new Promise((r) => setTimeout(r, Math.min(10_000, SECONDS * 1000 - (Date.now() - t0))));
      const now = Date.now();
      const total = counts.reduce((a, b) => a + b, 0);
      const rate = ((total - lastTotal) * 1000) / (now - last);
      samples.push(rate);
      rss.push(process.memoryUsage().rss);
      const per = counts.map((c) => c).join(' ');
      console.log(
        `t=${((now - t0) / 1000).toFixed(0).padStart(3)} s  ${Math.round(rate).toLocaleString('en-US').padStart(7)} lines/s (${Math.round(rate / TAILS).toLocaleString('en-US')} per tail)  ` +
          `total ${total.toLocaleString('en-US')}  node ${Math.round(stats.total().genThroughput).toLocaleString('en-US')} tok/s  ${mem()}`,
      );
      if (process.env.BENCH_VERBOSE) console.log(`  per tail: ${per}`);
      if (DROP && Date.now() - t0 < SECONDS * 1000 - 3000) {
        sim.sshd.dropConnections();
        console.log('  (dropped every SSH connection of the node)');
      }
      last = now;
      lastTotal = total;
    }
    const total = counts.reduce((a, b) => a + b, 0);
    const secs = (Date.now() - t0) / 1000;
    const perTail = counts.map((c) => Math.round(c / secs));
    const cpu = process.cpuUsage(cpu0);
    const statsLine = `${stats.describe(sim.layout.logFiles[0])} (server 0); node ${Math.round(stats.total().genThroughput).toLocaleString('en-US')} tok/s over ${stats.total().servers} servers`;
    pause(true);
    await new Promise((r) => setTimeout(r, 3000)); // the servers drain; the tails catch up
    const wrote = written() - w0;
    const got = counts.reduce((a, b) => a + b, 0);
    console.log('\nresult');
    console.log(
      `  lines written by the servers: ${wrote.toLocaleString('en-US')}; lines received: ${got.toLocaleString('en-US')}; missing: ${(wrote - got).toLocaleString('en-US')}`,
    );
    console.log(
      `  lines received during the run: ${total.toLocaleString('en-US')} in ${secs.toFixed(1)} s = ${Math.round(total / secs).toLocaleString('en-US')} lines/s (${Math.round(total / secs / TAILS).toLocaleString('en-US')} per tail)`,
    );
    console.log(`  per tail: ${perTail.join(', ')} lines/s`);
    console.log(
      `  ring buffers: ${rings.map((r) => r.length).join(', ')} lines kept (cap 5000), ${rings.reduce((a, r) => a + r.dropped, 0).toLocaleString('en-US')} dropped`,
    );
    console.log(`  StatsTracker at the end of the run: ${statsLine}`);
    console.log(
      `  this process's CPU during the run: ${(((cpu.user + cpu.system) / 1000 / (secs * 1000)) * 100).toFixed(0)} % of one core (${((cpu.user + cpu.system) / total).toFixed(1)} µs per line, incl. SSH decryption)`,
    );
    console.log(`  memory at end: ${mem()}`);
    if (rss.length >= 2)
      console.log(
        `  RSS over the run: min ${mib(Math.min(...rss))}, max ${mib(Math.max(...rss))}, first ${mib(rss[0])}, last ${mib(rss[rss.length - 1])}`,
      );
    const byKind = new Map<string, number>();
    for (const m of markers) byKind.set(m.split(' ')[0], (byKind.get(m.split(' ')[0]) ?? 0) + 1);
    console.log(`  markers: ${byKind.size ? [...byKind].map(([k, n]) => `${n} ${k}`).join(', ') : 'none'}`);
    if (process.env.BENCH_VERBOSE) for (const m of markers) console.log(`    ${m}`);
  } finally {
    for (const x of tails) x.stop();
    pool.dispose();
    await sim.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
