/** The server state machine (core/sglang/serverState) on recorded inputs, time passed in. */
import assert from 'node:assert/strict';
import { ServerStateMachine } from '../../../src/core/sglang/serverState';
import { decode } from '../../helpers/sglangLog';

const healthy = { alive: true, pid: 10, health: { health: 'healthy', detail: 'HTTP 200', durationMs: 30 } };

describe('ServerStateMachine', () => {
  it('serving, then a silent stall with queued requests, then back to serving', () => {
    const m = new ServerStateMachine(30000, { silentMinMs: 3000, silentIntervals: 3 });
    let t = 0;
    for (let i = 0; i < 10; i++, t += 1000) m.feedLine(decode('10:00:00', 32, 2000), t);
    m.observe(healthy, t);
    assert.equal(m.verdict(t).state, 'serving');
    m.feedLine(decode('10:00:10', 32, 0, 12), t);
    t += 5000;
    const v = m.verdict(t);
    assert.equal(v.state, 'stalled');
    assert.equal(v.class, 'hang');
    assert.match(v.reason, /no stat line/);
    m.feedLine(decode('10:00:15', 32, 1900), t);
    assert.equal(m.verdict(t).state, 'serving');
  });

  it('an idle server (last line with one request, then silence) is idle, not stalled', () => {
    const m = new ServerStateMachine(30000);
    let t = 0;
    for (const run of [32, 16, 8, 4, 2, 1]) m.feedLine(decode('10:00:00', run, 100 * run), (t += 1000));
    m.observe(healthy, t);
    assert.equal(m.verdict(t + 60_000).state, 'idle');
  });

  it('a crash burst takes its most specific class; a gone process is crashed; a restart starts over', () => {
    const m = new ServerStateMachine(30000);
    m.feedLine(decode('10:00:00', 32, 2000), 0);
    m.observe(healthy, 0);
    m.feedLine('[2026-03-01 10:00:01] Scheduler hit an exception: Traceback (most recent call last):', 1000);
    m.feedLine('torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.', 1001);
    m.feedLine('[2026-03-01 10:00:01] Received sigquit from a child process. It usually means the child failed.', 1002);
    const v = m.verdict(1500);
    assert.equal(v.state, 'crashed');
    assert.equal(v.class, 'oom');
    m.observe({ alive: false, health: null }, 3000);
    assert.equal(m.verdict(3000).class, 'oom');
    m.observe({ ...healthy, pid: 11 }, 10_000);
    assert.notEqual(m.verdict(10_000).state, 'crashed');
  });

  it('/health: 503 after ready or no answer for 20 s is unhealthy; 503 before ready is starting', () => {
    const m = new ServerStateMachine(30000);
    m.observe({ alive: true, health: { health: 'starting', detail: 'HTTP 503' } }, 0);
    assert.equal(m.verdict(0).state, 'starting');
    m.feedLine('[2026-03-01 10:00:00] The server is fired up and ready to roll!', 100);
    m.observe({ alive: true, health: { health: 'starting', detail: 'HTTP 503' } }, 200);
    assert.equal(m.verdict(200).state, 'ready', 'in its first seconds after ready: warm-up settling');
    m.observe({ alive: true, health: { health: 'starting', detail: 'HTTP 503' } }, 10_200);
    assert.equal(m.verdict(10_200).state, 'unhealthy');
    m.observe({ alive: true, health: { health: 'healthy', detail: 'HTTP 200' }, healthInFlightSince: 1000 }, 21_500);
    assert.equal(m.verdict(21_500).state, 'unhealthy');
  });

  it('/health refused while the process runs: a dying server is crashed with its class, unhealthy only if it stays so', () => {
    const dead = { health: 'dead', detail: 'connection closed: socket hang up' };
    const dying = new ServerStateMachine(30000);
    dying.feedLine('[2026-03-01 10:00:00] The server is fired up and ready to roll!', 0);
    dying.observe(healthy, 0);
    dying.observe({ alive: true, pid: 10, health: dead }, 4000); // the probe still saw it; /health already closed
    assert.notEqual(dying.verdict(4000).state, 'unhealthy', 'not a hang: it is dying');
    dying.feedLine('[rank0]:[E0301 10:00:04 ProcessGroupNCCL.cpp:616] [Rank 0] Watchdog caught collective operation timeout', 4500);
    dying.observe({ alive: false, health: dead }, 8000);
    assert.equal(dying.verdict(8000).state, 'crashed');
    assert.equal(dying.verdict(8000).class, 'nccl');
    const refusing = new ServerStateMachine(30001);
    refusing.feedLine('[2026-03-01 10:00:00] The server is fired up and ready to roll!', 0);
    refusing.observe(healthy, 0);
    refusing.observe({ alive: true, pid: 10, health: dead }, 4000);
    refusing.observe({ alive: true, pid: 10, health: dead }, 8000);
    assert.notEqual(refusing.verdict(8000).state, 'unhealthy', 'within the grace');
    refusing.observe({ alive: true, pid: 10, health: dead }, 12_000);
    assert.equal(refusing.verdict(12_000).state, 'unhealthy');
    refusing.observe(healthy, 16_000);
    assert.notEqual(refusing.verdict(16_000).state, 'unhealthy');
  });

  it('DP rank under half the median of its peers for the imbalance time → dp-imbalance', () => {
    const m = new ServerStateMachine(30000, { imbalanceMs: 5000 });
    let t = 0;
    for (let i = 0; i < 8; i++, t += 1000) {
      for (const [dp, g] of [
        [0, 2000],
        [1, 2100],
        [2, 600],
      ])
        m.feedLine(decode('10:00:00', 32, g).replace(']', ` DP${dp}]`), t);
      m.observe(healthy, t);
    }
    const c = m.conditions(t);
    assert.equal(c.value.balance, 'dp-imbalance');
    assert.match(c.messages.balance, /DP2/);
  });
});
