/**
 * The 2026 failure paths of the simulated node, live through `gpu-sessions watch --json` over a real sshd: the
 * hard scheduler watchdog (`Scheduler watchdog timeout (…, self.soft=False)`, then v0.5.18's SIGQUIT handler and
 * exit) and the subprocess watchdog (`Subprocess scheduler_0 (pid=…) crashed with exit code -9. …`). Each gives
 * exactly one transition, serving → crashed, with the right class (hang for the watchdog: the cause, not the
 * SIGQUIT that follows it; crash for the dead subprocess, its exit code kept in the message).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SimNode, startSimNode } from '../helpers/simnode';
import { Line, Watch } from '../helpers/watchCli';
import { waitFor } from '../helpers/wait';

const INTERVAL_S = 3;

describe('2026 failure paths: hard watchdog and subprocess crash (watch --json)', function () {
  this.timeout(180_000);
  let sim: SimNode;
  let cache: string;
  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    cache = mkdtempSync(path.join(os.tmpdir(), 'gs-faults2026-cache-'));
    sim = await startSimNode({ user: 'gs29fault', gpuCount: 2, genTokPerSec: 2000 });
  });
  after(async () => {
    await sim?.stop();
    if (cache) rmSync(cache, { recursive: true, force: true });
  });

  it('each gives exactly one transition to crashed with its class', async () => {
    const p = sim.layout.ports;
    const w = new Watch(sim, ['--interval', String(INTERVAL_S)], { GPU_SESSIONS_CACHE_DIR: cache });
    try {
      const ours = (s: Line | undefined) =>
        ((s as { servers?: Array<{ port: number; state: string }> } | undefined)?.servers ?? []).filter((x) => p.includes(x.port));
      await waitFor(
        `both servers serving; stderr ${w.stderr}`,
        () => {
          const o = ours(w.lastSample());
          return o.length === 2 && o.every((x) => x.state === 'serving');
        },
        40_000,
      );
      const t0 = Date.now() - 50;
      for (const [port, mode] of [
        [p[0], 'hang-hard delayS=2'],
        [p[1], 'subprocess-crash'],
      ] as const) {
        const r = sim.sshd.ssh(`sim-fault ${port} ${mode}`);
        assert.equal(r.status, 0, r.stderr);
      }
      const of = (port: number) => (l: Line) => l.port === port && (l.subject ?? 'server') === 'server';
      await waitFor(
        `transitions; seen ${JSON.stringify(w.transitions(t0))}`,
        () => w.transitions(t0).some(of(p[0])) && w.transitions(t0).some(of(p[1])),
        4 * INTERVAL_S * 1000 + 5000,
      );
      // the hard watchdog's process exits ~2 s after its line, the subprocess crash's at once: wait past both
      // exits and two more polls, then nothing else may have followed
      await new Promise((r) => setTimeout(r, 2 * INTERVAL_S * 1000 + 3000));
      const hard = w.transitions(t0).filter(of(p[0]));
      const sub = w.transitions(t0).filter(of(p[1]));
      assert.equal(hard.length, 1, `exactly one for the hard watchdog: ${JSON.stringify(hard)}`);
      assert.equal(sub.length, 1, `exactly one for the subprocess crash: ${JSON.stringify(sub)}`);
      assert.deepEqual([hard[0].from, hard[0].to, hard[0].class], ['serving', 'crashed', 'hang']);
      assert.match(hard[0].message!, /Scheduler watchdog timeout \(self\.watchdog_timeout=300, self\.soft=False\)/);
      assert.deepEqual([sub[0].from, sub[0].to, sub[0].class], ['serving', 'crashed', 'crash']);
      assert.match(sub[0].message!, /exit code -9/);
      // both processes are gone (the watchdog's SIGQUIT and the subprocess watchdog really exit)
      const left = sim.sshd.ssh(`pgrep -u ${sim.user} -f 'sglang[.]launch_server.*--port (${p[0]}|${p[1]})' | wc -l`).stdout.trim();
      assert.equal(left, '0');
    } finally {
      await w.stop();
    }
  });
});
