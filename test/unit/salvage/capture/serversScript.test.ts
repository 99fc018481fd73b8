import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { shq } from '../../../../src/core/util/quote';
import { renderServersScript } from '../../../../src/core/salvage/capture/serversScript';
import { planted } from '../../../helpers/planted';
import { server } from '../../../helpers/sglangServer';

const SK_PLANTED = planted('sk-', 'abcdefghijklmnopqrstuvwxyz123456');

describe('running-servers.sh (serversScript)', () => {
  it('writes the running servers as a script with quoted, redacted argv', () => {
    const s = renderServersScript('n', [
      server(1, 30000, ['python3', '-m', 'sglang.launch_server', '--model-path', '/m x', '--api-key', SK_PLANTED], {
        modelPath: '/m x',
        logFile: '/root/a b.log',
        cudaVisibleDevices: '0',
        gpus: [0],
      }),
    ]);
    assert.match(s, /CUDA_VISIBLE_DEVICES=0 nohup python3 -m sglang\.launch_server --model-path '\/m x' --api-key/);
    assert.ok(!s.includes(SK_PLANTED), 'the key is not in the script');
    assert.match(s, /> '\/root\/a b\.log' 2>&1 &/);
  });

  it('argv with ESC, CR, C1 and bidi controls: no raw control in the file, and bash runs the exact argv bytes', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-srvsh-'));
    try {
      const cwd = path.join(dir, 'w\u001b[2Jd');
      mkdirSync(cwd);
      const log = path.join(dir, 'l\r\u009bog\u202e.log');
      const args = [
        'python3',
        '-m',
        'sglang.launch_server',
        '--model-path',
        '/models/x\u001b]0;TITLE\u0007\u001b[41mRED',
        '--served-model-name',
        '\r\u001b[2Kbenign\u001b[8m',
        '--x',
        `q'uote \\x41 \u009b31m tab\tnl\nend\u007f\u001bff€`,
      ];
      const s = renderServersScript('n', [server(1, 30000, args, { cwd, logFile: log, cudaVisibleDevices: '0\u001b' })]);
      assert.ok(s.startsWith('#!/bin/bash\n'), 'ANSI-C quoting needs bash');
      assert.doesNotMatch(s, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e]/, 'no raw control character');
      assert.match(s, /\$'\/models\/x\\x1b\]0;TITLE\\x07\\x1b\[41mRED'/, 'shown as \\xHH escapes');
      // Run it with a stub nohup on PATH that records its argv (NUL-separated) and CUDA_VISIBLE_DEVICES.
      const bin = path.join(dir, 'bin');
      mkdirSync(bin);
      const rec = path.join(dir, 'argv.bin');
      writeFileSync(path.join(bin, 'nohup'), `#!/bin/bash\nprintf '%s\\0' "$PWD" "$CUDA_VISIBLE_DEVICES" "$@" > ${shq(rec)}\n`, {
        mode: 0o755,
      });
      const script = path.join(dir, 'running-servers.sh');
      writeFileSync(script, s + '\nwait\n');
      const r = spawnSync('bash', [script], { env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } });
      assert.equal(r.status, 0, r.stderr.toString());
      const want = Buffer.from([cwd, '0\u001b', ...args].map((a) => a + '\0').join(''), 'utf8');
      assert.deepEqual(readFileSync(rec), want, 'the exact argv bytes');
      assert.ok(existsSync(log), 'the log redirect goes to the exact path');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
