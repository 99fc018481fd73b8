/** The one runner (core/remote/operation): what it hands the transport, the output bound, and the typed errors. */
import assert from 'node:assert/strict';
import {
  RemoteOperation,
  incomplete,
  malformed,
  openStream,
  runOperation,
  stderrTail,
  streamExitReason,
} from '../../../src/core/remote/operation';
import { LocalTransport } from '../../../src/core/ssh/transport';
import { GpuSessionsError } from '../../../src/core/util/errors';
import { ExecFakeTransport, execResult } from '../../helpers/fakeTransport';

const op = (o: Partial<RemoteOperation<string>> = {}): RemoteOperation<string> => ({
  name: 'test-op',
  command: 'sh -s',
  stdin: 'echo hi\n',
  timeoutMs: 1234,
  maxOutputBytes: 100,
  parse: (r) => r.stdout.toString(),
  ...o,
});

const codeOf = (e: unknown) => (e instanceof GpuSessionsError ? e.code : `not typed: ${String(e)}`);

describe('runner: runOperation / openStream (core/remote/operation)', () => {
  it('passes command, stdin, timeout, output bound and the abort signal to one exec; retries only idempotent ones', async () => {
    const t = new ExecFakeTransport(() => execResult('out'));
    const signal = new AbortController().signal;
    assert.equal(await runOperation(t, op(), signal), 'out');
    assert.equal(await runOperation(t, op({ idempotent: true })), 'out');
    assert.equal(t.calls.length, 2);
    assert.deepEqual(t.calls[0], {
      command: 'sh -s',
      opts: { stdin: 'echo hi\n', timeoutMs: 1234, maxOutputBytes: 100, retryOnDrop: false, signal },
    });
    assert.equal(t.calls[1].opts.retryOnDrop, true);
  });

  it('output cut at the bound fails with remote-truncated and the parser never sees it', async () => {
    let parsed = 0;
    const t = new ExecFakeTransport(() => execResult('x'.repeat(100), { truncated: true }));
    const e = await runOperation(t, op({ parse: () => String(++parsed) })).catch((x) => x);
    assert.equal(codeOf(e), 'remote-truncated');
    assert.match(e.message, /test-op on fake-node printed more than 100 bytes and was cut short/);
    assert.deepEqual(e.detail, { operation: 'test-op', maxOutputBytes: 100 });
    assert.equal(parsed, 0);
    // an operation that copes with a cut (e.g. `head` of a huge file) gets the partial output
    assert.equal(await runOperation(t, op({ acceptTruncated: true })), 'x'.repeat(100));
  });

  it('a real sh run past its bound is cut and refused; a transport timeout stays a typed timeout', async () => {
    const t = new LocalTransport();
    const big = op({ stdin: 'head -c 100000 /dev/zero | tr "\\0" y\n', maxOutputBytes: 1000 });
    assert.equal(codeOf(await runOperation(t, big).catch((x) => x)), 'remote-truncated');
    const slow = op({ stdin: 'sleep 5\n', timeoutMs: 200 });
    const t0 = Date.now();
    assert.equal(codeOf(await runOperation(t, slow).catch((x) => x)), 'timeout');
    assert.ok(Date.now() - t0 < 3000, 'the timeout is the operation one');
  });

  it("the parser's own typed errors pass through unchanged", async () => {
    const t = new ExecFakeTransport(() => execResult('garbage', { code: 137, signal: 'KILL' }));
    const r1 = await runOperation(
      t,
      op({
        parse: (r) => {
          throw incomplete('cut', r, { operation: 'x' });
        },
      }),
    ).catch((x) => x);
    assert.equal(codeOf(r1), 'remote-incomplete');
    assert.deepEqual(r1.detail, { operation: 'x', exit: 137, signal: 'KILL' });
    const r2 = await runOperation(
      t,
      op({
        parse: () => {
          throw malformed('no sense', { at: 3 });
        },
      }),
    ).catch((x) => x);
    assert.equal(codeOf(r2), 'remote-malformed');
    assert.deepEqual(r2.detail, { at: 3 });
  });

  it('openStream hands command and stdin to stream', async () => {
    const seen: unknown[] = [];
    const t = new ExecFakeTransport(() => execResult(''));
    t.stream = async (command, opts) => {
      seen.push([command, opts?.stdin]);
      throw new Error('stop here');
    };
    await assert.rejects(openStream(t, { name: 's', command: 'tail -F x', stdin: 'in' }), /stop here/);
    assert.deepEqual(seen, [['tail -F x', 'in']]);
  });
});

describe('runner: error words (streamExitReason, stderrTail, incomplete)', () => {
  it('a signal, a dropped channel and an exit status read differently; only the last 3 stderr lines', () => {
    assert.equal(streamExitReason({ code: null, signal: 'TERM' }, ''), 'the command reading the file on the node was killed by TERM');
    assert.match(streamExitReason({ code: null }, 'ignored'), /connection dropped .*\(no exit status\); run salvage again$/);
    assert.equal(
      streamExitReason({ code: 2 }, 'a\nb\nc\nd: No such file\n'),
      'the node could not read the file (exit 2): b c d: No such file',
    );
    assert.equal(streamExitReason({ code: 1 }, '  '), 'the node could not read the file (exit 1): no message');
  });

  it('stderrTail keeps the last lines joined and applies the cleaner', () => {
    const r = execResult('', { stderr: Buffer.from('one\ntwo\nthree\nfour\n') });
    assert.equal(stderrTail(r), 'two three four');
    assert.equal(stderrTail(r, 1), 'four');
    assert.equal(
      stderrTail(r, 2, (s) => s.toUpperCase()),
      'THREE FOUR',
    );
  });

  it('incomplete without a result carries only the detail', () => {
    const e = incomplete('m');
    assert.equal(e.code, 'remote-incomplete');
    assert.deepEqual(e.detail, {});
  });
});
