/**
 * Salvage vs OpenSSH `scp` and `rsync -a`, side by side on the same loopback sshd (verification included
 * on our side: every file hashed locally while streaming and compared with the node's SHA-256).
 * Run by hand (root): `npm run -s build && npx tsc -p . && node out/bench/salvage.js`
 * Env: BENCH_BIG_MIB (default 1024), BENCH_SMALL_FILES (default 5000), BENCH_RUNS (default 3).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore } from '../src/core/ssh/knownHosts';
import { listNodes } from '../src/core/ssh/nodes';
import { ConnectionPool } from '../src/core/ssh/pool';
import { Salvager } from '../src/core/salvage/salvage';
import { startSimNode } from '../test/helpers/simnode';

const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 1024);
const SMALL = Number(process.env.BENCH_SMALL_FILES ?? 5000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

async function main(): Promise<void> {
  const sim = await startSimNode({ user: 'gsbench', startServers: false });
  const uid = Number(execFileSync('id', ['-u', 'gsbench']).toString());
  const gid = Number(execFileSync('id', ['-g', 'gsbench']).toString());
  const bigDir = path.join(sim.home, 'bigdata');
  const smallDir = path.join(sim.home, 'smalldata');
  mkdirSync(bigDir, { recursive: true });
  mkdirSync(smallDir, { recursive: true });
  execFileSync('dd', ['if=/dev/urandom', `of=${path.join(bigDir, 'hidden_states.jsonl')}`, 'bs=1M', `count=${BIG_MIB}`, 'status=none']);
  for (let i = 0; i < SMALL; i++) {
    const d = path.join(smallDir, `part${Math.floor(i / 500)}`);
    if (i % 500 === 0) mkdirSync(d, { recursive: true });
    writeFileSync(path.join(d, `batch_${String(i).padStart(6, '0')}.jsonl`), Buffer.alloc(8192, i % 251));
  }
  execFileSync('chown', ['-R', `${uid}:${gid}`, bigDir, smallDir]);
  const cfg = sim.sshd.sshConfigFile;
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gs-bench-salvage-'));
  const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
  const node = listNodes({ sshConfigFile: cfg }).nodes[0];
  const t = pool.get(node);
  const rows: Array<[string, number, number, string]> = [];
  try {
    const ours = async (root: string): Promise<number> => {
      const base = mkdtempSync(path.join(tmp, 'ours-'));
      const t0 = performance.now();
      const s = new Salvager({
        node: 'bench',
        transport: t,
        base,
        roots: [root],
        sizeThreshold: 64 * 1024 ** 3,
        snapshot: async () => ({ json: {}, markdown: '', summary: '' }),
      });
      const m = await s.run();
      const ms = performance.now() - t0;
      const bad = m.items.filter((i) => i.status !== 'verified');
      if (bad.length) throw new Error(`salvage left ${bad.length} unverified: ${bad[0].remotePath}: ${bad[0].reason}`);
      rmSync(base, { recursive: true, force: true });
      return ms;
    };
    const timeCmd = (cmd: string, args: string[]): number => {
      const t0 = performance.now();
      const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
      return performance.now() - t0;
    };
    await ours(bigDir); // warm the connection and the page cache
    const scpT: number[] = [];
    const oursBig: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const d = mkdtempSync(path.join(tmp, 'scp-'));
      scpT.push(timeCmd('scp', ['-q', '-F', cfg, `simnode:${path.join(bigDir, 'hidden_states.jsonl')}`, d]));
      rmSync(d, { recursive: true, force: true });
      oursBig.push(await ours(bigDir));
    }
    const rsyncT: number[] = [];
    const oursSmall: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const d = mkdtempSync(path.join(tmp, 'rsync-'));
      rsyncT.push(timeCmd('rsync', ['-a', '-e', `ssh -F ${cfg}`, `simnode:${smallDir}/`, d + '/']));
      rmSync(d, { recursive: true, force: true });
      oursSmall.push(await ours(smallDir));
    }
    rows.push([`${BIG_MIB} MiB file: scp`, median(scpT), 1, '']);
    rows.push([`${BIG_MIB} MiB file: salvage (sha256-verified)`, median(oursBig), median(scpT) / median(oursBig), 'goal ≥ 1.2× scp']);
    rows.push([`${SMALL} × 8 KiB files: rsync -a`, median(rsyncT), 1, '']);
    rows.push([
      `${SMALL} × 8 KiB files: salvage (sha256-verified)`,
      median(oursSmall),
      median(rsyncT) / median(oursSmall),
      'goal ≥ 1.0× rsync',
    ]);
    console.log(`\nSalvage vs OpenSSH on the same loopback sshd (median of ${RUNS}; speed ratio = their time / our time)`);
    console.log('| what | ms | speed vs baseline | goal |\n|---|---:|---:|---|');
    for (const [w, ms, r, g] of rows) console.log(`| ${w} | ${ms.toFixed(0)} | ${r.toFixed(2)}× | ${g} |`);
  } finally {
    pool.dispose();
    rmSync(tmp, { recursive: true, force: true });
    await sim.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
