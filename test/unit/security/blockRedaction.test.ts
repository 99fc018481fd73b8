/** b4: private keys span lines; redaction must treat them as a block wherever lines travel one by one. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BlockRedactor, outputStreamRedactor, redactOutputValue, redactText } from '../../../src/core/util/redact';
import { redactingIo } from '../../../src/cli/main';

function realKey(type: 'ed25519' | 'rsa', format: string[] = []): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs24-key-'));
  try {
    const f = path.join(dir, 'k');
    const r = spawnSync('ssh-keygen', ['-q', '-t', type, ...(type === 'rsa' ? ['-b', '2048'] : []), ...format, '-N', '', '-f', f]);
    assert.equal(r.status, 0, String(r.stderr));
    return fs.readFileSync(f, 'utf8');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The base64 body lines of a key (what must never come out). */
const bodyOf = (key: string) => key.split('\n').filter((l) => l && !l.startsWith('-----'));

describe('security: multi-line secrets redacted as a block (b4)', () => {
  const keys = [realKey('ed25519'), realKey('rsa'), realKey('rsa', ['-m', 'PEM'])];

  it('redactOutputValue on an array of lines (MCP tail_log) keeps no base64 line of the key', () => {
    for (const key of keys) {
      const lines = ['before', ...key.trimEnd().split('\n'), 'after'];
      const out = redactOutputValue({ lines }).lines as string[];
      const joined = out.join('\n');
      for (const b of bodyOf(key)) assert.ok(!joined.includes(b), `leaked ${b.slice(0, 20)}…`);
      assert.equal(out[0], 'before');
      assert.equal(out[out.length - 1], 'after');
      assert.match(joined, /-----END [A-Z ]*PRIVATE KEY-----/);
    }
  });

  it('a streaming redactor keeps "inside a key block" across calls (tail --follow, log view)', () => {
    const key = keys[0];
    const r = new BlockRedactor();
    const out = key
      .trimEnd()
      .split('\n')
      .map((l) => r.line(l));
    for (const b of bodyOf(key)) assert.ok(!out.includes(b));
    // the block ends at END; the next line is shown as it is
    assert.equal(r.line('INFO: server ready'), 'INFO: server ready');
    // a BEGIN without END ends at the first line that is not key material
    const r2 = new BlockRedactor();
    r2.line('-----BEGIN OPENSSH PRIVATE KEY-----');
    assert.equal(r2.line('b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW'), '<redacted>');
    assert.equal(r2.line('[2026-01-01 00:00:00] Prefill batch'), '[2026-01-01 00:00:00] Prefill batch');
  });

  it("the CLI's io redacts a key written one line per call (tail --follow's path)", () => {
    const key = keys[1];
    let printed = '';
    const io = redactingIo({ out: (s: string) => (printed += s + '\n'), err: () => undefined } as never);
    for (const l of key.trimEnd().split('\n')) io.out(l);
    for (const b of bodyOf(key)) assert.ok(!printed.includes(b));
    const s = outputStreamRedactor();
    assert.equal(s('plain'), 'plain');
  });

  it('PuTTY private lines are redacted in whole texts and in streams', () => {
    const ppk = [
      'PuTTY-User-Key-File-3: ssh-ed25519',
      'Encryption: none',
      'Public-Lines: 2',
      'AAAAC3NzaC1lZDI1NTE5AAAAIO2g4l7T7x3bXkN8qM5Hc0J2bVQm3gG4bq2bM0G4vM',
      'Private-Lines: 1',
      'AAAAIEu3F3gd5hfQqIuDq0y6XRmpE1gG2lKd0Gq9YwS5uC0y',
      'Private-MAC: 0123456789abcdef',
    ];
    assert.ok(!redactText(ppk.join('\n')).includes('AAAAIEu3F3gd5hfQ'));
    const r = new BlockRedactor();
    assert.ok(
      !ppk
        .map((l) => r.line(l))
        .join('\n')
        .includes('AAAAIEu3F3gd5hfQ'),
    );
  });
});
