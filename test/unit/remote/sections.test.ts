/**
 * Sectioned scripts (core/remote/sections): per-run nonce markers, hostile output that prints marker
 * look-alikes, a run cut before its end section, and the script run for real under /bin/sh.
 */
import assert from 'node:assert/strict';
import {
  firstLine,
  newNonce,
  sectionPrologue,
  sectionedOperation,
  sectionsComplete,
  splitSections,
} from '../../../src/core/remote/sections';
import { runOperation } from '../../../src/core/remote/operation';
import { shq } from '../../../src/core/util/quote';
import { LocalTransport } from '../../../src/core/ssh/transport';
import { GpuSessionsError } from '../../../src/core/util/errors';
import { ExecFakeTransport, execResult } from '../../helpers/fakeTransport';

describe('sections: markers and splitting', () => {
  it('a fresh nonce every run: GS + 16 hex digits', () => {
    const a = newNonce();
    assert.match(a, /^GS[0-9a-f]{16}$/);
    assert.notEqual(a, newNonce());
  });

  it('splits named sections as sec prints them, bodies verbatim; a later duplicate wins; text before the first is dropped', () => {
    const n = 'GSabc';
    const sec = (name: string) => `\n@@${n}:${name}@@\n`; // sec() in sectionPrologue prints exactly this
    const text = `noise from .bashrc${sec('a')}line 1\n\n  line 2${sec('b')}${sec('a')}again\n${sec('end')}`;
    const s = splitSections(text, n);
    assert.deepEqual([...s.keys()], ['a', 'b', 'end']);
    assert.equal(s.get('a'), 'again\n');
    assert.equal(s.get('b'), '', 'an empty section is kept');
    assert.equal(splitSections(`@@${n}:first@@\nx`, n).get('first'), 'x', 'a marker on the very first line counts');
    assert.ok(sectionsComplete(text, n));
    assert.ok(!sectionsComplete(text.replace(`@@${n}:end@@`, ''), n));
  });

  it('hostile output: markers of another nonce, a marker inside a line or in another case are content', () => {
    const n = 'GSreal';
    const body = [
      '@@GSfake:end@@', // another run's nonce (a file name cannot know this run's)
      `name with @@${n}:x@@ in the middle`, // not at a line start
      `@@${n.toUpperCase()}:x@@`,
      `@@${n}x:y@@`,
    ].join('\n');
    const s = splitSections(`\n@@${n}:files@@\n${body}\n`, n);
    assert.deepEqual([...s.keys()], ['files']);
    assert.equal(s.get('files'), body + '\n');
    assert.ok(!sectionsComplete('\n@@GSfake:end@@\n', n));
  });

  it('firstLine: first non-blank line trimmed, or null', () => {
    assert.equal(firstLine('\n  \n  Linux 6.8 \nnext'), 'Linux 6.8');
    assert.equal(firstLine(' \n\t\n'), null);
    assert.equal(firstLine(undefined), null);
  });
});

describe('sections: sectionedOperation', () => {
  const spec = (script: (n: string) => string) => ({
    name: 'demo',
    what: 'The demo read',
    node: 'n1',
    script,
    parse: (text: string, nonce: string) => Object.fromEntries(splitSections(text, nonce)),
    cleanStderr: (s: string) => s.replace(/secret\S*/g, '<redacted>'),
  });

  it('runs under /bin/sh: the prologue defines sec; a printed forged marker cannot add a section', async () => {
    const evil = '@@GS0000000000000000:end@@\n@@$N:injected@@';
    const o = sectionedOperation(
      spec((n) => [sectionPrologue(n), 'sec one', `printf '%s\\n' ${shq(evil)}`, 'sec two', 'echo 2', 'sec end'].join('\n')),
    );
    assert.equal(o.command, 'GPU_SESSIONS_OP=1 sh -s');
    assert.equal(o.idempotent, true);
    assert.equal(o.timeoutMs, 60_000);
    assert.equal(o.maxOutputBytes, 64 * 1024 * 1024);
    const r = (await runOperation(new LocalTransport(), o)) as Record<string, string>;
    assert.deepEqual(Object.keys(r), ['one', 'two', 'end']);
    assert.equal(r.one, evil + '\n');
    assert.equal(r.two, '2\n');
  });

  it('the nonce reaches the script quoted: a hostile-looking prologue value stays one word', () => {
    assert.equal(sectionPrologue("GS'x"), `N='GS'\\''x'\nsec() { printf '\\n@@%s:%s@@\\n' "$N" "$1"; }`);
  });

  it('a run cut before `sec end` fails with remote-incomplete, exit and cleaned stderr in the message', async () => {
    const o = sectionedOperation(spec((n) => [sectionPrologue(n), 'sec one', 'echo 1'].join('\n')));
    const t = new ExecFakeTransport(() =>
      execResult('\n@@GSx:one@@\n1\n', { code: null, signal: 'KILL', stderr: Buffer.from('a\nb\nkilled: secretABC\n') }),
    );
    const e = await runOperation(t, o).catch((x) => x);
    assert.ok(e instanceof GpuSessionsError);
    assert.equal(e.code, 'remote-incomplete');
    assert.equal(e.message, 'The demo read did not complete on n1 (exit null: a b killed: <redacted>).');
    assert.deepEqual(e.detail, { operation: 'demo', exit: null, signal: 'KILL' });
  });

  it('an end marker printed with a guessed nonce does not complete the run (each operation draws its own)', async () => {
    const o = sectionedOperation(spec((n) => [sectionPrologue(n), 'sec end'].join('\n')));
    const t = new ExecFakeTransport(() => execResult('\n@@GS0000000000000000:end@@\n'));
    const e = await runOperation(t, o).catch((x) => x);
    assert.equal(e.code, 'remote-incomplete');
  });
});
