/** A restarted tail's backlog is delivered once: only the lines after those already delivered. */
import assert from 'node:assert/strict';
import { ReplayFilter, afterReplayed } from '../../../src/core/node/replayFilter';

const TB = [
  "[2026-12-04 10:00:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', port=30000)",
  '[2026-12-04 10:00:05] Load weight begin. avail mem=78.50 GB',
  '[2026-12-04 10:00:09 TP0] Scheduler hit an exception: Traceback (most recent call last):',
  'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.',
  '[2026-12-04 10:00:09] Received sigquit from a child process. It usually means the child failed.',
];
const NEW_ARGS = "[2026-12-04 10:02:00] server_args=ServerArgs(model_path='Qwen/Qwen3-8B', port=30000)";

describe('ReplayFilter: a restarted tail re-sends lines already judged', () => {
  it('afterReplayed: the lines after the overlap; all when there is none; none when nothing is new', () => {
    assert.deepEqual(afterReplayed(TB, [...TB.slice(1), NEW_ARGS]), [NEW_ARGS]);
    assert.deepEqual(afterReplayed(TB, TB.slice(2)), []);
    assert.deepEqual(afterReplayed([], TB), TB);
    assert.deepEqual(afterReplayed(['x', 'y'], ['a', 'b']), ['a', 'b']);
    // the last line alone matches but the one before it differs: not an overlap
    assert.deepEqual(afterReplayed(['a', 'y'], ['b', 'y', 'z']), ['b', 'y', 'z']);
    // repeated text: the latest aligned position wins
    assert.deepEqual(afterReplayed(['a', 'b'], ['a', 'b', 'c', 'a', 'b', 'd']), ['d']);
  });

  it('a short log that crashed at load, followed again after a restart: the old launch and traceback are not re-delivered', () => {
    const out: string[] = [];
    const f = new ReplayFilter((file, line) => out.push(`${file}|${line}`));
    f.tailStarting(['gpu0.log']);
    for (const l of TB) f.line('gpu0.log', l);
    f.backlogDone();
    assert.equal(out.length, TB.length, 'a log never followed before is delivered whole');
    out.length = 0;
    // the server is gone (its log leaves the tail), then back: the new tail sends the log's last lines
    f.tailStarting(['gpu1.log']);
    f.line('gpu1.log', 'other');
    f.backlogDone();
    f.tailStarting(['gpu0.log', 'gpu1.log']);
    for (const l of [...TB, NEW_ARGS]) f.line('gpu0.log', l);
    f.line('gpu1.log', 'other');
    assert.deepEqual(out, ['gpu1.log|other'], 'nothing of a re-followed log before its backlog ends');
    f.backlogDone();
    assert.deepEqual(out, ['gpu1.log|other', `gpu0.log|${NEW_ARGS}`]);
    f.line('gpu0.log', 'live');
    assert.equal(out[out.length - 1], 'gpu0.log|live');
  });

  it('a log truncated and rewritten while unfollowed is delivered whole', () => {
    const out: string[] = [];
    const f = new ReplayFilter((_file, line) => out.push(line));
    for (const l of TB) f.line('a.log', l);
    out.length = 0;
    f.tailStarting(['a.log']);
    f.line('a.log', NEW_ARGS);
    f.line('a.log', '[2026-12-04 10:02:01] Load weight begin.');
    f.backlogDone();
    assert.deepEqual(out, [NEW_ARGS, '[2026-12-04 10:02:01] Load weight begin.']);
  });
});
