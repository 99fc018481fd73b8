import assert from 'node:assert/strict';
import { hasControls, mdCode, mdCodeCell, mdFence, mdText, plainLogLine, visible } from '../../../src/core/util/terminal';
import { unescapedMarkup } from '../../helpers/markdown';

const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;
const HOSTILE = [
  '/models/x\x1b]0;TITLE\x1b\\\x1b[41mRED',
  'bad\x1b]0;T\x1b\\X.log',
  'link \x1b]8;;https://evil/\x07click\x1b]8;;\x07',
  'clear\x1b[2J\x1b[H',
  'c1 \x9b31m and \x85 NEL',
  'del\x7f',
  'bidi \u202Egol.exe\u202C and \u2066iso\u2069',
  'cr\roverwrite',
];

describe('terminal sanitizer (issue 12)', () => {
  it('makes every control character, DEL, C1 and bidi override visible', () => {
    for (const s of HOSTILE) {
      const v = visible(s);
      assert.ok(!RAW.test(v), JSON.stringify(v));
      assert.ok(hasControls(s));
      assert.ok(!hasControls(v));
    }
    assert.equal(visible('a\x1b[31mb'), 'a\\u001b[31mb');
    assert.equal(visible('x\u202Ey'), 'x\\u202ey');
    assert.equal(visible('two\nlines\ttab'), 'two\\u000alines\\u0009tab');
    assert.equal(visible('two\nlines\ttab', true), 'two\nlines\ttab');
    assert.equal(visible('plain ünïcødé 日本 · ✓'), 'plain ünïcødé 日本 · ✓');
  });

  it('its escapes keep JSON valid, so --json output can pass through it too', () => {
    const obj = { hostname: HOSTILE.join(' '), argv: HOSTILE };
    const out = visible(JSON.stringify(obj, null, 2), true);
    assert.ok(!RAW.test(out));
    assert.deepEqual(JSON.parse(out), obj);
  });

  it('tail lines without --raw: colours dropped, other escapes visible', () => {
    assert.equal(plainLogLine('\x1b[32m[2026-01-01] Decode batch\x1b[0m'), '[2026-01-01] Decode batch');
    assert.equal(plainLogLine('t\x1b]0;T\x07'), 't\\u001b]0;T\\u0007');
  });

  it('code spans are fenced longer than any backtick run inside', () => {
    assert.equal(mdCode('a`b'), '``a`b``');
    assert.equal(mdCode('``x'), '``` ``x ```');
    assert.equal(mdCode('plain'), '`plain`');
    assert.equal(mdCodeCell('a|b'), '`a\\|b`');
    const f = mdFence('```\nrm -rf /\n```', 'sh');
    assert.ok(f.startsWith('````sh\n') && f.endsWith('\n````'));
  });

  it('text escapes markup, links, HTML, cell separators and controls', () => {
    const s = 'x <img src=x onerror=alert(1)> [run](command:workbench.action.terminal.new) | *b* \x1b[2J\nnext';
    const t = mdText(s);
    assert.equal(unescapedMarkup(t).length, 0, t);
    assert.ok(!t.includes('\n'));
    assert.ok(t.includes('\\<img') && t.includes('\\[run\\]') && t.includes('\\|'));
  });

  it('the markdown checker itself finds live markup', () => {
    assert.ok(unescapedMarkup('see <img src=x> here').length > 0);
    assert.ok(unescapedMarkup('[run](command:x)').length > 0);
    assert.equal(unescapedMarkup('`<img>` and ``a`[b]`` ').length, 0);
  });
});
