/** SGLang flag fidelity: config files, parallel sizes, DP attention, nnodes, abbreviations, log level. */
import assert from 'node:assert/strict';
import { parseConfigYaml, serverFromArgv } from '../../../src/core/sglang/serverArgv';
import { captureProfile, planInstances, renderLaunchScript, validateProfile } from '../../../src/core/launch/profile';

const L = ['python3', '-m', 'sglang.launch_server'];
const srv = (args: string[], extra: Record<string, unknown> = {}) =>
  serverFromArgv({ pid: 7, ppid: 1, exact: true, argv: [...L, ...args], ...extra })!;

describe('SGLang flag fidelity', () => {
  it('--enable-dp-attention: the server uses tp GPUs, not tp × dp; pp multiplies; nnodes shares out', () => {
    assert.equal(srv(['--model-path', '/m', '--tp', '4', '--dp', '4', '--enable-dp-attention']).gpuCount, 4);
    assert.equal(srv(['--model-path', '/m', '--tp', '4', '--dp', '2']).gpuCount, 8);
    assert.equal(srv(['--model-path', '/m', '--tp-size', '2', '--pp-size', '2']).gpuCount, 4);
    assert.equal(srv(['--model-path', '/m', '--tp', '16', '--nnodes', '2']).gpuCount, 8);
    const ep = srv(['--model-path', '/m', '--tp', '8', '--expert-parallel-size', '8']);
    assert.equal(ep.ep, 8);
    assert.equal(ep.gpuCount, 8, 'experts spread over the TP GPUs');
  });

  it('argparse abbreviations resolve against the known flags', () => {
    const s = srv(['--model-p', '/m', '--mem-frac', '0.8', '--trust-remote', '--tensor-parallel', '2']);
    assert.equal(s.modelPath, '/m');
    assert.equal(s.flags['mem-fraction-static'], '0.8');
    assert.equal(s.flags['trust-remote-code'], true);
    // a prefix of two flags is ambiguous to argparse (SGLang refuses it): left as written
    assert.equal(srv(['--model-path', '/m', '--enable-met']).flags['enable-met'], true);
    assert.equal(s.tp, 2);
  });

  it('--log-level warning: no stat lines', () => {
    assert.equal(srv(['--model-path', '/m', '--log-level', 'warning']).statLines, false);
    assert.equal(srv(['--model-path', '/m']).statLines, true);
  });

  it('--config FILE.yaml read on the node: its values apply, command-line flags override, secrets stay redacted', () => {
    const cfg =
      'model-path: /models/x\ntensor_parallel_size: 4\nport: 31000\nenable-metrics: true\napi-key: cfg-secret-value-123\n# comment\n';
    assert.deepEqual(parseConfigYaml('tp: 2\nlog_level: "warning"\ntrust-remote-code: false\n'), { tp: '2', 'log-level': 'warning' });
    const s = srv(['--config', 'c.yaml', '--port', '32000'], { configText: cfg });
    assert.equal(s.modelPath, '/models/x');
    assert.equal(s.tp, 4);
    assert.equal(s.port, 32000, 'the command line wins');
    assert.equal(s.enableMetrics, true);
    assert.equal(s.hasApiKey, true);
    assert.equal(s.configFile, 'c.yaml');
    assert.ok(!JSON.stringify(s).includes('cfg-secret-value-123'));
  });

  it('profiles: DP attention, pp and nnodes count GPUs as SGLang does; capture keeps them', () => {
    const v = validateProfile({ modelPath: '/m', layout: 'single', gpus: [0, 1, 2, 3], tp: 4, dp: 4, enableDpAttention: true });
    assert.deepEqual(v.errors, []);
    assert.deepEqual(
      planInstances(v.profile!, [0, 1, 2, 3]).map((p) => [p.tp, p.dp]),
      [[4, 4]],
    );
    const bad = validateProfile({ modelPath: '/m', layout: 'single', gpus: [0, 1, 2, 3], tp: 4, dp: 4 });
    assert.match(bad.errors.join('\n'), /tp 4 × dp 4 = 16 GPUs, but gpus lists 4/);
    const argv = ['--model-path', '/m', '--tp', '4', '--dp', '4', '--enable-dp-attention', '--pp-size', '1', '--port', '30000'];
    const s = { ...srv(argv), gpus: [0, 1, 2, 3], cudaVisibleDevices: '0,1,2,3', logFile: '/h/logs/x.log' };
    const cap = captureProfile([s]);
    assert.equal(cap.profile.layout, 'single');
    assert.deepEqual(cap.profile.gpus, [0, 1, 2, 3]);
    assert.equal(cap.profile.enableDpAttention, true);
    const r = renderLaunchScript(cap.profile, [0, 1, 2, 3]);
    assert.deepEqual(r.instances[0].argv, s.args, 'the same argv, in the same order and spelling');
    assert.equal(r.instances[0].logFile, '/h/logs/x.log');
  });
});
