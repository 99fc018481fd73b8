/** Issue 40: a restart into the same log is a boundary; a crash's message is its exception line; a graceful drain. */
import assert from 'node:assert/strict';
import { RESTART_BACKLOG_MS, ServerStateMachine } from '../../../src/core/sglang/serverState';
import { classifyLine, isDrainLine, isLaunchBoundaryLine } from '../../../src/core/sglang/logLines';
import { isOkValue } from '../../../src/core/node/guard';
import { decode } from '../../helpers/sglangLog';

const healthy = { alive: true, pid: 10, health: { health: 'healthy', detail: 'HTTP 200', durationMs: 30 } };

// a real scheduler crash, as SGLang writes it (header on the log line, frames and exception raw)
const CRASH = [
  '[2026-12-04 10:00:01 TP0] Scheduler hit an exception: Traceback (most recent call last):',
  '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 2960, in run_scheduler_process',
  '    scheduler.event_loop_overlap()',
  '  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/managers/scheduler.py", line 1011, in event_loop_overlap',
  '    batch = self.get_next_batch_to_run()',
  'ValueError: max_running_requests must be positive, got 0',
  '',
  '[2026-12-04 10:00:01] Received sigquit from a child process. It usually means the child failed.',
];
const SERVER_ARGS = "[2026-12-04 10:05:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', tokenizer_path='Qwen/Qwen3-8B', port=30000)";
const DRAIN = '[2026-12-04 11:00:00] SIGTERM received. signum=None frame=None. Draining requests and shutting down...';

describe('ServerStateMachine: restart boundary, exception line, graceful drain (issue 40)', () => {
  it('the launch lines are boundaries; the drain line is recognised', () => {
    assert.ok(isLaunchBoundaryLine(classifyLine(SERVER_ARGS)));
    assert.ok(isLaunchBoundaryLine(classifyLine('INFO:     Started server process [4242]')));
    assert.ok(!isLaunchBoundaryLine(classifyLine(CRASH[0])));
    assert.ok(isDrainLine(DRAIN));
    assert.ok(!isDrainLine('[2026-12-04 11:00:00] Received sigquit from a child process.'));
  });

  it("a crash's message is its exception line, not the traceback's header", () => {
    const m = new ServerStateMachine(30000);
    m.observe(healthy, 0);
    m.feedLine(decode('10:00:00', 8, 900), 0);
    CRASH.forEach((l, i) => m.feedLine(l, 1000 + i));
    const v = m.verdict(2000);
    assert.equal(v.state, 'crashed');
    assert.equal(v.line, 'ValueError: max_running_requests must be positive, got 0');
  });

  it('a restart into the same log: the re-sent old traceback is not read as new; the new launch is', () => {
    const m = new ServerStateMachine(30000);
    m.observe(healthy, 0);
    m.feedLine(decode('10:00:00', 8, 900), 0);
    CRASH.forEach((l, i) => m.feedLine(l, 1000 + i));
    m.observe({ alive: false, health: null }, 3000);
    assert.equal(m.verdict(3000).state, 'crashed');
    // the same server starts again (new pid), its tail restarts and re-sends the log's last lines
    m.observe({ alive: true, pid: 11, health: { health: 'dead', detail: 'connection refused' } }, 10_000);
    assert.equal(m.verdict(10_000).state, 'starting');
    m.feedLine(decode('10:00:00', 8, 900), 10_100);
    CRASH.forEach((l, i) => m.feedLine(l, 10_200 + i));
    assert.equal(m.verdict(10_500).state, 'starting');
    m.feedLine(SERVER_ARGS, 11_000);
    m.feedLine('[2026-12-04 10:05:30] The server is fired up and ready to roll!', 40_000);
    m.observe({ ...healthy, pid: 11 }, 40_000);
    assert.equal(m.verdict(40_000).state, 'ready');
    // a crash of the new process is read
    CRASH.forEach((l, i) => m.feedLine(l, 50_000 + i));
    assert.equal(m.verdict(50_100).state, 'crashed');
  });

  it("an earlier process's launch line, re-sent after its crash, is no restart: its old traceback cannot crash the new one", () => {
    const OLD_ARGS = SERVER_ARGS.replace('10:05:00', '09:59:50');
    for (const replayBeforeNewPid of [true, false]) {
      const m = new ServerStateMachine(30000);
      m.feedLine(OLD_ARGS, 0);
      m.observe(healthy, 0);
      CRASH.forEach((l, i) => m.feedLine(l, 1000 + i));
      m.observe({ alive: false, health: null }, 3000);
      assert.equal(m.verdict(3000).state, 'crashed');
      const states: string[] = [];
      const replay = (at: number) =>
        [OLD_ARGS, ...CRASH].forEach((l, i) => {
          m.feedLine(l, at + i);
          states.push(m.verdict(at + i).state);
        });
      if (replayBeforeNewPid) replay(9000);
      m.observe({ alive: true, pid: 11, health: { health: 'dead', detail: 'connection refused' } }, 10_000);
      states.push(m.verdict(10_000).state);
      if (!replayBeforeNewPid) replay(10_100);
      assert.equal(m.verdict(10_500).state, 'starting', `replayed ${replayBeforeNewPid ? 'before' : 'after'} the new pid: ${states}`);
      assert.ok(!states.slice(states.indexOf('starting')).includes('crashed'), `no crash after starting: ${states}`);
      // the new process's own launch line (dated after the crash) is a boundary, and its own crash is read
      m.feedLine(SERVER_ARGS, 11_000);
      m.feedLine('[2026-12-04 10:05:30] The server is fired up and ready to roll!', 40_000);
      m.observe({ ...healthy, pid: 11 }, 40_000);
      assert.equal(m.verdict(40_000).state, 'ready');
      CRASH.map((l) => l.replace('10:00:01', '10:06:00')).forEach((l, i) => m.feedLine(l, 50_000 + i));
      assert.equal(m.verdict(50_100).state, 'crashed');
    }
  });

  it('a launch line read before the poll sees the new pid: the new process is live at once (a crash at load is read)', () => {
    const m = new ServerStateMachine(30000);
    m.observe(healthy, 0);
    CRASH.forEach((l, i) => m.feedLine(l, 1000 + i));
    m.observe({ alive: false, health: null }, 3000);
    m.feedLine(SERVER_ARGS, 9000);
    m.observe({ alive: true, pid: 11, health: { health: 'dead', detail: 'connection refused' } }, 10_000);
    assert.equal(m.verdict(10_000).state, 'starting');
    const atLoad = [
      '[2026-12-04 10:05:09 TP0] Scheduler hit an exception: Traceback (most recent call last):',
      'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.',
    ];
    atLoad.forEach((l, i) => m.feedLine(l, 15_000 + i));
    const v = m.verdict(15_100);
    assert.equal(v.state, 'crashed');
    assert.match(v.line ?? '', /OutOfMemoryError/);
  });

  it('without a launch line, lines after the backlog window are live again', () => {
    const m = new ServerStateMachine(30000);
    m.observe(healthy, 0);
    m.observe({ ...healthy, pid: 11 }, 1000);
    CRASH.forEach((l) => m.feedLine(l, 1100));
    assert.notEqual(m.verdict(1200).state, 'crashed');
    CRASH.forEach((l) => m.feedLine(l, 1000 + RESTART_BACKLOG_MS));
    assert.equal(m.verdict(1000 + RESTART_BACKLOG_MS).state, 'crashed');
  });

  it('a 503 polled while it started, judged after its ready line, is not unhealthy; a 503 after it is', () => {
    const m = new ServerStateMachine(30000);
    m.observe({ alive: true, pid: 10, health: { health: 'starting', detail: 'HTTP 503', at: 900 } }, 1000);
    m.feedLine('[2026-12-04 10:05:30] The server is fired up and ready to roll!', 1500);
    m.observe({ alive: true, pid: 10, health: { health: 'starting', detail: 'HTTP 503', at: 900 } }, 2000);
    assert.equal(m.verdict(2000).state, 'ready');
    // a 503 sent after the ready line, in its first seconds: warm-up still settling (a poll racing the line)
    m.observe({ alive: true, pid: 10, health: { health: 'starting', detail: 'HTTP 503', at: 2500 } }, 3000);
    assert.equal(m.verdict(3000).state, 'ready');
    // past the settling window a 503 is unhealthy
    m.observe({ alive: true, pid: 10, health: { health: 'starting', detail: 'HTTP 503', at: 12_000 } }, 12_500);
    assert.equal(m.verdict(12_500).state, 'unhealthy');
  });

  it('a graceful drain is stopping (503 is not unhealthy), its exit stopped; neither is an alert', () => {
    const m = new ServerStateMachine(30000);
    m.observe(healthy, 0);
    m.feedLine(decode('11:59:59', 4, 500), 0);
    m.feedLine(DRAIN, 1000);
    m.observe({ alive: true, pid: 10, health: { health: 'starting', detail: 'HTTP 503' } }, 2000);
    const v = m.verdict(2000);
    assert.equal(v.state, 'stopping');
    assert.equal(v.class, null);
    m.observe({ alive: false, health: null }, 5000);
    assert.equal(m.verdict(5000).state, 'stopped');
    assert.ok(isOkValue('stopping') && isOkValue('stopped'));
    // started again: a fresh server
    m.observe({ alive: true, pid: 12, health: null }, 9000);
    m.feedLine(SERVER_ARGS, 9100);
    m.observe({ ...healthy, pid: 12 }, 9200);
    assert.equal(m.verdict(9200).state, 'ready');
  });
});
