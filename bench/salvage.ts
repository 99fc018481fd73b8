/**
 * Salvage vs OpenSSH `scp`, `sftp` and `rsync -a`, side by side on the same sshd, on two link profiles in
 * one run: plain loopback, and a "WAN" profile through a shaping relay (fixed delay each way, bandwidth
 * cap; test/helpers/relay.ts, in its own process so it does not share the measured event loop).
 * Verification is included on our side (every file hashed locally and compared with the node's SHA-256).
 *
 * Run by hand (root): `npm run bench:salvage` (or `npm run bench`).
 * Env: BENCH_BIG_MIB (default 1024), BENCH_SMALL_FILES (default 5000), BENCH_RUNS (default 3),
 *      BENCH_WAN_RUNS (default BENCH_RUNS), BENCH_WAN_DELAY_MS (25, each way), BENCH_WAN_MBIT (1000),
 *      BENCH_PROFILES (default "loopback,wan"), BENCH_SINGLE (0: skip the one-stream row).
 */
import { ChildProcess, execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { KnownHostsStore } from '../src/core/ssh/knownHosts';
import { listNodes } from '../src/core/ssh/nodes';
import { ConnectionPool } from '../src/core/ssh/pool';
import { Salvager } from '../src/core/flows/salvage';
import { startSimNode } from '../test/helpers/simnode';
import { median, startRelay } from './lib';

const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 1024);
const SMALL = Number(process.env.BENCH_SMALL_FILES ?? 5000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const WAN_RUNS = Number(process.env.BENCH_WAN_RUNS ?? RUNS);
const WAN_DELAY = Number(process.env.BENCH_WAN_DELAY_MS ?? 25);
const WAN_MBIT = Number(process.env.BENCH_WAN_MBIT ?? 1000);
const PROFILES = (process.env.BENCH_PROFILES ?? 'loopback,wan').split(',');
const SINGLE = process.env.BENCH_SINGLE !== '0';

interface OursRun {
  ms: number;
  lagP99: number;
  lagMax: number;
  rssPeakMiB: number;
}

async function main(): Promise<void> {
  const sim = await startSimNode({ user: 'gsbench', startServers: false });
  const user = sim.user;
  const uid = Number(execFileSync('id', ['-u', user]).toString());
  const gid = Number(execFileSync('id', ['-g', user]).toString());
  const bigDir = path.join(sim.home, 'bigdata');
  const smallDir = path.join(sim.home, 'smalldata');
  mkdirSync(bigDir, { recursive: true });
  mkdirSync(smallDir, { recursive: true });
  const bigFile = path.join(bigDir, 'hidden_states.jsonl');
  execFileSync('dd', ['if=/dev/urandom', `of=${bigFile}`, 'bs=1M', `count=${BIG_MIB}`, 'status=none']);
  for (let i = 0; i < SMALL; i++) {
    const d = path.join(smallDir, `part${Math.floor(i / 500)}`);
    if (i % 500 === 0) mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, `batch_${String(i).padStart(6, '0')}.jsonl`), Buffer.alloc(8192, i % 251));
  }
  execFileSync('chown', ['-R', `${uid}:${gid}`, bigDir, smallDir]);
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gs-bench-salvage-'));
  const keyPart = sim.sshd.hostKeyLine().split(' ').slice(1).join(' ');
  const relays: ChildProcess[] = [];
  const table: string[] = [];
  const bigBytes = BIG_MIB * 1024 * 1024;
  const smallBytes = SMALL * 8192;
  const mbps = (bytes: number, ms: number) => `${(bytes / 1e6 / (ms / 1000)).toFixed(0)} MB/s`;
  try {
    for (const profile of PROFILES) {
      let port = sim.sshd.port;
      let label = 'loopback';
      const runs = profile === 'wan' ? WAN_RUNS : RUNS;
      if (profile === 'wan') {
        const r = await startRelay(sim.sshd.port, WAN_DELAY, (WAN_MBIT * 1e6) / 8);
        relays.push(r.proc);
        port = r.port;
        label = `WAN (relay: ${WAN_DELAY} ms each way, ${WAN_MBIT} Mbit/s)`;
      }
      const kh = path.join(tmp, `known_hosts_${profile}`);
      writeFileSync(kh, `[127.0.0.1]:${port} ${keyPart}\n`, { mode: 0o600 });
      const cfg = path.join(tmp, `ssh_config_${profile}`);
      writeFileSync(
        cfg,
        [
          'Host bench',
          '  HostName 127.0.0.1',
          `  Port ${port}`,
          `  User ${user}`,
          `  IdentityFile ${sim.sshd.clientKey}`,
          `  UserKnownHostsFile ${kh}`,
          '  StrictHostKeyChecking yes',
          '  BatchMode yes',
          '',
        ].join('\n'),
      );
      const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([kh]) });
      const node = listNodes({ sshConfigFile: cfg }).nodes[0];
      const t = pool.get(node);
      const ours = async (root: string): Promise<OursRun> => {
        const base = mkdtempSync(path.join(tmp, 'ours-'));
        const h = monitorEventLoopDelay({ resolution: 5 });
        const rss0 = process.memoryUsage.rss();
        let peak = rss0;
        const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 25);
        h.enable();
        const t0 = performance.now();
        const s = new Salvager({
          node: 'bench',
          transport: t,
          base,
          roots: [root],
          sizeThreshold: 64 * 1024 ** 3,
          snapshot: async () => ({ json: {}, markdown: '', summary: '' }),
        });
        const m = (await s.run())!;
        const ms = performance.now() - t0;
        h.disable();
        clearInterval(sampler);
        const bad = m.items.filter((i) => i.status !== 'verified');
        if (bad.length) throw new Error(`salvage left ${bad.length} unverified: ${bad[0].remotePath}: ${bad[0].reason}`);
        rmSync(base, { recursive: true, force: true });
        return { ms, lagP99: h.percentile(99) / 1e6, lagMax: h.max / 1e6, rssPeakMiB: (peak - rss0) / 1048576 };
      };
      const timeCmd = (cmd: string, args: string[]): number => {
        const t0 = performance.now();
        const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
        if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
        return performance.now() - t0;
      };
      const inDir = (fn: (d: string) => number): number => {
        const d = mkdtempSync(path.join(tmp, 'tool-'));
        try {
          return fn(d);
        } finally {
          rmSync(d, { recursive: true, force: true });
        }
      };
      await ours(smallDir); // warm the connection and the page cache
      const scpT: number[] = [];
      const sftpT: number[] = [];
      const oursBig: OursRun[] = [];
      const oursOne: OursRun[] = [];
      for (let i = 0; i < runs; i++) {
        scpT.push(inDir((d) => timeCmd('scp', ['-q', '-F', cfg, `bench:${bigFile}`, d])));
        sftpT.push(inDir((d) => timeCmd('sftp', ['-q', '-F', cfg, `bench:${bigFile}`, d])));
        oursBig.push(await ours(bigDir));
        if (SINGLE) {
          // The same salvage with one stream on the pooled connection (what it did before parallel ranges).
          process.env.GS_SALVAGE_PARALLEL = 'off';
          try {
            oursOne.push(await ours(bigDir));
          } finally {
            delete process.env.GS_SALVAGE_PARALLEL;
          }
        }
      }
      const rsyncT: number[] = [];
      const oursSmall: OursRun[] = [];
      for (let i = 0; i < runs; i++) {
        rsyncT.push(inDir((d) => timeCmd('rsync', ['-a', '-e', `ssh -F ${cfg}`, `bench:${smallDir}/`, d + '/'])));
        oursSmall.push(await ours(smallDir));
      }
      pool.dispose();
      const ob = median(oursBig.map((o) => o.ms));
      const os_ = median(oursSmall.map((o) => o.ms));
      const lag = (xs: OursRun[]) =>
        `p99 ${median(xs.map((o) => o.lagP99)).toFixed(1)} / max ${median(xs.map((o) => o.lagMax)).toFixed(0)} ms`;
      const mem = (xs: OursRun[]) => `${Math.max(...xs.map((o) => o.rssPeakMiB)).toFixed(0)} MiB`;
      const wan = profile === 'wan';
      table.push(`\n**${label}**, median of ${runs} (ratio = their time / our time)\n`);
      table.push('| what | ms | throughput | salvage speed vs it | event-loop lag | peak RSS growth | goal |');
      table.push('|---|---:|---:|---:|---|---:|---|');
      const row = (w: string, ms: number, bytes: number, ratio: string, l = '', m = '', g = '') =>
        table.push(`| ${w} | ${ms.toFixed(0)} | ${mbps(bytes, ms)} | ${ratio} | ${l} | ${m} | ${g} |`);
      row(`${BIG_MIB} MiB: scp`, median(scpT), bigBytes, `${(median(scpT) / ob).toFixed(2)}×`, '', '', wan ? '≥ 2.5×' : '≥ 0.9×');
      row(`${BIG_MIB} MiB: sftp`, median(sftpT), bigBytes, `${(median(sftpT) / ob).toFixed(2)}×`);
      row(`${BIG_MIB} MiB: **salvage** (sha256-verified)`, ob, bigBytes, '—', lag(oursBig), mem(oursBig));
      if (oursOne.length) {
        const o1 = median(oursOne.map((o) => o.ms));
        row(
          `${BIG_MIB} MiB: salvage, one stream (GS_SALVAGE_PARALLEL=off)`,
          o1,
          bigBytes,
          `${(o1 / ob).toFixed(2)}×`,
          lag(oursOne),
          mem(oursOne),
        );
      }
      row(
        `${SMALL} × 8 KiB: rsync -a`,
        median(rsyncT),
        smallBytes,
        `${(median(rsyncT) / os_).toFixed(2)}×`,
        '',
        '',
        wan ? '≥ 1.5×' : '≥ 1.0×',
      );
      row(`${SMALL} × 8 KiB: **salvage** (sha256-verified)`, os_, smallBytes, '—', lag(oursSmall), mem(oursSmall));
      console.log(table.slice(-9).join('\n'));
    }
    console.log(
      `\nSalvage vs OpenSSH (${spawnSync('ssh', ['-V'], { encoding: 'utf8' }).stderr.trim()}) on one sshd, ${os.cpus().length} cores`,
    );
    console.log(table.join('\n'));
  } finally {
    for (const r of relays) r.kill();
    rmSync(tmp, { recursive: true, force: true });
    await sim.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
