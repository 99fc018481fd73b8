/**
 * The simulated GPU node: buildSimHome's files, the fake nvidia-smi, and one simulated SGLang
 * server run exactly as `python3 -m sglang.launch_server ...`.
 */
import assert from 'node:assert/strict';
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { buildSimHome, simAssetsDir, SimNodeLayout } from '../../../src/sim/home';
import { classifyLine, lineHeader, parseStatLine } from '../../../src/core/sglang/logLines';
import { metricsSummary, parseMetrics } from '../../../src/core/sglang/endpoints';
import { parseLostGpus } from '../../../src/core/node/nvidiaSmi';
import { waitFor } from '../../helpers/wait';

/** A clean environment for the simulator (no knobs leaking in from the caller's shell). */
function simEnv(layout: SimNodeLayout, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (!/^(SGLANG_SIM_|SIM_NODE_JSON|CUDA_VISIBLE_DEVICES|PYTHONPATH|VIRTUAL_ENV)/.test(k)) env[k] = v;
  }
  return { ...env, ...layout.env, ...extra };
}

function nvidiaSmi(layout: SimNodeLayout, args: string[], extra: Record<string, string> = {}) {
  const r = spawnSync(path.join(layout.home, 'bin', 'nvidia-smi'), args, { env: simEnv(layout, extra), encoding: 'utf8', timeout: 10_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function httpGet(port: number, urlPath: string, method = 'GET', body?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: urlPath, method, timeout: 5000, headers: body ? { 'content-type': 'application/json' } : {} },
      (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (data += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: data }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${urlPath} timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** One simulated server process with its stdout collected. */
class SimServer {
  out = '';
  exit: Promise<number | null>;
  constructor(readonly proc: ChildProcess) {
    proc.stdout?.setEncoding('utf8');
    proc.stderr?.setEncoding('utf8');
    proc.stdout?.on('data', (c: string) => (this.out += c));
    proc.stderr?.on('data', (c: string) => (this.out += c));
    this.exit = new Promise((resolve) => proc.on('exit', (code) => resolve(code)));
  }
  alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }
}

describe('simulated GPU node', function () {
  this.timeout(30_000);
  let tmp: string;
  let layout: SimNodeLayout;
  const servers: SimServer[] = [];

  function startServer(args: string[], extra: Record<string, string> = {}): SimServer {
    const proc = spawn('python3', ['-m', 'sglang.launch_server', ...args], {
      cwd: layout.home,
      env: simEnv(layout, { SGLANG_SIM_STARTUP_S: '0.3', SGLANG_SIM_DECODE_PERIOD_S: '0.2', ...extra }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const s = new SimServer(proc);
    servers.push(s);
    return s;
  }

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), 'gpu-sim-'));
    layout = buildSimHome(path.join(tmp, 'home'), { basePort: 30000 });
  });

  afterEach(async () => {
    for (const s of servers.splice(0)) {
      if (s.alive()) {
        s.proc.kill('SIGKILL');
        await Promise.race([s.exit, new Promise((r) => setTimeout(r, 2000))]);
      }
    }
    rmSync(path.join(layout.home, '.sim', 'pause_load'), { force: true });
  });

  after(() => {
    rmSync(tmp, { recursive: true, force: true });
  });

  describe('buildSimHome', () => {
    it('finds the sim assets from the compiled test', () => {
      assert.ok(existsSync(path.join(simAssetsDir(), 'python', 'sglang', 'launch_server.py')));
    });

    it('lays out the seed-like node and is idempotent', () => {
      const again = buildSimHome(layout.home, { basePort: 30000 });
      assert.deepEqual(again, layout);
      assert.deepEqual(layout.ports, [30000, 30001, 30002, 30003, 30004, 30005, 30006]);
      assert.equal(layout.logFiles[6], path.join(layout.home, 'logs', 'sglang_gpu6.log'));
      for (const f of ['launch_all.sh', 'launch_tuned.sh', 'stop_all.sh', 'bin/nvidia-smi']) {
        assert.ok(statSync(path.join(layout.home, f)).mode & 0o100, `${f} is executable`);
      }
      for (const f of [
        'generate_completions.py',
        'tokenize_completions.py',
        's3_utils.py',
        'completions/.done_indices',
        'completions/batch_000000.jsonl',
        'logs/generate.log',
        'configs/dflash_qwen36.yaml',
        'patches/sglang-mtp-fix.patch',
        'nohup.out',
        'venv/bin/activate',
        'venv/lib/sglang-sim/sglang/launch_server.py',
        'models/Qwen3.6-27B/config.json',
        'models/Qwen3.6-27B/model-00001-of-00011.safetensors',
        '.ssh/environment',
      ]) {
        assert.ok(existsSync(path.join(layout.home, f)), `${f} exists`);
      }
      const progress = JSON.parse(readFileSync(path.join(layout.home, 'completions', 'progress.json'), 'utf8'));
      assert.equal(progress.completed, 902087);
      assert.equal(progress.total, 913786);
      const launch = readFileSync(layout.launchScript, 'utf8');
      assert.match(launch, /CUDA_VISIBLE_DEVICES=\$i setsid nohup python3 -m sglang\.launch_server/);
      assert.match(launch, /--speculative-algorithm NEXTN/);
      assert.match(launch, /--enable-metrics/);
      assert.match(launch, /logs\/sglang_gpu\$i\.log/);
      assert.match(readFileSync(path.join(layout.home, 'launch_tuned.sh'), 'utf8'), /--max-running-requests 96/);
      assert.doesNotMatch(readFileSync(path.join(layout.home, 's3_utils.py'), 'utf8'), /AKIA|aws_secret_access_key\s*=/);
      assert.match(readFileSync(path.join(layout.home, '.ssh', 'environment'), 'utf8'), new RegExp(`^PATH=${layout.home}/bin:`, 'm'));
      const sh = spawnSync('sh', ['-n', layout.launchScript]);
      assert.equal(sh.status, 0, 'launch_all.sh parses as POSIX sh');
    });

    it("the generation client is homeFiles/generate_completions.py with this node's ports and model filled in", () => {
      const py = readFileSync(path.join(layout.home, 'generate_completions.py'), 'utf8');
      assert.match(py, /^SERVERS = \["http:\/\/127\.0\.0\.1:%d" % p for p in range\(30000, 30007\)\]\nMODEL = "[^"\n]+"\n/m);
      assert.match(py, /spread over the 7 servers \(ports 30000\.\.30006\)/);
      assert.doesNotMatch(py, /\{\{|the writer of the demo node/);
      const c = spawnSync('python3', [
        '-c',
        'import ast, sys; ast.parse(open(sys.argv[1]).read())',
        path.join(layout.home, 'generate_completions.py'),
      ]);
      assert.equal(c.status, 0, c.stderr.toString());
    });

    it('never writes outside the home for a model path elsewhere', () => {
      const other = path.join(tmp, 'home2');
      const l = buildSimHome(other, { modelPath: path.join(tmp, 'elsewhere', 'model'), gpuCount: 2, speculativeAlgorithm: null });
      assert.equal(existsSync(path.join(tmp, 'elsewhere')), false);
      assert.doesNotMatch(readFileSync(l.launchScript, 'utf8'), /speculative/);
    });
  });

  describe('nvidia-smi', () => {
    it('answers --query-gpu in CSV with real headers and units', () => {
      const r = nvidiaSmi(layout, [
        '--query-gpu=index,name,memory.total,memory.used,utilization.gpu,power.draw',
        '--format=csv,noheader,nounits',
      ]);
      assert.equal(r.status, 0, r.stdout + r.stderr);
      const lines = r.stdout.trim().split('\n');
      assert.equal(lines.length, 7);
      lines.forEach((line, i) => {
        const f = line.split(', ');
        assert.equal(f[0], String(i));
        assert.equal(f[1], 'NVIDIA B200');
        assert.equal(f[2], '183359');
        assert.match(f[5], /^\d+\.\d\d$/);
      });
      const withHeader = nvidiaSmi(layout, ['--query-gpu=memory.total,utilization.gpu,power.draw', '--format=csv']);
      const [head, first] = withHeader.stdout.split('\n');
      assert.equal(head, 'memory.total [MiB], utilization.gpu [%], power.draw [W]');
      assert.match(first, /^183359 MiB, \d+ %, \d+\.\d\d W$/);
    });

    it('prints the real banner, -L and the process table', () => {
      const r = nvidiaSmi(layout, []);
      assert.equal(r.status, 0);
      assert.match(r.stdout, /\| NVIDIA-SMI 570\.133\.20 +Driver Version: 570\.133\.20 +CUDA Version: 12\.8 +\|/);
      assert.match(r.stdout, /No running processes found/);
      for (const line of r.stdout
        .split('\n')
        .slice(1)
        .filter((l) => /^[|+]/.test(l)))
        assert.equal(line.length, 91, line);
      const list = nvidiaSmi(layout, ['-L']);
      assert.match(list.stdout, /^GPU 0: NVIDIA B200 \(UUID: GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\)$/m);
      assert.match(nvidiaSmi(layout, ['topo', '-m']).stdout, /GPU0\t X \tNV18/);
      assert.match(nvidiaSmi(layout, ['-q']).stdout, /==============NVSMI LOG==============/);
    });

    it('prints only the compute-apps header when nothing runs', () => {
      const r = nvidiaSmi(layout, ['--query-compute-apps=pid,process_name,used_memory', '--format=csv']);
      assert.equal(r.status, 0);
      assert.equal(r.stdout, 'pid, process_name, used_gpu_memory [MiB]\n');
    });

    it('rejects an unknown field with exit 2, and fails like a missing driver with exit 9', () => {
      const bad = nvidiaSmi(layout, ['--query-gpu=cuda_version', '--format=csv']);
      assert.equal(bad.status, 2);
      assert.match(bad.stdout, /Field "cuda_version" is not a valid field to query\./);
      const node = JSON.parse(readFileSync(layout.nodeJson, 'utf8'));
      const broken = path.join(tmp, 'node-no-driver.json');
      writeFileSync(broken, JSON.stringify({ ...node, failMode: 'no-driver' }));
      const r = nvidiaSmi(layout, [], { SIM_NODE_JSON: broken });
      assert.equal(r.status, 9);
      assert.match(r.stdout, /NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver/);
    });

    it('prints the R610 banner (KMD / CUDA UMD Version) for a 610 driver, as the product parses it', async () => {
      const node = JSON.parse(readFileSync(layout.nodeJson, 'utf8'));
      const f = path.join(tmp, 'node-610.json');
      writeFileSync(f, JSON.stringify({ ...node, driverVersion: '610.43.02', cudaVersion: '13.3' }));
      const r = nvidiaSmi(layout, [], { SIM_NODE_JSON: f });
      const banner = r.stdout.split('\n')[2];
      assert.equal(banner, '| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02     CUDA UMD Version: 13.3     |');
      const { parseSmiBanner } = await import('../../../src/core/node/nvidiaSmi');
      assert.deepEqual([parseSmiBanner(r.stdout).driverVersion, parseSmiBanner(r.stdout).cudaVersion], ['610.43.02', '13.3']);
    });

    it('shows [N/A] for values node.json marks unavailable', () => {
      const node = JSON.parse(readFileSync(layout.nodeJson, 'utf8'));
      node.gpus[1].powerNA = true;
      const f = path.join(tmp, 'node-na.json');
      writeFileSync(f, JSON.stringify(node));
      const r = nvidiaSmi(layout, ['--query-gpu=index,power.draw', '--format=csv,noheader'], { SIM_NODE_JSON: f });
      assert.equal(r.stdout.split('\n')[1], '1, [N/A]');
    });
  });

  describe('sglang.launch_server', () => {
    it('fails like argparse on an unknown flag (exit 2)', async () => {
      const s = startServer(['--model-path', layout.modelPath, '--no-such-flag', '1']);
      assert.equal(await s.exit, 2);
      assert.match(s.out, /^usage: launch_server\.py/m);
      assert.match(s.out, /error: unrecognized arguments: --no-such-flag 1/);
    });

    it('fails with a traceback when the model path does not exist (exit 1)', async () => {
      const missing = path.join(tmp, 'no-model-here');
      const s = startServer(['--model-path', missing, '--port', String(await freePort())]);
      assert.equal(await s.exit, 1);
      assert.match(s.out, /^Traceback \(most recent call last\):/m);
      assert.ok(s.out.trimEnd().split('\n').pop()!.startsWith(`OSError: Can't load the configuration of '${missing}'`));
    });

    it('starts, serves, logs decode lines, shows in nvidia-smi and stops on SIGTERM', async () => {
      const port = await freePort();
      const s = startServer(
        [
          '--model-path',
          layout.modelPath,
          '--served-model-name',
          'qwen3.6-27b',
          '--port',
          String(port),
          '--enable-metrics',
          '--speculative-algorithm',
          'NEXTN',
        ],
        { CUDA_VISIBLE_DEVICES: '3', SGLANG_SIM_STARTUP_S: '1.0' },
      );
      // 503 while starting, then 200.
      const first = await waitFor('the HTTP port', () => httpGet(port, '/health').catch(() => undefined));
      assert.equal(first.status, 503);
      await waitFor('/health 200', async () => ((await httpGet(port, '/health')).status === 200 ? true : undefined));
      await waitFor('the ready line', () => s.out.includes('The server is fired up and ready to roll!') || undefined);
      // 2026 (sglang#21395): "Load weight end. elapsed=2.19 s, type=..."
      assert.match(
        s.out,
        /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] Load weight end\. elapsed=[\d.]+ s, type=Qwen3ForCausalLM, dtype=torch\.bfloat16, avail mem=[\d.]+ GB, mem usage=[\d.]+ GB\.$/m,
      );
      assert.match(s.out, /^\[[^\]]+\] KV Cache is allocated\. #tokens: \d+, K size: [\d.]+ GB, V size: [\d.]+ GB$/m);
      assert.match(
        s.out,
        /^\[[^\]]+\] max_total_num_tokens=\d+, chunked_prefill_size=\d+, max_prefill_tokens=\d+, max_running_requests=\d+, context_len=262144/m,
      );
      assert.match(s.out, new RegExp(`INFO:     Started server process \\[${s.proc.pid}\\]`));

      const decode = await waitFor('a decode line', () => s.out.split('\n').find((l) => l.includes('Decode batch')));
      // Single GPU, 2026 format: no rank tags, comma after "batch", nothing after "#queue-req: N".
      assert.match(
        decode,
        /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\] Decode batch, #running-req: \d+, #token: \d+, token usage: \d\.\d\d, accept len: \d\.\d\d, accept rate: \d\.\d\d, cuda graph: True, gen throughput \(token\/s\): \d+\.\d\d, #queue-req: \d+$/,
      );
      const tps = Number(/gen throughput \(token\/s\): ([\d.]+)/.exec(decode)![1]);
      assert.ok(tps > 1800 && tps < 2200, `throughput ${tps} near 2000`);

      const info = JSON.parse((await httpGet(port, '/get_server_info')).body);
      assert.equal(info.model_path, layout.modelPath);
      assert.equal(info.served_model_name, 'qwen3.6-27b');
      assert.equal(info.tp_size, 1);
      assert.equal(info.dp_size, 1);
      assert.equal(info.port, port);
      assert.equal(info.speculative_algorithm, 'NEXTN');
      assert.equal(info.mem_fraction_static, 0.88);
      assert.equal(info.version, '0.5.11');
      assert.ok(info.max_total_num_tokens > 100000);
      assert.equal(info.internal_states.length, 1);
      assert.ok(info.internal_states[0].last_gen_throughput > 0);
      assert.ok(info.internal_states[0].avg_spec_accept_length >= 1);
      assert.deepEqual(JSON.parse((await httpGet(port, '/server_info')).body).model_path, layout.modelPath);

      const models = JSON.parse((await httpGet(port, '/v1/models')).body);
      assert.equal(models.data[0].id, 'qwen3.6-27b');
      assert.equal(models.data[0].owned_by, 'sglang');
      assert.equal(models.data[0].max_model_len, 262144); // from config.json

      const metrics = (await httpGet(port, '/metrics')).body;
      assert.match(metrics, /^# TYPE sglang:gen_throughput gauge$/m);
      // 2026: sorted labels (multiprocess collector), moe_ep_rank always; counters split by is_streaming
      assert.match(
        metrics,
        /^sglang:gen_throughput\{engine_type="unified",model_name="qwen3\.6-27b",moe_ep_rank="0",pp_rank="0",tp_rank="0"\} [\d.]+$/m,
      );
      // (the exposition sorts every sample's labels, is_streaming among them)
      assert.match(
        metrics,
        /^sglang:generation_tokens_total\{engine_type="unified",is_streaming="true",model_name="[^"]+",[^}]*\} [\d.e+]+$/m,
      );
      const loads = JSON.parse((await httpGet(port, '/v1/loads')).body);
      assert.equal(loads.loads.length, 1);
      assert.ok(loads.loads[0].gen_throughput > 0 && loads.loads[0].num_running_reqs > 0, JSON.stringify(loads));
      assert.match(metrics, /^sglang:spec_accept_length\{/m);

      const chat = await httpGet(
        port,
        '/v1/chat/completions',
        'POST',
        JSON.stringify({ model: 'qwen3.6-27b', messages: [{ role: 'user', content: 'hi' }] }),
      );
      assert.equal(chat.status, 200);
      assert.equal(JSON.parse(chat.body).choices[0].message.role, 'assistant');
      await waitFor('the access line', () => s.out.includes('"POST /v1/chat/completions HTTP/1.1" 200 OK') || undefined);

      // The fake nvidia-smi sees the server through its pid file.
      const pidFile = path.join(layout.runDir, `server_${port}.pid`);
      assert.equal(readFileSync(pidFile, 'utf8').split(' ').slice(0, 2).join(' '), `${s.proc.pid} 3`);
      const apps = nvidiaSmi(layout, ['--query-compute-apps=pid,process_name,used_memory', '--format=csv,noheader,nounits']);
      const [pid, name, used] = apps.stdout.trim().split(', ');
      // as real drivers list them: the scheduler child (setproctitle "sglang::scheduler_TP0"), not the server
      assert.notEqual(pid, String(s.proc.pid));
      assert.equal(name, 'sglang::scheduler_TP0');
      assert.equal(readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')[1], String(s.proc.pid), 'a child of the server');
      assert.ok(Number(used) > 0.85 * 183359);
      const gpu3 = nvidiaSmi(layout, ['--query-gpu=memory.used,utilization.gpu', '--format=csv,noheader,nounits', '-i', '3']);
      const [mem, util] = gpu3.stdout.trim().split(', ').map(Number);
      assert.ok(mem > 0.85 * 183359 && util >= 85, gpu3.stdout);

      s.proc.kill('SIGTERM');
      assert.equal(await Promise.race([s.exit, new Promise((r) => setTimeout(() => r('timeout'), 5000))]), 0);
      assert.match(s.out, /INFO: {5}Shutting down/);
      assert.equal(existsSync(pidFile), false);
    });

    it('answers /metrics with 404 without --enable-metrics and drains to 0 running when paused', async () => {
      const port = await freePort();
      const s = startServer(['--model-path', layout.modelPath, '--port', String(port)], { SGLANG_SIM_REQUEST_S: '1.5' });
      await waitFor('/health 200', async () =>
        (await httpGet(port, '/health').catch(() => ({ status: 0 }))).status === 200 ? true : undefined,
      );
      assert.equal((await httpGet(port, '/metrics')).status, 404);
      const load = async () => JSON.parse((await httpGet(port, '/get_load')).body)[0].num_reqs as number;
      await waitFor('load', async () => ((await load()) > 0 ? true : undefined));
      writeFileSync(path.join(layout.home, '.sim', 'pause_load'), '');
      await waitFor('running to drain to 0', async () => ((await load()) === 0 ? true : undefined));
      const quiet = s.out.length;
      // An in-flight request is a running request.
      const inflight = httpGet(port, '/generate', 'POST', JSON.stringify({ text: 'hi' }));
      await waitFor('a decode line for the in-flight request', () => (/#running-req: 1,/.test(s.out.slice(quiet)) ? true : undefined));
      assert.equal((await inflight).status, 200);
      assert.doesNotMatch(s.out, /accept len/);
    });

    it('prints the 2025 shapes on request (trailing ", ", the 2025 watchdog line)', async () => {
      const port = await freePort();
      const s = startServer(['--model-path', layout.modelPath, '--port', String(port), '--speculative-algorithm', 'DSPARK'], {
        SGLANG_SIM_LOG_FORMAT: '2025',
      });
      const decode = await waitFor('a decode line', () => s.out.split('\n').find((l) => l.includes('Decode batch')));
      assert.match(decode, /, #queue-req: \d+, $/);
      assert.match(s.out, /\] Load weight end\. type=/);
    });

    it('prints DP/TP rank tags and the old format', async () => {
      const port = await freePort();
      const s = startServer(
        ['--model-path', layout.modelPath, '--port', String(port), '--tp', '2', '--dp-size=2', '--speculative-algorithm=EAGLE'],
        {
          SGLANG_SIM_LOG_FORMAT: 'old',
          SGLANG_SIM_ALLOW_MISSING_MODEL: '1',
        },
      );
      await waitFor('decode lines of both DP ranks', () => (/ DP1 TP0\] Decode batch\./.test(s.out) ? true : undefined));
      const dp0 = s.out.split('\n').find((l) => / DP0 TP0\] Decode batch\./.test(l))!;
      assert.match(
        dp0,
        /^\[[\d: -]+ DP0 TP0\] Decode batch\. #running-req: \d+, #token: \d+, token usage: \d\.\d\d, accept len: \d\.\d\d, cuda graph: True, gen throughput \(token\/s\): [\d.]+, #queue-req: \d+$/,
      );
      const info = JSON.parse((await httpGet(port, '/get_server_info')).body);
      assert.equal(info.internal_states.length, 2);
      assert.equal(info.tp_size, 2);
    });
  });

  describe('sglang.launch_server: what 2026 builds print (issue 40 item 9)', () => {
    const faultsFile = () => path.join(layout.home, '.sim', 'faults.json');
    const fault = (port: number, f: Record<string, unknown>) => writeFileSync(faultsFile(), JSON.stringify({ servers: { [port]: f } }));
    afterEach(() => rmSync(faultsFile(), { force: true }));
    const ready = (s: SimServer) =>
      waitFor('the ready line', () => s.out.includes('The server is fired up and ready to roll!') || undefined);
    const linesOf = (s: SimServer) => s.out.split('\n');

    it('s5: accepts the 2026 flags and refuses the ambiguous --pp as argparse does', async () => {
      const port = await freePort();
      const s = startServer(
        [
          '--model-path',
          layout.modelPath,
          '--port',
          String(port),
          '--dwdp-size',
          '2',
          '--cuda-graph-bs-decode',
          '1',
          '2',
          '4',
          '8',
          '--cuda-graph-bs-prefill',
          '8',
          '16',
          '--moe-a2a-backend',
          'deepep',
          '--tokenizer-worker-num',
          '4',
          '--disaggregation-transfer-backend',
          'nixl',
          '--enable-mfu-metrics',
          '--quantization',
          'modelslim',
        ],
        { CUDA_VISIBLE_DEVICES: '0' },
      );
      await ready(s);
      assert.match(s.out, /\] Capture cuda graph bs \[1, 2, 4, 8\]$/m);
      const info = JSON.parse((await httpGet(port, '/server_info')).body);
      assert.deepEqual(
        [info.dwdp_size, info.cuda_graph_bs_decode, info.moe_a2a_backend, info.tokenizer_worker_num, info.quantization],
        [2, [1, 2, 4, 8], 'deepep', 4, 'modelslim'],
      );
      // the product reads the argv: the list values of --cuda-graph-bs-decode do not shift the flags after them
      const { parseFlags } = await import('../../../src/core/sglang/serverArgv');
      const flags = parseFlags(['--cuda-graph-bs-decode', '1', '2', '--enable-mfu-metrics', '--port', String(port)]);
      assert.deepEqual([flags['enable-mfu-metrics'], flags.port], [true, String(port)]);

      const pp = startServer(['--model-path', layout.modelPath, '--pp', '2']);
      assert.equal(await pp.exit, 2);
      assert.match(pp.out, /^usage: launch_server\.py/m);
      assert.match(
        pp.out,
        /^launch_server\.py: error: ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size, --pp-async-batch-depth$/m,
      );
    });

    it('s1: a PD prefill node prints Prefill lines only (no #prealloc-req), each dp-attention rank with its own TP rank', async () => {
      const port = await freePort();
      const s = startServer(
        [
          '--model-path',
          layout.modelPath,
          '--port',
          String(port),
          '--tp',
          '2',
          '--dp-size',
          '2',
          '--enable-dp-attention',
          '--disaggregation-mode',
          'prefill',
          '--enable-metrics',
        ],
        { CUDA_VISIBLE_DEVICES: '0,1' },
      );
      await ready(s);
      const line = await waitFor('a DP1 TP1 prefill line', () =>
        linesOf(s).find((l) => / DP1 TP1\] Prefill batch, #new-seq: [1-9]/.test(l)),
      );
      assert.match(
        line,
        /^\[[\d: -]+ DP1 TP1\] Prefill batch, #new-seq: \d+, #new-token: \d+, #cached-token: \d+, token usage: \d\.\d\d, #running-req: 0, #queue-req: \d+, #pending-token: \d+, #bootstrap-req: \d+, #inflight-req: \d+, cuda graph: True, input throughput \(token\/s\): [\d.]+$/,
      );
      await waitFor('a DP0 TP0 prefill line', () => linesOf(s).find((l) => / DP0 TP0\] Prefill batch, #new-seq: [1-9]/.test(l)));
      assert.doesNotMatch(s.out, /Decode batch/);
      assert.doesNotMatch(s.out, /#prealloc-req/);
      assert.doesNotMatch(s.out, / DP1 TP0\]/, 'with dp-attention the DP ranks live inside TP');
      // the product reads the line
      const st = parseStatLine(line)!;
      assert.equal(st.kind, 'prefill');
      assert.equal(st.rank, 'DP1 TP1');
      assert.equal(st.runningReqs, 0);
      assert.ok(st.inputThroughput! > 10000, String(st.inputThroughput));
      assert.equal(typeof st.extra['#inflight-req'], 'number');
      assert.equal(typeof st.extra['#bootstrap-req'], 'number');
      // /v1/loads: running 0 there; /metrics: the inflight queue carries the load, under the rank's own tp_rank
      const loads = JSON.parse((await httpGet(port, '/v1/loads')).body);
      assert.deepEqual(
        loads.loads.map((l: { num_running_reqs: number }) => l.num_running_reqs),
        [0, 0],
      );
      const metrics = (await httpGet(port, '/metrics')).body;
      assert.match(metrics, /^sglang:num_prefill_inflight_queue_reqs\{dp_rank="1",engine_type="unified",[^}]*,tp_rank="1"\} [1-9][\d.]*$/m);
    });

    it('s1: a scheduler crash header carries its rank tag, as the product reads it', async () => {
      const port = await freePort();
      const s = startServer(['--model-path', layout.modelPath, '--port', String(port), '--tp', '2'], { CUDA_VISIBLE_DEVICES: '0,1' });
      await ready(s);
      fault(port, { mode: 'crash' });
      assert.equal(await s.exit, 1);
      const header = linesOf(s).find((l) => l.includes('Scheduler hit an exception'))!;
      assert.match(header, /^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d TP0\] Scheduler hit an exception: Traceback \(most recent call last\):$/);
      const c = classifyLine(header);
      assert.deepEqual([c.kind, c.errorClass, lineHeader(header).rank], ['error', 'crash', 'TP0']);
    });

    it('s2: the hard watchdog prints the 2026 py-spy lines before its own line, then waits and exits', async () => {
      const port = await freePort();
      const s = startServer(['--model-path', layout.modelPath, '--port', String(port)], { CUDA_VISIBLE_DEVICES: '0' });
      await ready(s);
      fault(port, { mode: 'hang-hard', delayS: 0.5 });
      assert.equal(await s.exit, 1);
      const lines = linesOf(s);
      const at = (re: RegExp) => lines.findIndex((l) => re.test(l));
      const pyspy = at(/\] Pyspy failed \(py-spy dump --native --pid (\d+)\)\. Error: .+$/);
      const all = at(/\] All pyspy dump attempts failed for PID \d+\.$/);
      const watchdog = at(/\] Scheduler watchdog timeout \(self\.watchdog_timeout=300, self\.soft=False\)$/);
      const sigquit = at(/\] SIGQUIT received\. signum=None, frame=None\. It usually means one child failed\.$/);
      assert.ok(pyspy >= 0 && pyspy < all && all < watchdog && watchdog < sigquit, JSON.stringify([pyspy, all, watchdog, sigquit]));
      assert.equal(/--pid (\d+)/.exec(lines[pyspy])![1], /PID (\d+)/.exec(lines[all])![1], 'the same process');
      assert.doesNotMatch(s.out, /Pyspy failed to dump/, 'not the 2025 wording');
      // the product: the py-spy lines are hang diagnostics, not failures of their own; the watchdog line is the hang
      for (const i of [pyspy, all])
        assert.deepEqual([classifyLine(lines[i]).errorClass, classifyLine(lines[i]).failure?.fatal], ['hang', false]);
      assert.equal(classifyLine(lines[watchdog]).errorClass, 'hang');
    });

    it('s3: /metrics has histograms with the full label set and no _created, and the pool, retraction and prealloc gauges', async () => {
      const port = await freePort();
      const s = startServer(['--model-path', layout.modelPath, '--port', String(port), '--enable-metrics', '--served-model-name', 'm'], {
        CUDA_VISIBLE_DEVICES: '0',
      });
      await ready(s);
      fault(port, { mode: 'kv-pressure' });
      await waitFor('a retraction', () => s.out.includes('KV cache pool is full. Retract requests.') || undefined);
      const body = await waitFor('retractions in /metrics', async () => {
        const b = (await httpGet(port, '/metrics')).body;
        return /^sglang:num_retracted_requests_total\{[^}]*\} [1-9]/m.test(b) ? b : undefined;
      });
      const L = 'engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"';
      const esc = (x: string) => x.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      for (const h of ['time_to_first_token_seconds', 'e2e_request_latency_seconds']) {
        assert.match(body, new RegExp(`^sglang:${h}_sum\\{${esc(L)}\\} [\\d.e+]+$`, 'm'));
        assert.match(body, new RegExp(`^sglang:${h}_count\\{${esc(L)}\\} [\\d.e+]+$`, 'm'));
        assert.match(
          body,
          new RegExp(
            `^sglang:${h}_bucket\\{engine_type="unified",le="\\+Inf",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"\\} [\\d.e+]+$`,
            'm',
          ),
        );
      }
      assert.doesNotMatch(body, /_created/);
      for (const g of [
        'full_token_usage',
        'swa_token_usage',
        'mamba_usage',
        'pending_prealloc_token_usage',
        'num_prefill_prealloc_queue_reqs',
        'num_prefill_inflight_queue_reqs',
        'num_decode_prealloc_queue_reqs',
        'num_decode_transfer_queue_reqs',
      ])
        assert.match(body, new RegExp(`^# TYPE sglang:${g} gauge\\nsglang:${g}\\{${esc(L)}\\} [\\d.e+]+$`, 'm'), g);
      // num_retracted_reqs keeps the pid label (multiprocess_mode "all"), sorted in
      assert.match(
        body,
        /^sglang:num_retracted_reqs\{engine_type="unified",model_name="m",moe_ep_rank="0",pid="\d+",pp_rank="0",tp_rank="0"\} [\d.]+$/m,
      );
      assert.match(body, /^# TYPE sglang:num_retracted_requests_total counter$/m);
      // the product reads them: the KV usage is token_usage (not the prealloc gauge), the retractions counted
      const m = metricsSummary(parseMetrics(body));
      assert.equal(m.tokenUsage, 1);
      assert.ok(m.retractedTotal! > 0, JSON.stringify(m));
    });

    it('s4: /health answers after its ~1 s generation probe (at once without generation); server_info says "ready"', async () => {
      const port = await freePort();
      const s = startServer(['--model-path', layout.modelPath, '--port', String(port)], { CUDA_VISIBLE_DEVICES: '0' });
      await ready(s);
      const timed = async (p: number, u: string) => {
        const t0 = Date.now();
        const r = await httpGet(p, u);
        return { status: r.status, ms: Date.now() - t0 };
      };
      for (const u of ['/health', '/health_generate']) {
        const h = await timed(port, u);
        assert.equal(h.status, 200);
        assert.ok(h.ms >= 900 && h.ms < 3000, `${u} took ${h.ms} ms`);
      }
      assert.equal(JSON.parse((await httpGet(port, '/server_info')).body).status, 'ready');
      const port2 = await freePort();
      const fast = startServer(['--model-path', layout.modelPath, '--port', String(port2)], {
        CUDA_VISIBLE_DEVICES: '1',
        SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION: 'false',
      });
      await ready(fast);
      const h = await timed(port2, '/health');
      assert.equal(h.status, 200);
      assert.ok(h.ms < 700, `/health without generation took ${h.ms} ms`);
    });

    it('n2: a lost GPU on a 2026 driver prints the 4-digit PCI domain, and the product reads it', () => {
      const dir = mkdtempSync(path.join(tmp, 'n2-'));
      const node = JSON.parse(readFileSync(layout.nodeJson, 'utf8'));
      writeFileSync(path.join(dir, 'node.json'), JSON.stringify({ ...node, driverVersion: '610.43.02', cudaVersion: '13.3' }));
      writeFileSync(path.join(dir, 'faults.json'), JSON.stringify({ lostGpus: [2] }));
      const args = ['--query-gpu=index,name', '--format=csv,noheader'];
      const r = nvidiaSmi(layout, args, { SIM_NODE_JSON: path.join(dir, 'node.json') });
      const bus = node.gpus[2].busId.slice(4);
      assert.match(bus, /^[0-9A-F]{4}:[0-9A-F]{2}:00\.0$/);
      const lost = r.stdout.split('\n').find((l) => l.startsWith('Unable'))!;
      assert.equal(lost, `Unable to determine the device handle for GPU${bus}: Unknown Error`);
      const reported = r.stdout
        .split('\n')
        .filter((l) => /^\d+, /.test(l))
        .map((l) => Number(l.split(',')[0]));
      assert.deepEqual(parseLostGpus(r.stdout, reported), [{ index: 2, busId: bus, message: lost }]);
      // a 570 driver keeps the 8-digit domain
      writeFileSync(path.join(dir, 'node.json'), JSON.stringify(node));
      const old = nvidiaSmi(layout, args, { SIM_NODE_JSON: path.join(dir, 'node.json') });
      assert.match(old.stdout, new RegExp(`^Unable to determine the device handle for GPU${node.gpus[2].busId}: Unknown Error$`, 'm'));
    });
  });
});
