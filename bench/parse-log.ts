/**
 * `gpu-sessions parse-log --summary` over 1,000,000 SGLang lines vs an `awk` extraction of the
 * throughput field on the same file, side by side. Run by hand: `npm run bench:parse`.
 * Env: BENCH_LINES (default 1,000,000), BENCH_RUNS (default 3).
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { median } from './lib';

const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

/** The same extraction in awk: decode lines, mean and max generation throughput. */
export const mawkSummaryProgram =
  '/Decode batch/ { i = index($0, "gen throughput (token/s): "); if (i) { v = substr($0, i + 26) + 0; s += v; n++; if (v > m) m = v } } END { printf "%d %.2f %.2f\\n", n, s / n, m }';

/** A DP8 SGLang log of `LINES` lines: decode and prefill stat lines, access-log lines. */
export function makeSglangLog(file: string, LINES: number): void {
  const chunks: string[] = [];
  let buf = '';
  for (let i = 0; i < LINES; i++) {
    const dp = i % 8;
    const s = 10 + (i % 60);
    const ts = `2026-04-05 20:${String(Math.floor(i / 60000) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
    if (i % 50 === 7)
      buf += `[${ts} DP${dp} TP0] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53\n`;
    else if (i % 97 === 3) buf += `[${ts}] INFO:     127.0.0.1:40052 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n`;
    else
      buf += `[${ts} DP${dp} TP0] Decode batch, #running-req: ${30 + (i % 7)}, #token: 34901, token usage: 0.19, accept len: ${(2.5 + (i % 10) / 20).toFixed(2)}, accept rate: 0.71, cuda graph: True, gen throughput (token/s): ${(1400 + (i % 200)).toFixed(2)}, #queue-req: 0, \n`;
    if (buf.length > 1 << 20) {
      chunks.push(buf);
      buf = '';
    }
  }
  chunks.push(buf);
  writeFileSync(file, chunks.join(''));
}

function time(cmd: string, args: string[]): { ms: number; out: string } {
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.status !== 0) throw new Error(`${cmd} failed: ${r.stderr}`);
  return { ms: performance.now() - t0, out: r.stdout };
}

function main(): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-bench-parse-'));
  const file = path.join(dir, 'sglang_dp8.log');
  try {
    makeSglangLog(file, LINES);
    const cli = path.resolve(__dirname, '..', '..', 'dist', 'cli.js');
    const awkProg = mawkSummaryProgram;
    const ours: number[] = [];
    const awk: number[] = [];
    let awkOut = '';
    let ourOut = '';
    for (let i = 0; i < RUNS; i++) {
      const a = time('awk', [awkProg, file]);
      awk.push(a.ms);
      awkOut = a.out;
      const o = time(process.execPath, [cli, 'parse-log', '--summary', '--json', file]);
      ours.push(o.ms);
      ourOut = o.out;
    }
    // Same answer: total decode lines and max throughput agree.
    const [n, , max] = awkOut.trim().split(' ').map(Number);
    const sum = JSON.parse(ourOut);
    const ranks = (sum.files?.[0] ?? sum).ranks as Array<{ decodeLines: number; maxGenThroughput: number }>;
    const ourN = ranks.reduce((x, r) => x + r.decodeLines, 0);
    const ourMax = Math.max(...ranks.map((r) => r.maxGenThroughput ?? 0));
    if (ourN !== n || Math.abs(ourMax - max) > 0.01)
      throw new Error(`results differ: awk ${n} lines max ${max}; ours ${ourN} lines max ${ourMax}`);
    const mb = statSync(file).size / 1048576;
    console.log(
      `\nparse-log --summary vs awk on ${LINES.toLocaleString('en-US')} lines (${mb.toFixed(0)} MiB), median of ${RUNS}; both found ${n.toLocaleString('en-US')} decode lines`,
    );
    console.log('| what | ms | speed vs awk | goal |\n|---|---:|---:|---|');
    console.log(
      `| awk throughput extraction (${spawnSync('readlink', ['-f', '/usr/bin/awk'], { encoding: 'utf8' }).stdout.trim()}) | ${median(awk).toFixed(0)} | 1.00× | |`,
    );
    console.log(
      `| gpu-sessions parse-log --summary (full per-rank summary) | ${median(ours).toFixed(0)} | ${(median(awk) / median(ours)).toFixed(2)}× | ≥ 0.5× |`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) main();
