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

const INTERVAL_S = 2;

describe('gpu-sessions watch: restart into the same log, graceful drain (issue 40)', function () {
  this.timeout(240_000);
  const node = useSimNode({ user: 'gswrestart', gpuCount: 2, genTokPerSec: 2000 });

  const ssh = (cmd: string): string => {
    const r = node.sim().sshd.ssh(cmd);
    assert.equal(r.status, 0, `${cmd}: ${r.stderr}`);
    return r.stdout.trim();
  };
  const pidOf = (port: number) => Number(ssh(`cut -d' ' -f1 ~/.sim/run/server_${port}.pid`));

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
      const argv = ssh(`xargs -0 printf '%q ' < /proc/${pidOf(p0)}/cmdline`);
      const t0 = Date.now() - 50;
      ssh(`sim-fault ${p0} crash`);
      await waitFor(`crashed; seen ${JSON.stringify(of(p0, t0))}`, () => of(p0, t0).some((l) => l.to === 'crashed'), 15_000);
      const crash = of(p0, t0).find((l) => l.to === 'crashed')!;
      assert.doesNotMatch(crash.message ?? '', /Traceback \(most recent call last\):$/, 'the message is the exception line');
      // gone for a couple of polls, then started again into the same log
      await new Promise((r) => setTimeout(r, 2 * INTERVAL_S * 1000));
      ssh(`sim-fault ${p0} clear`);
      // (an 8 s start: polls see it starting, though each waits for the other server's /health, which answers after
      // its ~1 s generation probe as SGLang's does; ssh may end 255 as the session closes under the detached server:
      // its output says it ran)
      const r = sim.sshd.ssh(
        `cd ~ && CUDA_VISIBLE_DEVICES=0 SGLANG_SIM_STARTUP_S=8 setsid nohup ${argv} >> ~/logs/sglang_gpu0.log 2>&1 < /dev/null & echo started`,
      );
      assert.match(r.stdout, /started/, r.stderr);
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
