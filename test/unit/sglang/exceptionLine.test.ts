import * as assert from 'node:assert/strict';
import { exceptionLine, isTracebackHeader, shownFailureMessage } from '../../../src/core/sglang/exceptionLine';

describe('exceptionLine: what a crash alert quotes', () => {
  it('the exception line after the frames of the last traceback, not its header', () => {
    const lines = [
      '[2026-12-02 00:01:02] Decode batch. #running-req: 30, gen throughput (token/s): 2000.00',
      '[2026-12-02 00:01:03] Scheduler hit an exception: Traceback (most recent call last):',
      '  File "/usr/local/lib/python3.11/dist-packages/sglang/srt/managers/scheduler.py", line 2817, in run_scheduler_process',
      '    scheduler.event_loop_overlap()',
      '                  ^^^^^^^^^^^^^^^^',
      'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.',
      '',
      '[2026-12-02 00:01:03] Received sigquit from a child process. It usually means the child failed.',
    ];
    assert.equal(exceptionLine(lines), 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.');
    assert.ok(isTracebackHeader(lines[1]));
    assert.ok(!isTracebackHeader(lines[5]));
  });

  it('a chained traceback: the last one counts; none written yet: null', () => {
    const lines = [
      'Traceback (most recent call last):',
      '  File "a.py", line 1, in <module>',
      'KeyError: x',
      '',
      'During handling of the above exception, another exception occurred:',
      '',
      'Traceback (most recent call last):',
      '  File "b.py", line 2, in <module>',
      'RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error',
    ];
    assert.equal(exceptionLine(lines), 'RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system error');
    assert.equal(exceptionLine(['Traceback (most recent call last):', '  File "a.py", line 1, in <module>']), null);
    assert.equal(exceptionLine(['no traceback here']), null);
  });

  it('shown messages never quote the traceback header: the exception line, else what precedes it (issue 43)', () => {
    const header = '[2026-12-04 10:59:01 TP0] Scheduler hit an exception: Traceback (most recent call last):';
    assert.equal(shownFailureMessage(header, 'RuntimeError: CUDA out of memory'), 'RuntimeError: CUDA out of memory');
    assert.equal(shownFailureMessage(header), 'Scheduler hit an exception (the exception line is in the log)');
    assert.equal(shownFailureMessage('Traceback (most recent call last):'), 'a Python exception (the exception line is in the log)');
    assert.equal(shownFailureMessage('crash: Traceback (most recent call last):', null), 'crash (the exception line is in the log)');
    assert.equal(shownFailureMessage('RuntimeError: CUDA out of memory', 'x'), 'RuntimeError: CUDA out of memory');
    for (const m of [header, 'Traceback (most recent call last):'])
      assert.ok(!/Traceback \(most recent call last\)/.test(shownFailureMessage(m)));
  });
});
