import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { shJoin, shq } from '../../../src/core/remote/quote';

describe('shell quoting', () => {
  const hostile = [
    'plain',
    'a b',
    `it's`,
    '"dq"',
    '$(touch /tmp/gs-pwned)',
    '`id`',
    'new\nline',
    '-n',
    '--flag=$HOME',
    '*',
    '~',
    'a;b&&c|d',
    '日本語',
    '',
    "'",
    '\\',
  ];
  it('round-trips every hostile string through /bin/sh unchanged', () => {
    for (const s of hostile) {
      const r = spawnSync('/bin/sh', ['-c', `printf '%s' ${shq(s)}`]);
      assert.equal(r.stdout.toString(), s, JSON.stringify(s));
    }
    const r = spawnSync('/bin/sh', ['-c', `printf '%s\\0' ${shJoin(hostile)}`]);
    assert.deepEqual(r.stdout.toString().split('\0').slice(0, -1), hostile);
  });
  it('leaves safe words bare', () => {
    assert.equal(shq('--model-path'), '--model-path');
    assert.equal(shq('/dev/shm/Qwen3.6-27B'), '/dev/shm/Qwen3.6-27B');
  });
});
