import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { shJoin, shJoinPrintable, shq, shqPrintable } from '../../../src/core/util/quote';

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
  it("shqPrintable: control characters become visible $'\\xHH' escapes that bash turns back into the exact bytes", () => {
    const controls = [
      'esc\u001b[2J',
      'cr\rline',
      'c1 \u009b31m',
      'bidi \u202eevil',
      'tab\there',
      'new\nline',
      'del\u007f',
      "q'uote\u001b",
      'back\\slash\u001b \\x41',
      '\u001bff',
      '€\u0007日本',
      '\u2028\ufeff\u200b',
    ];
    for (const s of hostile.filter((h) => !/[\n]/.test(h))) assert.equal(shqPrintable(s), shq(s), 'printable: as shq');
    for (const s of controls) {
      const q = shqPrintable(s);
      assert.doesNotMatch(q, /[\u0000-\u001f\u007f-\u009f\u202a-\u202e\u2028\u2029\ufeff\u200b]/, JSON.stringify(q));
      assert.ok(q.startsWith("$'"), q);
    }
    const all = [...hostile, ...controls];
    const r = spawnSync('bash', ['-c', `printf '%s\\0' ${shJoinPrintable(all)}`]);
    assert.deepEqual(r.stdout, Buffer.from(all.map((a) => a + '\0').join(''), 'utf8'));
  });
});
