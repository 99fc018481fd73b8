/**
 * Keep a running node salvaged (issue 17), over a REAL OpenSSH sshd: during `salvage --watch`, lines appended
 * to a server log and a new batch file appear locally within two intervals, verified; a truncated log is
 * fetched whole; Ctrl-C exits 130 with a consistent manifest; sshd stopped mid-watch → the final report
 * names the last sync time and the bytes at risk.
 */
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SimNode, startSimNode } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';

const CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');
const INTERVAL_S = 2;

interface Proc {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exit: Promise<number | null>;
}

function start(args: string[]): Proc {
  const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (b) => (out += b));
  child.stderr!.on('data', (b) => (err += b));
  const exit = new Promise<number | null>((resolve) => child.on('close', (c) => resolve(c)));
  return { child, stdout: () => out, stderr: () => err, exit };
}

function manifestOf(dest: string): {
  watch?: { syncs: number; lastSyncedAt: string };
  items: Array<{ remotePath: string; localPath: string; status: string; size: number; reason: string | null; syncedAt?: string }>;
  verdict: string | null;
  dest: string;
} | null {
  const nd = path.join(dest, 'simnode');
  if (!existsSync(nd)) return null;
  const run = readdirSync(nd).sort().pop();
  if (!run) return null;
  try {
    return JSON.parse(readFileSync(path.join(nd, run, 'salvage-manifest.json'), 'utf8'));
  } catch {
    return null;
  }
}

describe('salvage --watch: keep a running node salvaged (real sshd)', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let base: string;
  const procs: Proc[] = [];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({
      gpuCount: 2,
      beforeStart: (home) => {
        // Idle servers: the logs grow only when this test appends to them.
        const env = path.join(home, '.sim', 'env.sh');
        writeFileSync(env, readFileSync(env, 'utf8') + 'export SGLANG_SIM_RUNNING=0\n');
      },
    });
    base = mkdtempSync(path.join(os.tmpdir(), 'gs-watch-'));
  });
  after(async () => {
    for (const p of procs) if (p.child.exitCode === null) p.child.kill('SIGKILL');
    await sim?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  const args = (dest: string) => [
    '--ssh-config',
    sim.sshd.sshConfigFile,
    '--known-hosts',
    sim.sshd.knownHostsFile,
    '--timeout',
    '3',
    'salvage',
    'simnode',
    '--dest',
    dest,
    '--yes',
    '--json',
    '--watch',
    '--interval',
    String(INTERVAL_S),
    '--grace',
    '4',
  ];

  it('appended log lines and a new batch arrive within two intervals, verified; a truncated log is fetched whole; Ctrl-C exits 130', async () => {
    const dest = path.join(base, 'w1');
    const p = start(args(dest));
    procs.push(p);
    await waitFor('the first watch sync', () => (manifestOf(dest)?.watch?.syncs ?? -1) >= 1, 120_000);
    const log = sim.layout.logFiles[0];
    appendFileSync(log, 'MARKER appended while watching\n'.repeat(50));
    const batch = path.join(sim.home, 'completions', 'batch_999999.jsonl');
    writeFileSync(batch, '{"index": 1, "completion": "new batch"}\n'.repeat(20));
    const t0 = Date.now();
    const item = (f: string) => manifestOf(dest)?.items.find((i) => i.remotePath === f);
    const same = (f: string) => {
      const m = manifestOf(dest);
      const it = m?.items.find((i) => i.remotePath === f);
      if (!m || !it || it.status !== 'verified' || !it.localPath) return false;
      const local = path.join(m.dest, it.localPath);
      return existsSync(local) && readFileSync(local).equals(readFileSync(f));
    };
    await waitFor('the appended log and the new batch to be synced', () => same(log) && same(batch), 30_000);
    const took = Date.now() - t0;
    assert.ok(took <= 2 * INTERVAL_S * 1000 + 4000, `synced after ${took} ms (interval ${INTERVAL_S} s)`);
    assert.match(item(log)!.reason ?? '', /appended \d+ B/, `only the appended bytes travelled (reason: ${item(log)!.reason})`);
    assert.ok(item(log)!.syncedAt, 'syncedAt per item');
    // A truncated (rotated) log: the prefix no longer matches, so it is fetched whole.
    writeFileSync(log, 'rotated\n');
    // the server goes on writing into it: after the whole fetch, a later sync may append to the new copy, so every
    // reason seen is kept; one of them must be the whole fetch (before the truncation it read "appended")
    const reasons = new Set<string>();
    await waitFor(
      'the truncated log to be fetched whole',
      () => {
        const it = item(log);
        if (it) reasons.add(it.reason ?? '(none: whole file verified)');
        return same(log) && [...reasons].some((x) => !/appended/.test(x));
      },
      30_000,
    );
    // Ctrl-C: a clean stop with a consistent manifest.
    p.child.kill('SIGINT');
    const code = await p.exit;
    assert.equal(code, 130, p.stderr().slice(-2000));
    const rep = JSON.parse(p.stdout());
    assert.equal(rep.interrupted, true);
    const m = manifestOf(dest)!;
    for (const it of m.items) assert.ok(['verified', 'failed', 'skipped'].includes(it.status), `${it.remotePath}: ${it.status}`);
    assert.ok(readFileSync(path.join(m.dest, 'files', log.slice(1))).equals(readFileSync(log)));
  });

  it('sshd stopped mid-watch: the final report names the last sync time and the bytes at risk', async () => {
    const dest = path.join(base, 'w2');
    const p = start(args(dest));
    procs.push(p);
    await waitFor('the first watch sync', () => (manifestOf(dest)?.watch?.syncs ?? -1) >= 1, 120_000);
    // The job keeps writing: the rate the watch measures makes the estimate of what is lost.
    const log = sim.layout.logFiles[1];
    const writer = setInterval(() => appendFileSync(log, 'decode line written by the job\n'.repeat(40)), 250);
    try {
      const s0 = manifestOf(dest)!.watch!.syncs;
      await waitFor('two syncs while the job writes', () => (manifestOf(dest)?.watch?.syncs ?? 0) >= s0 + 2, 60_000);
      await sim.sshd.stop();
      const code = await Promise.race([p.exit, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 90_000))]);
      assert.equal(code, 5, `exit ${code}: ${p.stderr().slice(-2000)}`);
    } finally {
      clearInterval(writer);
    }
    const rep = JSON.parse(p.stdout());
    assert.equal(rep.vanished, true);
    assert.ok(rep.lastSyncedAt && !Number.isNaN(Date.parse(rep.lastSyncedAt)), rep.lastSyncedAt);
    assert.equal(typeof rep.atRiskBytes, 'number');
    assert.ok(rep.atRiskBytes > 0, `at risk ${rep.atRiskBytes}`);
    assert.equal(rep.verdict, 'unsafe');
    const md = readFileSync(path.join(rep.dest, 'SALVAGE.md'), 'utf8');
    assert.match(md, /The node vanished/);
    assert.ok(md.includes(rep.lastSyncedAt), 'SALVAGE.md names the last sync time');
    await sim.sshd.restart();
  });
});
