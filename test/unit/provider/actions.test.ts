/**
 * Provider operations run by a real sh against stand-in CLIs printing the real formats (test/fixtures/provider):
 * v2 `pod get`, the 1.x fallback to the legacy table, Vast `--raw`; the key travels in the environment, not argv.
 */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { actionCommand, actionOperation, parseStatusOutput, statusOperation } from '../../../src/core/provider/actions';
import type { ProviderInfo } from '../../../src/core/provider/detect';

const FX = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'provider');
const rp: ProviderInfo & { instanceId: string } = { name: 'runpod', instanceId: 'k3x9q2mzr7bt1a', evidence: [], actions: ['stop'] };
const vast: ProviderInfo & { instanceId: string } = { name: 'vast', instanceId: '31415926', evidence: [], actions: ['stop'] };

describe('provider operations (stand-in CLIs, real sh)', () => {
  let dir = '';
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'gs-prov-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const tool = (name: string, body: string) => {
    writeFileSync(path.join(dir, name), `#!/bin/sh\necho "$@ key=\${RUNPOD_API_KEY:-}\${VAST_API_KEY:-}" >>"${dir}/argv"\n${body}\n`);
    chmodSync(path.join(dir, name), 0o755);
  };
  const run = (stdin: string, env: Record<string, string>) =>
    execFileSync('sh', ['-s'], { input: stdin, env: { PATH: `${dir}:${process.env.PATH}`, ...env } }).toString();

  it('runpod v2 pod get: RUNNING with its price; the key reaches runpodctl through the environment', () => {
    tool('runpodctl', `cat "${FX}/runpod-pod-get.json"`);
    const op = statusOperation(rp);
    const s = op.parse({
      stdout: Buffer.from(run(String(op.stdin), { RUNPOD_API_KEY: 'podkey' })),
      stderr: Buffer.alloc(0),
      code: 0,
      truncated: false,
    });
    assert.deepEqual([s.state, s.pricePerHour], ['running', 41.93]);
    assert.match(readFileSync(path.join(dir, 'argv'), 'utf8'), /^pod get k3x9q2mzr7bt1a key=podkey$/m);
  });
  it('a 1.x runpodctl (unknown command "pod") falls back to the legacy table', () => {
    tool(
      'runpodctl',
      `[ "$1" = pod ] && { echo 'Error: unknown command "pod" for "runpodctl"' >&2; exit 1; }\ncat "${FX}/runpod-legacy-get-pod.txt"`,
    );
    const op = statusOperation(rp);
    const s = parseStatusOutput('runpod', rp.instanceId, run(String(op.stdin), { RUNPOD_API_KEY: 'k' }));
    assert.deepEqual([s.state, s.word, s.pricePerHour], ['running', 'RUNNING', 41.93]);
  });
  it('a deleted pod (404, exit 1) reads as gone', () => {
    tool('runpodctl', `cat "${FX}/runpod-pod-get-404.stderr" >&2; exit 1`);
    assert.equal(
      parseStatusOutput('runpod', rp.instanceId, run(String(statusOperation(rp).stdin), { RUNPOD_API_KEY: 'k' })).state,
      'terminated',
    );
  });
  it('vast: show instance --raw with VAST_API_KEY from CONTAINER_API_KEY, not argv; destroy carries -y', () => {
    tool('vastai', `cat "${FX}/vast-show-instance-gone.json"`);
    const s = parseStatusOutput('vast', vast.instanceId, run(String(statusOperation(vast).stdin), { CONTAINER_API_KEY: 'ck' }));
    assert.equal(s.state, 'terminated');
    assert.match(readFileSync(path.join(dir, 'argv'), 'utf8'), /^show instance 31415926 --raw key=ck$/m);
    assert.match(actionCommand(vast, 'terminate'), /vastai destroy instance 31415926 -y$/);
    assert.equal(actionCommand(rp, 'stop'), 'runpodctl pod stop k3x9q2mzr7bt1a');
  });
  it('the action keeps what the CLI said (exit status not trusted) and quotes the id', () => {
    tool('runpodctl', `echo 'pod "x" stop failed; status is RUNNING'; exit 0`);
    const op = actionOperation(rp, 'stop');
    const out = run(String(op.stdin), { RUNPOD_API_KEY: 'k' });
    assert.match(op.parse({ stdout: Buffer.from(out), stderr: Buffer.alloc(0), code: 0, truncated: false }).said, /stop failed/);
    assert.equal(actionCommand({ ...rp, instanceId: "a'b" }, 'stop'), `runpodctl pod stop 'a'\\''b'`);
  });
});
