import assert from 'node:assert/strict';
import { captureServersAsProfile, profileNameFromFile } from '../../../src/core/launch/capture';
import type { ScannedServer } from '../../../src/core/launch/launch';
import { server } from '../../helpers/sglangServer';

const launchArgv = (port: number, gpu: number) => [
  'python3',
  '-m',
  'sglang.launch_server',
  '--model-path',
  '/models/qwen',
  '--port',
  String(port),
  '--base-gpu-id',
  String(gpu),
];

function scanned(pid: number, port: number, gpu: number, extra: Partial<ScannedServer> = {}): ScannedServer {
  return {
    ...server(pid, port, launchArgv(port, gpu), { gpus: [gpu], modelPath: '/models/qwen' }),
    uid: 1000,
    pgid: pid,
    virtualEnv: '/home/u/venv',
    env: { NCCL_DEBUG: 'WARN' },
    secretEnv: [],
    ...extra,
  };
}

describe('capture flow (core/launch/capture)', () => {
  it('names the profile after the chosen file when that is a valid name', () => {
    assert.equal(profileNameFromFile('b200-run.json'), 'b200-run');
    assert.equal(profileNameFromFile('B200.JSON'), 'B200');
    assert.equal(profileNameFromFile('-dash.json'), undefined);
    assert.equal(profileNameFromFile('a/b.json'), undefined);
    assert.equal(profileNameFromFile('x'.repeat(81) + '.json'), undefined);
  });

  it("turns the servers into one valid profile text that carries each server's venv and environment", () => {
    const res = captureServersAsProfile([scanned(11, 30001, 1), scanned(10, 30000, 0)], 'node-a.json');
    assert.deepEqual(res.errors, []);
    assert.deepEqual(res.ports.sort(), [30000, 30001]);
    assert.deepEqual(res.captured.sort(), [10, 11]);
    const json = JSON.parse(res.json);
    assert.equal(json.name, 'node-a');
    const profile = json.groups ? json.groups[0] : json;
    assert.equal(profile.venv, '/home/u/venv');
    assert.deepEqual(profile.env, { NCCL_DEBUG: 'WARN' });
  });

  it('says what went wrong when nothing is an SGLang server', () => {
    const notSglang = scanned(12, 30002, 2, { args: ['python3', 'serve.py', '--port', '30002'] });
    assert.throws(() => captureServersAsProfile([notSglang], 'x.json'), /No SGLang server to capture/);
  });
});
