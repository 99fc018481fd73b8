import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { paxRecord, writeTar } from '../../../src/core/restore/tarWrite';

describe('restore tar writer', () => {
  it('a PAX record counts its own length', () => {
    for (const v of ['x', 'a'.repeat(90), 'a'.repeat(95), 'é'.repeat(500)]) {
      const r = paxRecord('path', v);
      assert.equal(Number(r.toString('utf8').split(' ')[0]), r.length);
    }
  });

  it('GNU tar extracts every name byte-exact (quotes, newline, leading dash, non-ASCII, 200-byte names) with its mode', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs27-tar-'));
    try {
      const names = [
        `q'uote".log`,
        'new\nline.log',
        '-dash',
        '日本語 ü.log',
        'x'.repeat(200),
        '$(touch PWNED)',
        'back\\slash',
        'tab\tname',
      ];
      const tar = writeTar(
        names.map((n, i) => ({
          name: path.join(dir, 'sub dir', n),
          data: Buffer.from(`data ${i}`),
          mode: i === 0 ? 0o750 : 0o600,
          mtime: 1_700_000_000,
        })),
      );
      execFileSync('tar', ['-x', '-P', '--no-same-owner', '-f', '-'], { input: tar });
      assert.deepEqual(readdirSync(path.join(dir, 'sub dir')).sort(), [...names].sort());
      names.forEach((n, i) => assert.equal(readFileSync(path.join(dir, 'sub dir', n), 'utf8'), `data ${i}`));
      assert.equal(statSync(path.join(dir, 'sub dir', names[0])).mode & 0o777, 0o750);
      assert.equal(statSync(path.join(dir, 'sub dir', names[0])).mtimeMs, 1_700_000_000_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
