/**
 * Generated scripts are injection-proof (issue 12, attack 3): rendered with hostile values from the node,
 * `running-servers.sh` and launch scripts pass `sh -n`, keep the command skeleton of a benign render, and
 * running them (with a stub `nohup`) never creates the marker file.
 *
 * Cross-cutting on purpose: the same attack against every generator of a shell script (salvage, launch), with
 * one shape checker (test/helpers/shellShape.ts).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { renderServersScript } from '../../../src/core/flows/salvage';
import { renderLaunchScript, validateProfile } from '../../../src/core/launch/profile';
import { serverFromArgv } from '../../../src/core/sglang/serverArgv';
import type { SglangServer } from '../../../src/core/sglang/serverArgv';
import { shqPrintable } from '../../../src/core/util/quote';
import { commandHeads, shellCommands, shellComments } from '../../helpers/shellShape';

const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

function server(dir: string, logFile: string, extra: Partial<SglangServer> = {}): SglangServer {
  const s = serverFromArgv({
    pid: 4242,
    ppid: 1,
    argv: ['python3', '-m', 'sglang.launch_server', '--model-path', '/models/x', '--port', '31777'],
    exact: true,
    cwd: dir,
    fd1: logFile,
    fd2: logFile,
    cudaVisibleDevices: '0',
  })!;
  return { ...s, ...extra };
}

const comments = shellComments;

describe('generated scripts with hostile values (issue 12)', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-scripts-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const marker = () => path.join(dir, 'marker');
  const stubPath = () => {
    const bin = path.join(dir, 'stub bin');
    mkdirSync(bin, { recursive: true });
    // Written whole, then renamed: the test waits for the file to exist, and a redirection creates it before printf writes.
    const args = path.join(dir, 'nohup.args');
    writeFileSync(path.join(bin, 'nohup'), `#!/bin/sh\nprintf '%s\\n' "$@" > "${args}.$$" && mv -f "${args}.$$" "${args}"\n`);
    chmodSync(path.join(bin, 'nohup'), 0o755);
    return `${bin}:/usr/bin:/bin`;
  };

  it('running-servers.sh: a log path with newlines cannot end its comment and add a command', () => {
    const hostileLog = `${dir}/logs/srv\necho PWNED>marker\n#.log`; // as in the issue: relative to the server's cwd
    const crLog = `${dir}/logs/cr\recho PWNED>marker\u2028.log`;
    mkdirSync(path.join(dir, 'logs'));
    const benign = renderServersScript('node', [server(dir, `${dir}/logs/srv.log`)]);
    const hostile = renderServersScript('no\nde\x1b]0;T\x07', [server(dir, hostileLog), server(dir, crLog, { pid: 4343, port: 31778 })]);
    for (const l of comments(hostile)) {
      assert.ok(!CONTROL.test(l), JSON.stringify(l));
      assert.match(l, /^#(!\/bin\/bash$| )/);
      assert.ok(!l.includes('PWNED') || l.includes('\\u000a') || l.includes('\\u000d'), l);
    }
    assert.equal(spawnSync('sh', ['-n'], { input: hostile }).status, 0);
    assert.equal(spawnSync('bash', ['-n'], { input: hostile }).status, 0);
    // two servers: the benign skeleton's server lines twice, nothing else
    const b = commandHeads(benign);
    assert.deepEqual(commandHeads(hostile), [...b, ...b.slice(1)]);
    const cmds = shellCommands(hostile);
    assert.ok(
      cmds.every((c) => !c.includes('echo')),
      JSON.stringify(cmds),
    );
    // the log path survives as one quoted word of the redirection, its newlines shown as $'\x0a' escapes (bash)
    assert.ok(hostile.includes(`> ${shqPrintable(hostileLog)} 2>&1 &`));
    assert.ok(!hostile.includes('\r'), 'no raw CR in the script');
    const r = spawnSync('bash', ['-s'], { input: hostile, cwd: dir, env: { PATH: stubPath(), HOME: dir } });
    assert.equal(r.status, 0, r.stderr.toString());
    for (let i = 0; i < 100 && !(existsSync(hostileLog) && existsSync(path.join(dir, 'nohup.args'))); i++) spawnSync('sleep', ['0.05']);
    assert.equal(existsSync(marker()), false, 'the injected line ran');
    assert.ok(existsSync(hostileLog), 'the redirection went to the exact hostile path');
    assert.match(readFileSync(path.join(dir, 'nohup.args'), 'utf8'), /sglang\.launch_server/);
  });

  it('launch scripts: hostile description, log folder, model path and env values stay quoted or encoded', () => {
    const base = {
      name: 'hostile',
      modelPath: '/models/x',
      gpus: [0],
      layout: 'per-gpu',
      basePort: 31000,
      extraArgs: [],
      env: { A: 'b' },
      workDir: dir,
      logDir: path.join(dir, 'logs'),
    };
    // Validation refuses line breaks; the renderer must hold even for a profile that skipped it.
    const mk = (x: object) => {
      const r = validateProfile(base);
      assert.deepEqual(r.errors, []);
      return renderLaunchScript({ ...r.profile!, ...x }, [0]).script;
    };
    assert.ok(validateProfile({ ...base, logDir: 'a\nb' }).errors.length > 0);
    const benign = mk({});
    const hostile = mk({
      description: `first\nline\recho PWNED>${marker()}\x1b]0;T\x07\u2028`,
      logDir: `${dir}/lo\ngs\necho PWNED>${marker()}\n#`,
      modelPath: `/m/$(touch ${marker()})\n\`touch ${marker()}\``,
      env: { A: `'; touch ${marker()}; '\necho PWNED>${marker()}` },
      extraArgs: ['--chat-template', `x\necho PWNED>${marker()}`],
    });
    for (const l of comments(hostile)) assert.ok(!CONTROL.test(l), JSON.stringify(l));
    assert.equal(spawnSync('sh', ['-n'], { input: hostile }).status, 0);
    const strip = (h: string[]) => h.filter((x) => x !== '--chat-template');
    assert.deepEqual(strip(commandHeads(hostile)), strip(commandHeads(benign)));
    const r = spawnSync('sh', ['-s'], { input: hostile, env: { PATH: stubPath(), HOME: dir } });
    assert.equal(r.status, 0, r.stderr.toString());
    assert.match(r.stdout.toString(), /GS-STARTED 31000 \d+/);
    // the detached stub finishes on its own; wait for it (bounded) before the folder is removed
    for (let i = 0; i < 100 && !existsSync(path.join(dir, 'nohup.args')); i++) spawnSync('sleep', ['0.05']);
    assert.ok(existsSync(path.join(dir, 'nohup.args')));
    assert.equal(existsSync(marker()), false, 'an injected command ran');
  });
});
