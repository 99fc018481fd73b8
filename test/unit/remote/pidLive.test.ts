/**
 * shPidLive: alive means a /proc entry that is not a zombie. A stopped server that no one reaps (PID 1 in many
 * containers does not) stays in /proc in state Z; the salvage's snapshot counted it alive while the probe did not,
 * and end-rental then refused its own fresh verdict as stale (CI of stop 50). Real processes, real sh.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { shPidLive } from '../../../src/core/remote/pidLive';

const live = (pid: number) => {
  const r = spawnSync('sh', ['-c', `if ${shPidLive(pid)}; then echo yes; else echo no; fi`]);
  assert.equal(r.stderr.toString(), '', 'nothing on stderr (a gone pid is not an error)');
  return r.stdout.toString().trim();
};

describe('shPidLive', function () {
  this.timeout(20_000);
  it('a running process is alive; a zombie and a pid that does not exist are not', async () => {
    // The parent forks a child that exits at once and is never reaped: a zombie for as long as the parent sleeps.
    const py = 'import os,sys,time\np=os.fork()\nif p==0: os._exit(0)\nprint(p, flush=True)\ntime.sleep(30)\n';
    const parent = spawn('python3', ['-c', py], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const child = Number(await new Promise<string>((res) => parent.stdout.once('data', (d: Buffer) => res(d.toString()))));
      for (let i = 0; i < 50 && !/\) Z /.test(readFileSync(`/proc/${child}/stat`, 'utf8')); i++)
        await new Promise((r) => setTimeout(r, 50));
      assert.match(readFileSync(`/proc/${child}/stat`, 'utf8'), /\) Z /, 'the child is a zombie');
      assert.equal(live(parent.pid!), 'yes');
      assert.equal(live(child), 'no');
    } finally {
      parent.kill('SIGKILL');
    }
    assert.equal(live(2 ** 22 + 12345), 'no');
  });
  it('refuses what is not a pid (the value goes into a script)', () => {
    assert.throws(() => shPidLive(Number('1; reboot')), /not a pid/);
    assert.throws(() => shPidLive(-1), /not a pid/);
  });
});
