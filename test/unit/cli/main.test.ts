/** The CLI process (cli/main): what it writes to a pipe all arrives before it exits. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

describe('cli main: exit after stdout drained', () => {
  it('a slow pipe reader (spawnSync) gets every line of a multi-megabyte --json output', function () {
    this.timeout(60_000);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-cli-exit-'));
    try {
      const file = path.join(dir, 'a.log');
      const n = 20_000;
      const line =
        '[2026-04-05 20:02:52 DP0 TP0] Decode batch, #running-req: 46, #token: 34901, token usage: 0.19, cuda graph: False, gen throughput (token/s): 1447.08, #queue-req: 0, \n';
      writeFileSync(file, line.repeat(n));
      const main = path.resolve(__dirname, '..', '..', '..', 'src', 'cli', 'main.js');
      const r = spawnSync(process.execPath, [main, 'parse-log', '--json', file], { encoding: 'utf8', maxBuffer: 1 << 30 });
      assert.equal(r.status, 0, r.stderr);
      const lines = r.stdout.split('\n').filter(Boolean);
      // Before: process.exit() dropped what the pipe had not taken (about 4.7 of 11 MB came out).
      assert.equal(lines.length, n);
      assert.equal(JSON.parse(lines[n - 1]).lineNo, n);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
