/**
 * The state machine on the 2026 failure paths (shared/reference/sglang-2026-fidelity.md t1-t4): hard and soft
 * watchdogs, the subprocess watchdog's exit code, v0.5.18's SIGQUIT handler, torch's teardown warning inside a
 * crash burst, KV allocation RuntimeErrors and PD transfer failures.
 */
import assert from 'node:assert/strict';
import { ServerStateMachine, verdictMessage } from '../../../src/core/sglang/serverState';
import { decode } from '../../helpers/sglangLog';

const healthy = { alive: true, pid: 10, health: { health: 'healthy', detail: 'HTTP 200', durationMs: 30 } };

function serving(): ServerStateMachine {
  const m = new ServerStateMachine(30000);
  for (let i = 0; i < 5; i++) m.feedLine(decode(`10:00:0${i}`, 32, 2000), i * 1000);
  m.observe(healthy, 5000);
  assert.equal(m.verdict(5000).state, 'serving');
  return m;
}

describe('ServerStateMachine: 2026 failure paths', () => {
  it('a hard watchdog (self.soft=False) is a crash caused by a hang, and the SIGQUIT lines after it keep that class', () => {
    const m = serving();
    m.feedLine('[2026-08-12 10:00:06 DP0 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)', 6000);
    let v = m.verdict(6000);
    assert.equal(v.state, 'crashed');
    assert.equal(v.class, 'hang');
    m.feedLine('[2026-08-12 10:00:11] SIGQUIT received. signum=None, frame=None. It usually means one child failed.', 9000);
    m.feedLine('[2026-08-12 10:00:11] No live scheduler processes found; skipping py-spy and CUDA coredump.', 9001);
    m.observe({ alive: false, health: null }, 12_000);
    v = m.verdict(12_000);
    assert.equal(v.state, 'crashed');
    assert.equal(v.class, 'hang');
    assert.match(v.line!, /watchdog timeout/);
  });

  it('a soft watchdog (self.soft=True) is a stall: the process stays, and stat lines again end it', () => {
    const m = serving();
    m.feedLine('[2026-08-12 10:00:06 TP0] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=True)', 6000);
    const v = m.verdict(6000);
    assert.equal(v.state, 'stalled');
    assert.equal(v.class, 'hang');
    m.feedLine(decode('10:00:09', 32, 1900), 9000);
    assert.equal(m.verdict(9000).state, 'serving');
  });

  it('the 2025 watchdog line (no soft flag) is a stall; the process then gone is a crash of class hang', () => {
    const m = serving();
    m.feedLine('[2026-03-01 10:00:06] Watchdog timeout (self.watchdog_timeout=300)', 6000);
    assert.equal(m.verdict(6000).state, 'stalled');
    m.observe({ alive: false, health: null }, 12_000);
    const v = m.verdict(12_000);
    assert.equal(v.state, 'crashed');
    assert.equal(v.class, 'hang');
  });

  it('the subprocess watchdog: a crash at once, its exit code kept in the message', () => {
    const m = serving();
    m.feedLine(
      '[2026-05-06 19:12:07] Subprocess scheduler_0 (pid=22856) crashed with exit code -9. Triggering SIGQUIT for cleanup...',
      6000,
    );
    m.feedLine('[2026-05-06 19:12:07] Received sigquit from a child process. It usually means the child failed.', 6100);
    const v = m.verdict(6200);
    assert.equal(v.state, 'crashed');
    assert.equal(v.class, 'crash');
    assert.equal(v.exitCode, -9);
    assert.match(verdictMessage(v), /exit code -9/);
  });

  it('a more specific line of the burst names the class, and the exit code of the subprocess line stays in the message', () => {
    const m = serving();
    m.feedLine(
      '[2026-05-06 19:12:07] Subprocess scheduler_1 (pid=22857) crashed with exit code -6. Triggering SIGQUIT for cleanup...',
      6000,
    );
    m.feedLine('RuntimeError: CUDA error: device-side assert triggered', 6001);
    const v = m.verdict(6100);
    assert.equal(v.class, 'gpu');
    assert.equal(v.exitCode, -6);
    assert.equal(
      verdictMessage(v),
      'RuntimeError: CUDA error: device-side assert triggered [exit code -6 (SIGABRT, an abort (C++ exception or assertion))]',
    );
  });

  it("torch's teardown warning in the same burst neither fails the server nor relabels a GPU fault as nccl", () => {
    const warn =
      '[rank4]:[W823 09:11:05.020988021 ProcessGroupNCCL.cpp:1624] Warning: WARNING: destroy_process_group() was not called before program exit';
    const quiet = serving();
    quiet.feedLine(warn, 6000);
    assert.equal(quiet.verdict(6000).state, 'serving');
    const m = serving();
    m.feedLine('torch.AcceleratorError: CUDA error: an illegal memory access was encountered', 6000);
    m.feedLine(warn, 6100);
    const v = m.verdict(6200);
    assert.equal(v.state, 'crashed');
    assert.equal(v.class, 'gpu');
  });

  it('a KV allocation RuntimeError is fatal KV pressure; a PD transfer failure changes no state', () => {
    const m = serving();
    m.feedLine(
      '[2025-11-05 16:38:03 TP0] Decode transfer failed for request rank=0 with exception KVTransferError(bootstrap_room=1): Aborted by AbortReq.',
      6000,
    );
    assert.equal(m.verdict(6000).state, 'serving');
    m.feedLine('[2026-08-12 10:00:07 TP0] Scheduler hit an exception: Traceback (most recent call last):', 7000);
    m.feedLine('RuntimeError: Prefill out of memory. Try to lower your batch size.', 7001);
    const v = m.verdict(7100);
    assert.equal(v.state, 'crashed');
    assert.equal(v.class, 'kv-pressure');
  });
});
