/** The launch operations' remote-output parsers and scripts (core/launch/launch): listen ports, preflight, poll, scan, drain, kill. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  buildKillScript,
  buildPollScript,
  errorSummary,
  logDrainReading,
  looksLikeHfRepo,
  parseListenPorts,
  parsePollOutput,
  parsePreflightOutput,
  parseScanOutput,
} from '../../../src/core/launch/launch';
import { envRecord, procRecord } from '../../helpers/procRecord';
import { valid } from '../../helpers/profile';

describe('launch: remote-output parsers', () => {
  const profile = valid({ modelPath: '/models/m', gpus: [0, 1, 2, 3], basePort: 30000 });
  const N = 'GSnonce';
  const sec = (name: string, body: string) => `\n@@${N}:${name}@@\n${body}`;
  const output = (o: { listen?: string; gpus?: string; apps?: string; model?: string; python?: string; workdir?: string }) =>
    [
      sec('listen', o.listen ?? '0100007F:0016\n00000000:1F90\n'),
      sec('ss', ''),
      sec('gpus', o.gpus ?? '0, GPU-a\n1, GPU-b\n2, GPU-c\n3, GPU-d\n4, GPU-e\nrc=0\n'),
      sec('apps', o.apps ?? ''),
      sec('workdir', o.workdir ?? 'ok\n'),
      sec('model', o.model ?? 'dir-config\n'),
      sec('draft', 'none\n'),
      sec('python', o.python ?? 'GS-SGLANG 0.5.11\nGS-RC 0\n'),
      sec('end', ''),
    ].join('');

  it('parses listening ports from /proc/net/tcp{,6}', () => {
    const m = parseListenPorts(
      '0100007F:7530\n00000000:7531\n00000000000000000000000000000000:7532\n00000000000000000000000001000000:7533\n',
    );
    assert.deepEqual(m.get(30000), ['127.0.0.1']);
    assert.deepEqual(m.get(30001), ['0.0.0.0']);
    assert.deepEqual(m.get(30002), ['::']);
    assert.deepEqual(m.get(30003), ['::1']);
  });

  it('passes a clean node', () => {
    const r = parsePreflightOutput(output({}), N, profile, [0, 1, 2, 3], 'node1', false);
    assert.deepEqual(r.refusals, []);
    assert.equal(r.ok, true);
    assert.deepEqual(r.ports, [30000, 30001, 30002, 30003]);
    assert.equal(r.sglangVersion, '0.5.11');
    const all = parsePreflightOutput(output({}), N, { ...profile, gpus: 'all' }, 'all', 'node1', false);
    assert.deepEqual(all.gpus, [0, 1, 2, 3, 4]);
  });

  it('warns about flags 2026 SGLang removed, with their replacements (issue 40)', () => {
    const old = { ...profile, extraArgs: ['--enable-deepep-moe', '--enable-ep-moe', '--enable-foo-moe', '--enable-metrics'] };
    const r = parsePreflightOutput(output({}), N, old, [0, 1, 2, 3], 'node1', false);
    assert.equal(r.ok, true);
    assert.deepEqual(
      r.warnings.filter((w) => w.check === 'flags').map((w) => w.message),
      [
        '--enable-deepep-moe was removed from SGLang in 2026 (PR #38375); use --moe-a2a-backend deepep instead.',
        '--enable-ep-moe was removed from SGLang in 2026 (PR #38375); use --ep-size N instead.',
        '--enable-foo-moe was removed from SGLang in 2026 (PR #38375); use --moe-runner-backend <backend> instead.',
      ],
    );
    assert.deepEqual(parsePreflightOutput(output({}), N, profile, [0, 1, 2, 3], 'node1', false).warnings, []);
  });

  it('refuses a port in use, busy GPUs (unless overridden), a missing model, and a failed import', () => {
    const r = parsePreflightOutput(
      output({
        listen: '0100007F:7532\n',
        apps: '4242, python3, 160000, GPU-b\n',
        model: 'missing\n',
        python:
          'Traceback (most recent call last):\n  File "<string>", line 1, in <module>\nModuleNotFoundError: No module named \'sglang\'\nGS-RC 1\n',
      }),
      N,
      profile,
      [0, 1, 2, 3],
      'node1',
      false,
    );
    const msgs = r.refusals.map((x) => `${x.check}: ${x.message}`);
    assert.equal(r.ok, false);
    assert.ok(
      msgs.some((m) => m.startsWith('port: Port 30002 (GPU 2) is already in use on node1: something listens on 127.0.0.1:30002')),
      msgs.join('\n'),
    );
    assert.ok(
      msgs.some((m) => m.startsWith('gpu: GPU 1 is in use on node1: pid 4242 python3 (160000 MiB)')),
      msgs.join('\n'),
    );
    assert.ok(msgs.includes('model: modelPath: the model /models/m does not exist on node1.'), msgs.join('\n'));
    assert.ok(
      msgs.some((m) => m.startsWith("python: python3 cannot import sglang on node1: ModuleNotFoundError: No module named 'sglang'")),
      msgs.join('\n'),
    );
    assert.equal(r.refusals.find((x) => x.check === 'gpu')?.overridable, true);
    const o = parsePreflightOutput(output({ apps: '4242, python3, 160000, GPU-b\n' }), N, profile, [0, 1, 2, 3], 'node1', true);
    assert.equal(o.ok, true);
    assert.match(o.warnings[0].message, /GPU 1 is in use .*\(overridden\)$/);
  });

  it('only warns for a Hugging Face repo id, refuses unknown GPUs and a missing nvidia-smi for "all"', () => {
    assert.equal(looksLikeHfRepo('Qwen/Qwen3-8B'), true);
    assert.equal(looksLikeHfRepo('/models/Qwen3-8B'), false);
    assert.equal(looksLikeHfRepo('~/x/y'), false);
    const hf = parsePreflightOutput(output({ model: 'missing\n' }), N, { ...profile, modelPath: 'Qwen/Qwen3-8B' }, [0], 'n', false);
    assert.equal(hf.ok, true);
    assert.match(hf.warnings[0].message, /looks like a Hugging Face repo id/);
    const bad = parsePreflightOutput(output({}), N, profile, [3, 9], 'n', false);
    assert.ok(bad.refusals.some((x) => x.message === 'GPU 9 does not exist on n (it has GPUs 0, 1, 2, 3, 4).'));
    const nosmi = parsePreflightOutput(output({ gpus: 'sh: 1: nvidia-smi: not found\nrc=127\n' }), N, profile, 'all', 'n', false);
    assert.ok(
      nosmi.refusals.some((x) => x.message.startsWith('gpus is "all", but nvidia-smi on n lists no GPU (sh: 1: nvidia-smi: not found)')),
    );
  });

  it('polls instances: state, readiness line and log tail per instance', () => {
    const script = buildPollScript(N, [{ pid: 12, logFile: '~/logs/a b.log' }]);
    assert.match(script, /\/proc\/12\/stat/);
    assert.match(script, /"\$HOME"\/'logs\/a b\.log'/);
    const text = `${sec('s0', 'dead\n')}${sec('r0', '')}${sec('t0', 'usage: launch_server.py [-h] --model-path MODEL_PATH\nlaunch_server.py: error: unrecognized arguments: --bogus-flag\n')}${sec('s1', 'alive\n')}${sec('r1', '[2026-01-01 00:00:00] The server is fired up and ready to roll!\n')}${sec('t1', 'x\n')}${sec('end', '')}`;
    const st = parsePollOutput(text, N, 2)!;
    assert.equal(st[0].alive, false);
    assert.equal(st[1].alive, true);
    assert.equal(errorSummary(st[0].tail), 'launch_server.py: error: unrecognized arguments: --bogus-flag');
    assert.equal(parsePollOutput('truncated', N, 2), null);
    assert.equal(
      errorSummary(['Traceback (most recent call last):', '  File "x", line 1', "OSError: Can't load the configuration of '/m'"]),
      "OSError: Can't load the configuration of '/m'",
    );
  });

  it('scans servers with owner, group and environment, dropping secrets and login-shell values', () => {
    const text = [
      sec('me', '1000\n'),
      sec('login', 'SGLANG_SIM_GEN_TPS=2000\nVIRTUAL_ENV=/home/u/venv\n'),
      sec('ps', '  500     1   500  1000\n  501   500   500  1000\n'),
      sec(
        'proc',
        procRecord({
          pid: 500,
          ppid: 1,
          cwd: '/home/u',
          fd1: '/home/u/logs/sglang_gpu0.log',
          fd2: '/home/u/logs/sglang_gpu0.log',
          env: 'CUDA_VISIBLE_DEVICES=0\n',
          argv: ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--port', '30000'],
        }) +
          envRecord(
            500,
            true,
            '500 1000',
            'SGLANG_SIM_GEN_TPS=2000\nNCCL_DEBUG=WARN\nHF_TOKEN=hf_secret\nVIRTUAL_ENV=/home/u/venv\nCUDA_VISIBLE_DEVICES=0\n',
          ),
      ),
      sec('end', ''),
    ].join('');
    const s = parseScanOutput(text, N);
    assert.equal(s.ownUid, 1000);
    assert.equal(s.servers.length, 1);
    const srv = s.servers[0];
    assert.equal(srv.port, 30000);
    assert.equal(srv.pgid, 500);
    assert.equal(srv.uid, 1000);
    assert.equal(srv.virtualEnv, '/home/u/venv');
    assert.deepEqual(srv.env, { NCCL_DEBUG: 'WARN' });
    assert.deepEqual(srv.gpus, [0]);
    assert.equal(s.procs.get(501)?.ppid, 500);
    // without ps (busybox): group and owner from /proc
    const noPs = parseScanOutput(text.replace('  500     1   500  1000\n  501   500   500  1000\n', ''), N);
    assert.equal(noPs.servers[0].pgid, 500);
    assert.equal(noPs.servers[0].uid, 1000);
  });

  it('drains from the log: #running-req of the latest decode line, or quiet for quietMs', () => {
    const st = { lastDecode: null as string | null, quietSince: 0 };
    const busy =
      '[2026-04-05 20:02:51] Decode batch, #running-req: 5, #token: 100, token usage: 0.01, gen throughput (token/s): 100.00, #queue-req: 0, ';
    assert.equal(logDrainReading(busy, st, 1000, 10_000), 5);
    assert.equal(logDrainReading(busy, st, 5000, 10_000), 5, 'the same line a while later: still busy');
    assert.equal(logDrainReading(busy, st, 11_000, 10_000), 0, 'no new decode line for 10 s: idle');
    assert.equal(
      logDrainReading(busy.replace('20:02:51', '20:02:52').replace('#running-req: 5', '#running-req: 0'), st, 11_500, 10_000),
      0,
    );
    const fresh = { lastDecode: null as string | null, quietSince: 0 };
    assert.equal(logDrainReading('', fresh, 1000, 10_000), 1, 'no decode line yet: unknown, keep waiting');
    assert.equal(logDrainReading('', fresh, 11_000, 10_000), 0);
  });

  it('kills a process group with SIGTERM, and SIGKILLs what ignores it', function () {
    this.timeout(15_000);
    for (const ignoreTerm of [false, true]) {
      const start = spawnSync(
        '/bin/sh',
        ['-c', `setsid sh -c '${ignoreTerm ? 'trap "" TERM; ' : ''}sleep 30 & wait' >/dev/null 2>&1 </dev/null & echo $!`],
        { encoding: 'utf8' },
      );
      const pid = Number(start.stdout.trim());
      assert.ok(pid > 0);
      spawnSync('sleep', ['0.2']);
      const r = spawnSync('/bin/sh', ['-s'], {
        input: buildKillScript(pid, { group: true, descendants: [], termTimeoutMs: 600 }),
        encoding: 'utf8',
        timeout: 10_000,
      });
      assert.match(r.stdout, /GS-TERM/);
      assert.match(r.stdout, /GS-GONE/);
      assert.equal(/GS-KILLED/.test(r.stdout), ignoreTerm, r.stdout);
    }
  });
});
