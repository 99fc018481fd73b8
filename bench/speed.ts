/**
 * Speed as the user feels it: whole commands as a person types them, side by side with the tool they would
 * use otherwise, on one sshd and one disk, interleaved run by run (so load swings hit both sides alike):
 *
 *  - `gpu-sessions salvage` (connection, listing, transfer, verification, final pass, snapshot, verdict) vs `scp`
 *    (one big file) and `rsync -a` (many small files), on plain loopback and on a shaped link (relay: fixed
 *    delay each way and a bandwidth cap, in its own process);
 *  - `gpu-sessions probe --json` vs `ssh host true` (new process and connection each time);
 *  - `gpu-sessions parse-log --summary` vs mawk on the same 1M-line file.
 *
 * Each salvage row prints our phase timings (salvage --json `timings`, median run) beside its ratio.
 * Every salvage is checked: verdict safe, every file verified.
 *
 * Run by hand (root): `npm run bench` (or `npm run bench -- speed`).
 * Env: BENCH_NODE_ARGS (Node options of our salvage runs, e.g. --cpu-prof),
 *      BENCH_RUNS (3), BENCH_BIG_MIB (512), BENCH_COUNTS ("3000x8192,30000x1024,100000x1024": files × bytes, loopback),
 *      BENCH_WAN_COUNTS ("3000x8192"), BENCH_PROFILES ("loopback,wan"), BENCH_WAN_DELAY_MS (25), BENCH_WAN_MBIT (1000),
 *      BENCH_PARSE_LINES (1,000,000), BENCH_PROBE_RUNS (10), BENCH_ONLY (comma list of: big,small,probe,parse),
 *      BENCH_CLI_B (a second build's cli.js: its salvage runs interleaved as an A/B column).
 *      TMPDIR: where both tools' destinations are made (default /tmp). The file system matters for many small files:
 *      ext4 without a journal (this project's machine's root) checks every recently freed inode on each create
 *      (`recently_deleted()`: freed in the last 60 s, 360 s while its inode table block is dirty; `perf` puts ~80 % of
 *      a create there after a tree was removed), and two threads creating at once scan the same inodes. So the
 *      destinations are kept until the bench ends (about 12 GiB with the defaults; BENCH_KEEP_DESTS=0 removes each
 *      after its command, as the bench did before), and a bench run within minutes of another's clean-up still pays.
 * Each salvage row also gives the CPU time (user + system, through GNU time) of their command and of ours: on a
 * loaded machine it says more than the wall time. The node is this machine, so the node's side (sshd, the listing,
 * the readers) is not in that figure: the machine's CPU (all cores, /proc/stat) during each command is, with how
 * busy it kept the cores (100 %: every core busy the whole command, the work bound by CPU, not by a stage waiting).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { makeSglangLog, mawkSummaryProgram } from './parse-log';
import { median, startRelay } from './lib';
import { startSimNode } from '../test/helpers/simnode';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const BIG_MIB = Number(process.env.BENCH_BIG_MIB ?? 512);
const parseCounts = (s: string) =>
  s
    .split(',')
    .filter(Boolean)
    .map((x) => x.split('x').map(Number) as [number, number]);
const COUNTS = parseCounts(process.env.BENCH_COUNTS ?? '3000x8192,30000x1024,100000x1024');
const WAN_COUNTS = parseCounts(process.env.BENCH_WAN_COUNTS ?? '3000x8192');
const PROFILES = (process.env.BENCH_PROFILES ?? 'loopback,wan').split(',');
const WAN_DELAY = Number(process.env.BENCH_WAN_DELAY_MS ?? 25);
const WAN_MBIT = Number(process.env.BENCH_WAN_MBIT ?? 1000);
const PARSE_LINES = Number(process.env.BENCH_PARSE_LINES ?? 1_000_000);
const PROBE_RUNS = Number(process.env.BENCH_PROBE_RUNS ?? 10);
const ONLY = new Set((process.env.BENCH_ONLY ?? 'big,small,probe,parse').split(','));
const CLI = path.resolve(__dirname, '..', '..', 'dist', 'cli.js');
const CLI_B = process.env.BENCH_CLI_B ? path.resolve(process.env.BENCH_CLI_B) : null;
/** Destinations stay until the bench ends unless BENCH_KEEP_DESTS=0 (see the header: removed trees slow later creates). */
const KEEP_DESTS = process.env.BENCH_KEEP_DESTS !== '0';
/** Free space the kept destinations need with the default rows (7 copies of each set, two links for 512 MiB). */
const KEEP_NEEDS_BYTES = 16 * 1024 ** 3;
/** Node options for our salvage runs (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to see where the CPU goes). */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);

type Timings = Record<string, number>;
interface Row {
  link: string;
  work: string;
  theirs: number;
  ours: number;
  ratio: number;
  goal: string;
  phases: string;
  b?: number;
  /** CPU ms (user + system) of their command, ours and B, median runs. */
  cpu?: string;
  /** The whole machine's CPU ms during their command and ours (the node's side included), with our share of the cores. */
  machine?: string;
}

/** CPU ms the whole machine spent so far (every core: user, nice, system, irq, softirq, steal), from /proc/stat. */
function machineCpuMs(): number {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const [user, nice, system, , , irq, softirq, steal] = f;
    return ((user + nice + system + irq + softirq + (steal || 0)) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return NaN;
  }
}

/** CPU time (user + system, ms) of a command and the children it waited for, through GNU time where it is installed. */
const TIME_BIN = existsSync('/usr/bin/time') ? '/usr/bin/time' : null;

/** `toFile`: stdout goes to that file (read back after), as `cmd > file` would. `cpu`: its CPU time, ms (NaN without GNU time). */
function timeCmd(cmd: string, args: string[], toFile?: string): { ms: number; out: string; cpu: number; machine: number } {
  const fd = toFile ? openSync(toFile, 'w') : null;
  const cpuFile = path.join(os.tmpdir(), `gs-bench-cpu-${process.pid}`);
  const [c, a] = TIME_BIN ? [TIME_BIN, ['-f', '%U %S', '-o', cpuFile, cmd, ...args]] : [cmd, args];
  const m0 = machineCpuMs();
  const t0 = performance.now();
  const r = spawnSync(c, a, { encoding: 'utf8', maxBuffer: 512 * 1024 * 1024, stdio: ['ignore', fd ?? 'pipe', 'pipe'] });
  const ms = performance.now() - t0;
  const machine = machineCpuMs() - m0;
  if (fd !== null) {
    closeSync(fd);
    r.stdout = readFileSync(toFile!, 'utf8');
  }
  if (r.status !== 0 && !(cmd === process.execPath && r.status === 5))
    throw new Error(`${cmd} ${args.slice(0, 3).join(' ')} failed (${r.status}): ${r.error?.message ?? r.stderr.slice(-2000)}`);
  let cpu = NaN;
  if (TIME_BIN) {
    const [u, sys] = readFileSync(cpuFile, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
    cpu = (u + sys) * 1000;
    rmSync(cpuFile, { force: true });
  }
  return { ms, out: r.stdout, cpu, machine };
}

const PHASE_KEYS = ['connect', 'plan', 'transfer', 'finalPass', 'snapshot', 's3', 'verdict', 'total', 'idle', 'writerIdle', 'cpu'];
const phaseText = (t: Timings | undefined) => (t ? PHASE_KEYS.map((k) => `${k} ${t[k] ?? '?'}`).join(' · ') : '');

async function main(): Promise<void> {
  const rows: Row[] = [];
  const load = () =>
    os
      .loadavg()
      .map((x) => x.toFixed(2))
      .join(' ');
  const loadAtStart = load();
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'gs-bench-speed-'));
  const free = (() => {
    const f = statfsSync(tmp);
    return f.bavail * f.bsize;
  })();
  const keep = KEEP_DESTS && free >= KEEP_NEEDS_BYTES;
  if (KEEP_DESTS && !keep)
    console.log(`(only ${(free / 1024 ** 3).toFixed(1)} GiB free in ${tmp}: each destination is removed after its command)`);
  const needNode = ONLY.has('big') || ONLY.has('small') || ONLY.has('probe');
  const sim = needNode ? await startSimNode({ user: 'gs31bench', startServers: false }) : null;
  const relays: Array<{ kill(): void }> = [];
  try {
    if (sim) {
      const user = sim.user;
      const data = path.join(sim.home, 'benchdata');
      const bigDir = path.join(data, 'big');
      mkdirSync(bigDir, { recursive: true });
      if (ONLY.has('big'))
        execFileSync('dd', ['if=/dev/urandom', `of=${path.join(bigDir, 'hidden_states.bin')}`, 'bs=1M', `count=${BIG_MIB}`, 'status=none']);
      const sets = new Map<string, string>();
      const wanted = ONLY.has('small') ? [...COUNTS, ...WAN_COUNTS] : [];
      for (const [n, size] of wanted) {
        const key = `${n}x${size}`;
        if (sets.has(key)) continue;
        const dir = path.join(data, `small_${key}`);
        for (let i = 0; i < n; i++) {
          const d = path.join(dir, `part${Math.floor(i / 1000)}`);
          if (i % 1000 === 0) mkdirSync(d, { recursive: true });
          writeFileSync(path.join(d, `batch_${String(i).padStart(6, '0')}.jsonl`), Buffer.alloc(size, 97 + (i % 26)));
        }
        sets.set(key, dir);
      }
      execFileSync('chown', ['-R', `${user}:${user}`, data]);
      const keyPart = sim.sshd.hostKeyLine().split(' ').slice(1).join(' ');
      for (const profile of PROFILES) {
        let port = sim.sshd.port;
        let link = 'loopback';
        if (profile === 'wan') {
          const r = await startRelay(sim.sshd.port, WAN_DELAY, (WAN_MBIT * 1e6) / 8);
          relays.push(r.proc);
          port = r.port;
          link = `${WAN_DELAY} ms each way, ${WAN_MBIT} Mbit/s`;
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
        const inDir = <T>(fn: (d: string) => T): T => {
          const d = mkdtempSync(path.join(tmp, 'dest-'));
          try {
            return fn(d);
          } finally {
            if (!keep) {
              rmSync(d, { recursive: true, force: true });
              // the file system finishes the removal now (journal, discard), not during the next command it would slow
              execFileSync('sync');
            }
          }
        };
        const salvage = (cli: string, root: string, files: number): { ms: number; cpu: number; machine: number; timings: Timings } =>
          inDir((d) => {
            const r = timeCmd(
              process.execPath,
              [
                ...NODE_ARGS,
                cli,
                '--ssh-config',
                cfg,
                '--roots',
                root,
                '--json',
                'salvage',
                'bench',
                '--dest',
                d,
                '--yes',
                '--size-threshold',
                '1000000',
                // the listing's default bound is 100,000 entries (files and folders): the 100,000-file tree needs more
                '--max-files',
                String(files * 2 + 1000),
              ],
              path.join(tmp, 'salvage.json'),
            );
            const j = JSON.parse(r.out) as { verdict: string; items: Array<{ status: string }>; timings?: Timings; reasons: string[] };
            const ok = j.items.filter((i) => i.status === 'verified').length;
            if (j.verdict !== 'safe' || ok < files)
              throw new Error(`salvage of ${root}: verdict ${j.verdict} (${j.reasons.join(', ')}), ${ok} of ${files} verified`);
            return { ms: r.ms, cpu: r.cpu, machine: r.machine, timings: j.timings ?? {} };
          });
        const compare = (
          work: string,
          goal: string,
          root: string,
          files: number,
          theirs: (d: string) => { ms: number; cpu: number; machine: number },
        ) => {
          salvage(CLI, root, files); // warm the page cache and the node's side
          const t: Array<{ ms: number; cpu: number; machine: number }> = [];
          const o: Array<{ ms: number; cpu: number; machine: number; timings: Timings }> = [];
          const b: Array<{ ms: number; cpu: number }> = [];
          for (let i = 0; i < RUNS; i++) {
            t.push(inDir(theirs));
            o.push(salvage(CLI, root, files));
            if (CLI_B) b.push(salvage(CLI_B, root, files));
          }
          const om = median(o.map((x) => x.ms));
          const tm = median(t.map((x) => x.ms));
          const mid = o.find((x) => x.ms === om);
          const cpuOf = (xs: Array<{ cpu: number }>) => median(xs.map((x) => x.cpu)).toFixed(0);
          const row: Row = { link, work, theirs: tm, ours: om, ratio: tm / om, goal, phases: phaseText(mid?.timings) };
          row.cpu = `${cpuOf(t)} / ${cpuOf(o)}${CLI_B ? ` / ${cpuOf(b)}` : ''}`;
          const busy = (x: { ms: number; machine: number }) => `${((100 * x.machine) / (x.ms * os.cpus().length)).toFixed(0)} %`;
          const tmid = t.find((x) => x.ms === tm);
          if (mid && tmid) row.machine = `${tmid.machine.toFixed(0)} (${busy(tmid)}) / ${mid.machine.toFixed(0)} (${busy(mid)})`;
          if (CLI_B) row.b = median(b.map((x) => x.ms));
          rows.push(row);
          console.log(
            `${link}: ${work}: theirs ${row.theirs.toFixed(0)} ms, ours ${om.toFixed(0)} ms (${row.ratio.toFixed(2)}×)${CLI_B ? `, B ${row.b!.toFixed(0)} ms` : ''}; cpu ${row.cpu}; machine ${row.machine ?? '?'}; ${row.phases}; load ${load()}`,
          );
        };
        if (ONLY.has('big'))
          compare(`${BIG_MIB} MiB file vs scp`, profile === 'wan' ? '≥ 2.5×' : '≥ 0.9×', bigDir, 1, (d) =>
            timeCmd('scp', ['-q', '-F', cfg, `bench:${path.join(bigDir, 'hidden_states.bin')}`, d]),
          );
        for (const [n, size] of profile === 'wan' ? WAN_COUNTS : COUNTS) {
          const dir = sets.get(`${n}x${size}`);
          if (!dir) continue;
          const goal = profile === 'wan' ? '≥ 1.5×' : '≥ 1.0×';
          compare(`${n.toLocaleString('en-US')} × ${size / 1024} KiB vs rsync -a`, goal, dir, n, (d) =>
            timeCmd('rsync', ['-a', '-e', `ssh -F ${cfg}`, `bench:${dir}/`, d + '/']),
          );
        }
        if (profile === 'loopback' && ONLY.has('probe')) {
          const s: number[] = [];
          const c: number[] = [];
          timeCmd(process.execPath, [CLI, '--ssh-config', cfg, '--json', 'probe', 'bench']);
          for (let i = 0; i < PROBE_RUNS; i++) {
            s.push(timeCmd('ssh', ['-F', cfg, 'bench', 'true']).ms);
            c.push(timeCmd(process.execPath, [CLI, '--ssh-config', cfg, '--json', 'probe', 'bench']).ms);
          }
          const row = {
            link,
            work: 'probe (new process) vs ssh host true',
            theirs: median(s),
            ours: median(c),
            goal: '≤ 1.5× its time',
            phases: '',
          };
          rows.push({ ...row, ratio: row.theirs / row.ours });
          console.log(`${link}: probe: ssh ${row.theirs.toFixed(0)} ms, ours ${row.ours.toFixed(0)} ms; load ${load()}`);
        }
      }
    }
    if (ONLY.has('parse')) {
      const file = path.join(tmp, 'sglang_dp8.log');
      makeSglangLog(file, PARSE_LINES);
      const a: number[] = [];
      const o: number[] = [];
      const o2: number[] = [];
      let aOut = '';
      let oOut = '';
      for (let i = 0; i < RUNS; i++) {
        const x = timeCmd('mawk', [mawkSummaryProgram, file]);
        a.push(x.ms);
        aOut = x.out;
        const y = timeCmd(process.execPath, [CLI, 'parse-log', '--summary', '--json', file]);
        o.push(y.ms);
        oOut = y.out;
        process.env.GS_PARSE_THREADS = '2';
        try {
          const z = timeCmd(process.execPath, [CLI, 'parse-log', '--summary', '--json', file]);
          o2.push(z.ms);
          if (z.out !== y.out) throw new Error('parse-log on 2 threads gave another summary');
        } finally {
          delete process.env.GS_PARSE_THREADS;
        }
      }
      const [n] = aOut.trim().split(' ').map(Number);
      const ranks = ((JSON.parse(oOut).files?.[0] ?? JSON.parse(oOut)).ranks ?? []) as Array<{ decodeLines: number }>;
      const ourN = ranks.reduce((s, r) => s + r.decodeLines, 0);
      if (ourN !== n) throw new Error(`parse-log and mawk disagree: ${ourN} vs ${n} decode lines`);
      rows.push({
        link: 'local',
        work: `parse-log --summary, ${PARSE_LINES.toLocaleString('en-US')} lines vs mawk`,
        theirs: median(a),
        ours: median(o),
        ratio: median(a) / median(o),
        goal: '≥ 1.0×',
        phases: '',
      });
      rows.push({
        link: 'local',
        work: 'the same, GS_PARSE_THREADS=2 (pieces on worker threads)',
        theirs: median(a),
        ours: median(o2),
        ratio: median(a) / median(o2),
        goal: '≥ 1.0×',
        phases: '',
      });
    }
  } finally {
    for (const r of relays) r.kill();
    rmSync(tmp, { recursive: true, force: true });
    await sim?.stop();
  }
  console.log(
    `\nSpeed as the user feels it: whole commands, median of ${RUNS} interleaved runs, ${os.cpus().length} cores; load at start ${loadAtStart}, at end ${load()}` +
      `; destinations in ${os.tmpdir()}, ${keep ? 'kept until the end' : 'each removed after its command'}` +
      '\n(ratio = their time / our time; for the probe, our time ÷ theirs must stay ≤ 1.5, i.e. ratio ≥ 0.67)\n',
  );
  console.log(
    `| link | work | theirs ms | ours ms | ratio | goal |${CLI_B ? ' B ms |' : ''} CPU ms theirs / ours${CLI_B ? ' / B' : ''} | machine CPU ms (cores busy) theirs / ours | our phases (ms, median run) |`,
  );
  console.log(`|---|---|---:|---:|---:|---|${CLI_B ? '---:|' : ''}---:|---:|---|`);
  for (const r of rows)
    console.log(
      `| ${r.link} | ${r.work} | ${r.theirs.toFixed(0)} | ${r.ours.toFixed(0)} | **${r.ratio.toFixed(2)}×** | ${r.goal} |${CLI_B ? ` ${r.b?.toFixed(0) ?? ''} |` : ''} ${r.cpu ?? ''} | ${r.machine ?? ''} | ${r.phases} |`,
    );
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
