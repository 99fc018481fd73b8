/**
 * Issue 40 over a real sshd: a simulated server crashed and started again into the same log (appended) gives one
 * crashed → starting → ready/serving sequence and one alert (the old traceback, re-sent by the restarted tail, is
 * not read as new); a graceful SIGTERM drain is stopping → stopped, no alert.
 */
import assert from 'node:assert/strict';
import { isOkValue } from '../../src/core/node/guard';
import { useSimNode } from '../helpers/simnode';
import { Line, Watch } from '../helpers/watchCli';
import { waitFor } from '../helpers/wait';
import { simShell } from '../helpers/simShell';

const INTERVAL_S = 2;

describe('gpu-sessions watch: restart into the same log, graceful drain (issue 40)', function () {
  this.timeout(240_000);
  const node = useSimNode({ user: 'gswrestart', gpuCount: 2, genTokPerSec: 2000 });

  const { ssh, pidOf, argvOf, startInLog } = simShell(node.sim);

  it('a server with a short log (its launch line among the last lines) crashed and started again: one crash, no flap', async () => {
    const sim = node.sim();
    const [p0, p1] = sim.layout.ports;
    const argv = argvOf(p1);
    ssh(`kill -INT ${pidOf(p1)}`);
    await waitFor('stopped', () => ssh(`ls ~/.sim/run/ | grep -c server_${p1}.pid || true`) === '0', 20_000);
    ssh(': > ~/logs/sglang_gpu1.log');
    const w = new Watch(sim, ['--interval', String(INTERVAL_S)], { GPU_SESSIONS_CACHE_DIR: node.cache() });
    const of = (since: number) => w.transitions(since).filter((l: Line) => l.port === p1 && (l.subject ?? 'server') === 'server');
    const stateOf = (port: number) =>
      ((w.lastSample() as { servers?: Array<{ port: number; state: string }> } | undefined)?.servers ?? []).find((s) => s.port === port)
        ?.state;
    try {
      await waitFor(`the other serving; stderr ${w.stderr}`, () => stateOf(p0) === 'serving', 40_000);
      // started into the emptied log, it crashes 12 s later: the whole log stays shorter than the tail's 60 lines
      const t0 = Date.now() - 50;
      startInLog(1, argv, 'SGLANG_SIM_STARTUP_S=2 SGLANG_SIM_DECODE_PERIOD_S=5 SGLANG_SIM_CRASH_AFTER_S=12');
      await waitFor(`crashed; seen ${JSON.stringify(of(t0))}`, () => of(t0).some((l) => l.to === 'crashed'), 40_000);
      await new Promise((r) => setTimeout(r, 2 * INTERVAL_S * 1000));
      // the precondition that makes this test: the re-followed log's last 60 lines hold its old launch line
      assert.ok(Number(ssh('grep -c "" ~/logs/sglang_gpu1.log')) < 55, 'the log is short');
      const t1 = Date.now() - 50;
      // silent for 8 s (its imports) before its first line, as a real server is: the old lines must not count
      startInLog(1, argv, 'SGLANG_SIM_IMPORT_S=8 SGLANG_SIM_STARTUP_S=4');
      await waitFor(
        `serving again; seen ${JSON.stringify(of(t1))}`,
        () => ['ready', 'idle', 'serving'].includes(of(t1).pop()?.to ?? ''),
        40_000,
      );
      await new Promise((r) => setTimeout(r, 3 * INTERVAL_S * 1000));
      const seq = of(t0).map((l) => l.to);
      const said = of(t0).map((l) => `${l.time ?? ''} ${l.to}: ${l.message ?? ''}`);
      assert.equal(seq.filter((s) => s === 'crashed').length, 1, `one crash: ${JSON.stringify(seq)}\n${said.join('\n')}`);
      const after = of(t1).map((l) => l.to);
      assert.ok(
        after.every((s) => isOkValue(s!)),
        `no alert after the restart: ${JSON.stringify(after)}`,
      );
    } finally {
      await w.stop();
    }
  });

  it('a crash then a start into the same log: one crashed, then starting and ready; a SIGTERM drain: no alert', async () => {
    const sim = node.sim();
    const [p0, p1] = sim.layout.ports;
    const w = new Watch(sim, ['--interval', String(INTERVAL_S)], { GPU_SESSIONS_CACHE_DIR: node.cache() });
    const of = (port: number, since: number) =>
      w.transitions(since).filter((l: Line) => l.port === port && (l.subject ?? 'server') === 'server');
    const stateOf = (port: number) =>
      ((w.lastSample() as { servers?: Array<{ port: number; state: string }> } | undefined)?.servers ?? []).find((s) => s.port === port)
        ?.state;
    try {
      await waitFor(`both serving; stderr ${w.stderr}`, () => stateOf(p0) === 'serving' && stateOf(p1) === 'serving', 40_000);
      // the server's own command line, shell-quoted, to start it again the way a user would (log appended)
      const argv = argvOf(p0);
      const t0 = Date.now() - 50;
      ssh(`sim-fault ${p0} crash`);
      await waitFor(`crashed; seen ${JSON.stringify(of(p0, t0))}`, () => of(p0, t0).some((l) => l.to === 'crashed'), 15_000);
      const crash = of(p0, t0).find((l) => l.to === 'crashed')!;
      assert.doesNotMatch(crash.message ?? '', /Traceback \(most recent call last\):$/, 'the message is the exception line');
      // gone for a couple of polls, then started again into the same log
      await new Promise((r) => setTimeout(r, 2 * INTERVAL_S * 1000));
      ssh(`sim-fault ${p0} clear`);
      // (an 8 s start: polls see it starting, though each waits for the other server's /health, which answers after
      // its ~1 s generation probe as SGLang's does)
      startInLog(0, argv, 'SGLANG_SIM_STARTUP_S=8');
      await waitFor(
        `serving again; seen ${JSON.stringify(of(p0, t0))}`,
        () => ['ready', 'idle', 'serving'].includes(of(p0, t0).pop()?.to ?? ''),
        40_000,
      );
      // a few more polls: nothing may flap back
      await new Promise((r) => setTimeout(r, 3 * INTERVAL_S * 1000));
      const seq = of(p0, t0).map((l) => l.to);
      assert.equal(seq.filter((s) => s === 'crashed').length, 1, `one crash: ${JSON.stringify(seq)}`);
      assert.deepEqual(seq.slice(0, 2), ['crashed', 'starting'], JSON.stringify(seq));
      assert.ok(
        seq.slice(1).every((s) => isOkValue(s!)),
        `no alert after the restart: ${JSON.stringify(seq)}`,
      );
      assert.ok(['ready', 'idle', 'serving'].includes(seq[seq.length - 1]!), JSON.stringify(seq));

      // a graceful stop of the other server: SIGTERM, drain, exit 0
      const t1 = Date.now() - 50;
      ssh(`kill -TERM ${pidOf(p1)}`);
      await waitFor(`stopped; seen ${JSON.stringify(of(p1, t1))}`, () => of(p1, t1).some((l) => l.to === 'stopped'), 20_000);
      await new Promise((r) => setTimeout(r, 2 * INTERVAL_S * 1000));
      const seq1 = of(p1, t1).map((l) => l.to);
      assert.ok(
        seq1.every((s) => s === 'stopping' || s === 'stopped'),
        `no alert for a drain: ${JSON.stringify(seq1)}`,
      );
    } finally {
      await w.stop();
    }
  });
});
