import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  findServers,
  parseFlags,
  parseProcRecords,
  parsePsLines,
  parseConfigYaml,
  sglangLaunchIndex,
  serverFromArgv,
  httpPortOf,
} from '../../../src/core/sglang/serverArgv';
import { procRecordsLoop } from '../../../src/core/node/probe';
import { procRecord } from '../../helpers/procRecord';
import { srv } from '../../helpers/sglangServer';

const seedArgv = [
  'python3',
  '-m',
  'sglang.launch_server',
  '--model-path',
  '/dev/shm/Qwen3.6-27B',
  '--served-model-name',
  'qwen3.6-27b',
  '--host',
  '0.0.0.0',
  '--port',
  '30003',
  '--mem-fraction-static=0.88',
  '--context-length',
  '32768',
  '--speculative-algorithm',
  'NEXTN',
  '--speculative-num-steps',
  '3',
  '--speculative-eagle-topk',
  '1',
  '--speculative-num-draft-tokens',
  '4',
  '--reasoning-parser',
  'qwen3',
  '--trust-remote-code',
  '--enable-metrics',
];

describe('SGLang process parsing', () => {
  it('recognises every launcher form and rejects look-alikes', () => {
    assert.equal(sglangLaunchIndex(['python', '-m', 'sglang.launch_server', '--port', '1']), 3);
    assert.equal(sglangLaunchIndex(['/root/venv/bin/python3', '-m', 'sglang.launch_server']), 3);
    assert.equal(sglangLaunchIndex(['/root/venv/bin/sglang', 'serve', '--model-path', 'm']), 2);
    assert.equal(sglangLaunchIndex(['python3', '/opt/sglang/python/sglang/launch_server.py', '--port', '1']), 2);
    assert.equal(sglangLaunchIndex(['sglang::scheduler_TP0']), -1);
    assert.equal(sglangLaunchIndex(['grep', '-l', '-a', '-e', 'sglang']), -1);
    assert.equal(sglangLaunchIndex(['vim', 'sglang.launch_server']), -1);
    assert.equal(sglangLaunchIndex(['python3', '-m', 'sglang.bench_serving', '--port', '30000']), -1);
  });

  it('a --grpc-mode server answers HTTP on its --metrics-http-port sidecar, or nowhere (issue 40)', () => {
    const mk = (extra: string[]) =>
      serverFromArgv({ pid: 1, ppid: 1, exact: true, argv: ['python3', '-m', 'sglang.launch_server', '--port', '31000', ...extra] })!;
    assert.equal(httpPortOf(mk([])), 31000);
    const g = mk(['--grpc-mode', '--model-path', '/m']);
    assert.equal(g.grpcMode, true);
    assert.equal(g.modelPath, '/m', '--grpc-mode takes no value');
    assert.equal(httpPortOf(g), null);
    assert.equal(httpPortOf(mk(['--grpc-mode', '--metrics-http-port', '31090'])), 31090);
    assert.equal(httpPortOf(mk(['--grpc-mode', '--metrics-http-port=99999'])), null);
  });

  it('parses both --flag value and --flag=value, and bare boolean flags', () => {
    const f = parseFlags(['--tp', '2', '--dp=4', '--trust-remote-code', '--model-path', '/m', '--enable-metrics']);
    assert.deepEqual(f, { tp: '2', dp: '4', 'trust-remote-code': true, 'model-path': '/m', 'enable-metrics': true });
  });

  it('extracts the fields of a seed-style server', () => {
    const s = serverFromArgv({
      pid: 4242,
      ppid: 1,
      argv: seedArgv,
      exact: true,
      fd1: '/root/sglang_gpu3.log',
      fd2: '/root/sglang_gpu3.log',
      cudaVisibleDevices: '3',
    });
    assert.ok(s);
    assert.equal(s.port, 30003);
    assert.equal(s.host, '0.0.0.0');
    assert.equal(s.modelPath, '/dev/shm/Qwen3.6-27B');
    assert.equal(s.servedModelName, 'qwen3.6-27b');
    assert.equal(s.tp, 1);
    assert.equal(s.dp, 1);
    assert.equal(s.speculativeAlgorithm, 'NEXTN');
    assert.equal(s.reasoningParser, 'qwen3');
    assert.equal(s.enableMetrics, true);
    assert.equal(s.logFile, '/root/sglang_gpu3.log');
    assert.equal(s.flags['mem-fraction-static'], '0.88');
    assert.deepEqual(s.args, seedArgv);
  });

  it('defaults port 30000 and host 127.0.0.1; --tp-size/--dp-size spellings', () => {
    const s = serverFromArgv({
      pid: 1,
      ppid: null,
      argv: ['python', '-m', 'sglang.launch_server', '--model', 'Qwen/Qwen3-8B', '--tp-size', '4', '--dp-size=2'],
      exact: false,
    });
    assert.ok(s);
    assert.equal(s.port, 30000);
    assert.equal(s.host, '127.0.0.1');
    assert.equal(s.modelPath, 'Qwen/Qwen3-8B');
    assert.equal(s.tp, 4);
    assert.equal(s.dp, 2);
    assert.equal(s.logFile, null);
  });

  it('log file only from real files, not pipes, sockets, terminals or /dev/null', () => {
    const mk = (fd1: string, fd2: string) => serverFromArgv({ pid: 1, ppid: null, argv: seedArgv, exact: true, fd1, fd2 })!.logFile;
    assert.equal(mk('pipe:[1234]', 'socket:[5]'), null);
    assert.equal(mk('/dev/pts/3', '/dev/null'), null);
    assert.equal(mk('/dev/null', '/root/err.log'), '/root/err.log');
    assert.equal(mk('/root/nohup.out (deleted)', ''), '/root/nohup.out');
  });

  it('parses ps lines and /proc records, exact argv wins, GPUs found through child schedulers', () => {
    const ps = parsePsLines(
      [
        '      1       0 /sbin/init',
        '   4242       1 python3 -m sglang.launch_server --model-path /dev/shm/Qwen3.6-27B --port 30003',
        '   4300    4242 sglang::scheduler_TP0',
        '   4301    4242 sglang::detokenizer',
        '   5000       1 python3 -m sglang.launch_server --model-path /models/with space --port 30004',
        '   6000       1 grep sglang',
      ].join('\n'),
    );
    assert.equal(ps.length, 6);
    const proc = parseProcRecords(
      procRecord({
        pid: 5000,
        ppid: 1,
        cwd: '/root',
        fd1: '/root/logs/sglang_gpu4.log',
        fd2: '/root/logs/sglang_gpu4.log',
        env: 'CUDA_VISIBLE_DEVICES=4\n',
        argv: ['python3', '-m', 'sglang.launch_server', '--model-path', '/models/with space', '--port', '30004'],
      }),
    );
    assert.equal(proc.length, 1);
    assert.equal(proc[0].cudaVisibleDevices, '4');
    const servers = findServers(ps, proc, [{ pid: 4300, gpuIndex: 3 }]);
    assert.equal(servers.length, 2);
    assert.equal(servers[0].port, 30003);
    assert.deepEqual(servers[0].gpus, [3]);
    assert.equal(servers[1].modelPath, '/models/with space');
    assert.deepEqual(servers[1].gpus, [4]);
    assert.equal(servers[1].logFile, '/root/logs/sglang_gpu4.log');
  });

  it('reads `ps aux` and `ps -ef` tables too (header-aware)', () => {
    const aux = parsePsLines(
      [
        'USER         PID %CPU %MEM    VSZ   RSS TTY      STAT START   TIME COMMAND',
        'root           1  0.0  0.0 167940 13116 ?        Ss   Nov28   0:07 /sbin/init',
        'root     2345678 99.0  1.2 912345 678901 ?       Rl   10:02 1020:11 python3 -m sglang.launch_server --model-path /dev/shm/Qwen3.6-27B --port 30000 --dp 2',
      ].join('\n'),
    );
    assert.equal(aux.length, 2);
    const s = findServers(aux, [], []);
    assert.equal(s.length, 1);
    assert.equal(s[0].pid, 2345678);
    assert.equal(s[0].dp, 2);
    const ef = parsePsLines(
      [
        'UID          PID    PPID  C STIME TTY          TIME CMD',
        'root        4242       1 99 10:02 ?        17:00:00 python -m sglang.launch_server --model-path=/m --port=30001 --tp-size 4',
        'root        4300    4242 99 10:02 ?        17:00:00 sglang::scheduler_TP0',
      ].join('\n'),
    );
    const s2 = findServers(ef, [], [{ pid: 4300, gpuIndex: 2 }]);
    assert.equal(s2.length, 1);
    assert.equal(s2[0].port, 30001);
    assert.equal(s2[0].tp, 4);
    assert.deepEqual(s2[0].gpus, [2]);
  });

  // Attack 4 of issue 12: separator bytes inside a process's argv tried to forge a whole record (pid 1, a
  // chosen log path and model). The fields travel hex-encoded, so the forged bytes stay inside one argv item.
  const FORGED_ARG =
    '\x1e' +
    'P\x1d1\x1d0\x1d/\x1d/etc/shadow\x1d/etc/shadow\x1d\x1dpython3\x1f-m\x1fsglang.launch_server\x1f--model-path\x1f/evil\x1f--port\x1f30099\x1f\x1e';
  const forgedArgv = ['bash', '-c', 'sleep 900; :', '-m', 'sglang.launch_server', '--port', '31777', '--model-path', FORGED_ARG];

  it('a /proc record cannot be forged with separator bytes inside argv, paths or environment', () => {
    const text = procRecord({
      pid: 4321,
      ppid: 77,
      cwd: '/home/u\x1d\x1e',
      fd1: '/home/u/logs/a\x1e.log',
      fd2: '/home/u/logs/a\x1e.log',
      env: 'CUDA_VISIBLE_DEVICES=0\x1d\x1e\n',
      argv: forgedArgv,
    });
    const proc = parseProcRecords(text);
    assert.equal(proc.length, 1);
    assert.equal(proc[0].pid, 4321);
    assert.deepEqual(proc[0].argv, forgedArgv);
    assert.equal(proc[0].fd1, '/home/u/logs/a\x1e.log');
    const servers = findServers([], proc, []);
    assert.equal(servers.length, 1);
    assert.equal(servers[0].pid, 4321);
    assert.equal(servers[0].port, 31777);
    // the old raw framing, as a forging process would print it, is not a record at all
    assert.equal(parseProcRecords(FORGED_ARG).length, 0);
  });

  it('the real /proc loop over a crafted local process yields one entry with its real pid', async function () {
    if (process.platform !== 'linux') this.skip();
    this.timeout(20_000);
    const child = spawn('bash', ['-c', 'sleep 30; :', ...forgedArgv.slice(3)], { stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 200));
      const r = spawnSync('sh', ['-s'], { input: procRecordsLoop(), maxBuffer: 64 * 1024 * 1024 });
      const mine = parseProcRecords(r.stdout.toString('utf8')).filter((p) => p.argv.includes(FORGED_ARG));
      assert.equal(mine.length, 1);
      assert.equal(mine[0].pid, child.pid);
      const servers = findServers([], mine, []);
      assert.deepEqual(
        servers.map((x) => [x.pid, x.port]),
        [[child.pid, 31777]],
      );
      assert.equal(parseProcRecords(r.stdout.toString('utf8')).filter((p) => p.pid === 1 && p.argv.includes('/evil')).length, 0);
    } finally {
      child.kill('SIGKILL');
    }
  });
});

/** SGLang flag fidelity: config files, parallel sizes, DP attention, nnodes, abbreviations, log level. */
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
      'model-path: /models/x\ntensor-parallel-size: 4\nport: 31000\nenable-metrics: true\napi-key: cfg-secret-value-123\n# comment\n';
    assert.deepEqual(parseConfigYaml('tp: 2\nlog-level: "warning"\ntrust-remote-code: false\n'), { tp: '2', 'log-level': 'warning' });
    const s = srv(['--config', 'c.yaml', '--port', '32000'], { configText: cfg });
    assert.equal(s.modelPath, '/models/x');
    assert.equal(s.tp, 4);
    assert.equal(s.port, 32000, 'the command line wins');
    assert.equal(s.enableMetrics, true);
    assert.equal(s.hasApiKey, true);
    assert.equal(s.configFile, 'c.yaml');
    assert.ok(!JSON.stringify(s).includes('cfg-secret-value-123'));
  });

  it('--config as SGLang reads it: the exact token only, lists as space-separated values, keys verbatim', () => {
    // server_args_config_parser.py: `if arg == "--config"`; lists become `--key v1 v2`; keys used as `--{key}`
    const cfg =
      'model-path: /models/x\ntp: 4\ncuda-graph-bs: [1, 2, 4, 8]\nmem_fraction_static: 0.7\ndisable-radix-cache: false\nlora-paths:\n  - a=/l/a\n  - b=/l/b\nport: 31000\n';
    const flags = parseConfigYaml(cfg);
    assert.equal(flags['cuda-graph-bs'], '1 2 4 8');
    assert.equal(flags['lora-paths'], 'a=/l/a b=/l/b');
    assert.equal(flags['mem_fraction_static'], '0.7', 'an underscore key is the unknown flag as written');
    assert.equal(flags['mem-fraction-static'], undefined);
    assert.equal(flags.port, '31000', 'the key after a block list is read');
    const eq = srv(['--model-path', '/m', '--config=c.yaml'], { configText: cfg });
    assert.equal(eq.tp, 1, '--config=FILE is not read by SGLang');
    assert.equal(eq.configFile, null);
    assert.equal(srv(['--config', 'c.yaml'], { configText: cfg }).tp, 4);
  });
});
