import assert from 'node:assert/strict';
import { renderServersScript } from '../../../src/core/salvage/serversScript';
import { planted } from '../../helpers/planted';
import { server } from '../../helpers/sglangServer';

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
});
