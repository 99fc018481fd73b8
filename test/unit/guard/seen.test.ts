/**
 * What salvage reads of the node's guard (core/guard/seen.ts with seen.py, run for real with python3 in a temp
 * home): nothing when there is no guard (and nothing is written), the --to folder resolved, the S3 place and the
 * files verified there; a hostile record is dropped field by field.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { guardSeenOperation, parseGuardSeen } from '../../../src/core/guard/seen';
import { execResult } from '../../helpers/fakeTransport';

const SHA = 'a'.repeat(64);

function seenIn(home: string) {
  const op = guardSeenOperation();
  const r = spawnSync('python3', ['-'], { input: op.stdin, env: { ...process.env, HOME: home }, timeout: 20_000 });
  return op.parse(execResult(r.stdout, { stderr: r.stderr, code: r.status }));
}

describe('the guard as salvage sees it (core/guard/seen)', () => {
  let home: string;
  const dir = () => path.join(home, '.gpu-sessions', 'guard');
  const write = (name: string, v: unknown) => {
    mkdirSync(dir(), { recursive: true });
    writeFileSync(path.join(dir(), name), JSON.stringify(v));
  };
  beforeEach(() => (home = mkdtempSync(path.join(os.tmpdir(), 'gs-seen-unit-'))));
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('no guard: null, and no folder is made on the node', () => {
    assert.equal(seenIn(home), null);
    assert.equal(existsSync(path.join(home, '.gpu-sessions')), false);
  });

  it('a --to guard: its folder resolved (a link followed), no S3 files', () => {
    mkdirSync(path.join(home, 'real-vol'));
    symlinkSync(path.join(home, 'real-vol'), path.join(home, 'vol'));
    write('config.json', { to: '~/vol', settings: { target: '~/vol' } });
    const s = seenIn(home)!;
    assert.equal(s.to, path.join(home, 'real-vol'));
    assert.equal(s.s3, null);
    assert.equal(s.running, false, 'no live guard.py run process');
    assert.deepEqual(s.verified, []);
  });

  it('an S3 guard: only the files verified to its current place, each with size, mtime and sha256', () => {
    write('config.json', {
      s3: { bucket: 'b', prefix: 'run/', url: 'http://x', fields: {} },
      settings: { s3Endpoint: 'http://127.0.0.1:9' },
    });
    write('verified.json', {
      '/w/a.jsonl': { size: 3, mtime: 1.5, sha256: SHA, target: 's3://b/run/' },
      '/w/old.jsonl': { size: 3, mtime: 1.5, sha256: SHA, target: 's3://b/before/' },
      '/w/bad.jsonl': { size: 3, mtime: 1.5, sha256: 'not-a-sha', target: 's3://b/run/' },
    });
    const s = seenIn(home)!;
    assert.deepEqual(s.s3, { bucket: 'b', prefix: 'run/', endpoint: 'http://127.0.0.1:9' });
    assert.deepEqual(s.verified, [{ path: '/w/a.jsonl', size: 3, mtime: 1.5, sha256: SHA }]);
  });

  it('a hostile answer: relative paths, negative sizes, a root --to and a bucket that is no string are dropped', () => {
    const s = parseGuardSeen({
      guard: true,
      running: 'yes',
      to: '/',
      s3: { bucket: 7, prefix: 'p/' },
      verified: [['rel/x', 1, 1, SHA], ['/x', -1, 1, SHA], ['/y', 1, 'now', SHA], ['/z', 2, 3, SHA], 'junk'],
    })!;
    assert.equal(s.running, false);
    assert.equal(s.to, null);
    assert.equal(s.s3, null);
    assert.deepEqual(s.verified, [{ path: '/z', size: 2, mtime: 3, sha256: SHA }]);
    assert.equal(parseGuardSeen({ guard: false }), null);
  });
});
