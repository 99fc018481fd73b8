/** Typed errors of the core (core/util/errors): codes, CLI exit codes, messages of anything thrown. */
import assert from 'node:assert/strict';
import { GpuSessionsError, errorMessage, exitCodeFor, isHostKeyError } from '../../../src/core/util/errors';

describe('errors (core/util/errors)', () => {
  it('a GpuSessionsError is an Error with its code, message and detail', () => {
    const e = new GpuSessionsError('remote-incomplete', 'cut short', { exit: 137 });
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'GpuSessionsError');
    assert.equal(e.code, 'remote-incomplete');
    assert.equal(e.message, 'cut short');
    assert.deepEqual(e.detail, { exit: 137 });
    assert.match(String(e.stack), /GpuSessionsError: cut short/);
  });

  it('exit codes: 2 usage/config, 3 host key, 4 unreachable/auth/timeout, 1 for every other code and for foreign errors', () => {
    const want: Record<string, number> = {
      usage: 2,
      config: 2,
      'host-key-changed': 3,
      'host-key-unknown': 3,
      'host-key-revoked': 3,
      unreachable: 4,
      'auth-failed': 4,
      timeout: 4,
      'remote-failed': 1,
      'remote-incomplete': 1,
      'remote-truncated': 1,
      'remote-malformed': 1,
      cancelled: 1,
      io: 1,
    };
    for (const [code, exit] of Object.entries(want))
      assert.equal(exitCodeFor(new GpuSessionsError(code as GpuSessionsError['code'], 'm')), exit, code);
    assert.equal(exitCodeFor(new Error('usage')), 1);
    assert.equal(exitCodeFor(Object.assign(new Error('x'), { code: 'usage' })), 1, 'a look-alike code is not ours');
    assert.equal(exitCodeFor('usage'), 1);
    assert.equal(exitCodeFor(undefined), 1);
  });

  it('isHostKeyError only for our host-key codes', () => {
    assert.equal(isHostKeyError(new GpuSessionsError('host-key-changed', 'm')), true);
    assert.equal(isHostKeyError(new GpuSessionsError('host-key-unknown', 'm')), true);
    assert.equal(isHostKeyError(new GpuSessionsError('unreachable', 'm')), false);
    assert.equal(isHostKeyError(Object.assign(new Error('m'), { code: 'host-key-changed' })), false);
    assert.equal(isHostKeyError(null), false);
  });

  it('errorMessage: the message of an Error, the string of anything else', () => {
    assert.equal(errorMessage(new TypeError('bad')), 'bad');
    assert.equal(errorMessage('plain'), 'plain');
    assert.equal(errorMessage(42), '42');
    assert.equal(errorMessage(null), 'null');
    assert.equal(errorMessage({ message: 'not an Error' }), '[object Object]');
  });
});
