import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { modesOperation } from '../../../../src/core/salvage/capture/restoreCapture';

describe('restore capture: file modes', () => {
  it('one stat for many files, matched by name: odd names, a missing file, exec bits', () => {
    const d = mkdtempSync(path.join(os.tmpdir(), 'gs-modes-'));
    try {
      const names = ['run.sh', 'a\nb', "it's $(x)", 'private.cfg'].map((n) => path.join(d, n));
      names.forEach((n) => writeFileSync(n, 'x'));
      chmodSync(names[0], 0o750);
      chmodSync(names[1], 0o644);
      chmodSync(names[2], 0o604);
      chmodSync(names[3], 0o600);
      const paths = [names[0], path.join(d, 'gone'), names[1], names[2], names[3]];
      const op = modesOperation(paths);
      const r = spawnSync('sh', ['-c', op.command], { input: op.stdin });
      const modes = op.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false });
      assert.deepEqual(modes, ['750', null, '644', '604', '600']);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});
