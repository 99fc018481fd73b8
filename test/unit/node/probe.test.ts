import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  buildProbeScript,
  classifyArtifact,
  parseArtifacts,
  parseProbeOutput,
  probeOperation,
  remoteRootExpr,
  scopeServers,
  splitSections,
} from '../../../src/core/node/probe';

describe('probe', () => {
  it('classifies artifacts by name', () => {
    assert.equal(classifyArtifact('/root/launch_tuned.sh'), 'launch-script');
    assert.equal(classifyArtifact('/root/setup_env.sh'), 'script');
    assert.equal(classifyArtifact('/root/logs/sglang_gpu0.log'), 'log');
    assert.equal(classifyArtifact('/root/nohup.out'), 'log');
    assert.equal(classifyArtifact('/root/completions/progress.json'), 'progress');
    assert.equal(classifyArtifact('/root/completions/.done_indices'), 'progress');
    assert.equal(classifyArtifact('/m/config.json'), 'config');
    assert.equal(classifyArtifact('/m/generation_config.json'), 'config');
    assert.equal(classifyArtifact('/c/x.yaml'), 'config');
    assert.equal(classifyArtifact('/p/fix.patch'), 'patch');
    assert.equal(classifyArtifact('/p/fix.diff'), 'patch');
    assert.equal(classifyArtifact('/r/generate_completions.py'), 'python');
    assert.equal(classifyArtifact('/r/tokenizer.json'), null);
  });

  it("a simulated node's scope keeps only the servers running (cwd) or logging under its folder", () => {
    const servers = [
      { port: 1, cwd: '/tmp/demo/home', logFile: '/tmp/demo/home/logs/a.log' },
      { port: 2, cwd: '/', logFile: '/tmp/demo/home/logs/b.log' },
      { port: 3, cwd: '/tmp/demo/home2', logFile: '/tmp/other/c.log' },
      { port: 4, cwd: null, logFile: null },
    ];
    assert.deepEqual(
      scopeServers(servers, '/tmp/demo/home').map((s) => s.port),
      [1, 2],
    );
    assert.deepEqual(
      scopeServers(servers, '/tmp/demo/home/').map((s) => s.port),
      [1, 2],
    );
    // No scope (every real node), or a value that is not an absolute path: everything is listed.
    assert.equal(scopeServers(servers, '').length, 4);
    assert.equal(scopeServers(servers, 'relative').length, 4);
  });

  it('quotes roots; ~ expands to the remote home only', () => {
    assert.equal(remoteRootExpr('~'), '"$HOME"');
    assert.equal(remoteRootExpr('~/work dir'), `"$HOME"/'work dir'`);
    assert.equal(remoteRootExpr("/data/it's $(rm -rf x)"), `'/data/it'\\''s $(rm -rf x)'`);
  });

  it('section markers cannot be forged by file names (nonce)', () => {
    const s = splitSections('\n@@N1:a@@\nhello\n@@N2:b@@\nnot a section\n@@N1:end@@\n', 'N1');
    assert.equal(s.get('a'), 'hello\n@@N2:b@@\nnot a section');
    assert.equal(s.has('b'), false);
  });

  it('parses artifact records including hostile names, and bounds the count', () => {
    const recs =
      [
        'F\t10\t1700000000.5\t/h/a b.log',
        'F\t5\t1700000000\t/h/new\nline.sh',
        'G\t0\t0\t/h/repo',
        'E\t0\t0\t/missing',
        'F\t1\t1\t/h/x.txt',
      ].join('\0') + '\0';
    const r = parseArtifacts(recs, 100);
    assert.deepEqual(r.missingRoots, ['/missing']);
    assert.deepEqual(
      r.artifacts.map((a) => [a.path, a.kind, a.size]),
      [
        ['/h/a b.log', 'log', 10],
        ['/h/new\nline.sh', 'script', 5],
        ['/h/repo', 'git-repo', 0],
      ],
    );
    assert.equal(r.artifacts[0].mtime, new Date(1700000000500).toISOString());
    const many = Array.from({ length: 50 }, (_, i) => `F\t1\t1\t/h/f${i}.log`).join('\0');
    const b = parseArtifacts(many, 10);
    assert.equal(b.artifacts.length, 10);
    assert.equal(b.truncated, true);
  });

  it('runs for real under /bin/sh on this machine and finds planted artifacts, not symlinked or pruned ones', function () {
    this.timeout(20000);
    const home = mkdtempSync(path.join(os.tmpdir(), 'gs-probe-'));
    try {
      mkdirSync(path.join(home, 'logs'));
      mkdirSync(path.join(home, 'venv', 'lib'), { recursive: true });
      mkdirSync(path.join(home, 'repo', '.git'), { recursive: true });
      writeFileSync(path.join(home, 'logs', 'sglang_gpu0.log'), 'x\n');
      writeFileSync(path.join(home, "it's $(touch pwned).log"), 'x');
      writeFileSync(path.join(home, 'venv', 'lib', 'activate.sh'), 'x');
      writeFileSync(path.join(home, 'launch_all.sh'), '#!/bin/sh\n');
      symlinkSync('/etc', path.join(home, 'etc-link'));
      const op = probeOperation('local', { roots: [home], maxDepth: 4 });
      const r = spawnSync('/bin/sh', ['-c', op.command], { input: op.stdin, env: { ...process.env, PATH: '/usr/bin:/bin' } });
      const res = op.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false });
      const paths = res.artifacts.map((a) => path.relative(home, a.path)).sort();
      assert.deepEqual(
        paths,
        ['', "it's $(touch pwned).log", 'launch_all.sh', 'logs/sglang_gpu0.log', 'repo'].filter((p) => p !== ''),
      );
      assert.equal(res.artifacts.find((a) => a.path.endsWith('repo'))?.kind, 'git-repo');
      assert.equal(spawnSync('test', ['-e', path.join(home, 'pwned')]).status, 1, 'no command injected');
      assert.ok(res.hostname);
      assert.ok(res.memTotalKiB && res.memTotalKiB > 0);
      // No nvidia-smi on PATH: a state, not an error.
      assert.equal(res.gpuState, 'no-nvidia-smi');
      assert.deepEqual(res.gpus, []);
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it("with no roots given, scans the home, provider volumes of the user and SGLang servers' working directories (once each)", async function () {
    this.timeout(20000);
    const base = mkdtempSync(path.join(os.tmpdir(), 'gs-probe-ev-'));
    const home = path.join(base, 'home');
    const vol = path.join(base, 'workspace');
    const work = path.join(base, 'job');
    const nested = path.join(vol, 'run1');
    for (const d of [home, vol, work, nested]) mkdirSync(d, { recursive: true });
    writeFileSync(path.join(home, 'notes.log'), 'x\n');
    writeFileSync(path.join(vol, 'progress.json'), '{}\n');
    writeFileSync(path.join(work, 'launch_tuned.sh'), '#!/bin/sh\n');
    const argv = ['-c', 'import time; time.sleep(30)', '-m', 'sglang.launch_server', '--port', '39124'];
    const servers = [spawn('python3', argv, { cwd: work, stdio: 'ignore' }), spawn('python3', argv, { cwd: nested, stdio: 'ignore' })];
    try {
      await new Promise((r) => setTimeout(r, 300));
      const op = probeOperation('local', { volumes: [vol, path.join(base, 'missing-volume')], maxDepth: 4 });
      const r = spawnSync('/bin/sh', ['-c', op.command], { input: op.stdin, env: { ...process.env, HOME: home, PATH: '/usr/bin:/bin' } });
      const res = op.parse({ stdout: r.stdout, stderr: r.stderr, code: r.status, truncated: false });
      const mine = res.roots.filter((x) => x.startsWith(base));
      assert.deepEqual(mine, [home, vol, work], 'the home, the volume, the outside working directory; the nested one is covered');
      const found = res.artifacts.map((a) => a.path);
      for (const f of [path.join(home, 'notes.log'), path.join(vol, 'progress.json'), path.join(work, 'launch_tuned.sh')])
        assert.ok(found.includes(f), `${f} in ${JSON.stringify(found)}`);
      // explicit roots replace the evidence
      const op2 = probeOperation('local', { roots: [home], volumes: [vol] });
      const r2 = spawnSync('/bin/sh', ['-c', op2.command], {
        input: op2.stdin,
        env: { ...process.env, HOME: home, PATH: '/usr/bin:/bin' },
      });
      assert.deepEqual(op2.parse({ stdout: r2.stdout, stderr: r2.stderr, code: r2.status, truncated: false }).roots, [home]);
    } finally {
      for (const s of servers) s.kill('SIGKILL');
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('every option combination gives a script /bin/sh accepts (sh -n)', () => {
    const combos = [
      {},
      { artifacts: false },
      { roots: ['/x', '~/y'] },
      { volumes: [] },
      { artifacts: false, progress: { progressPath: '/p.json', donePath: null } },
    ];
    for (const o of combos) {
      const r = spawnSync('/bin/sh', ['-n'], { input: probeOperation('n', o).command });
      assert.equal(r.status, 0, `${JSON.stringify(o)}: ${r.stderr}`);
    }
  });

  it('a truncated probe output is reported, not half-parsed', () => {
    const op = probeOperation('n');
    assert.throws(
      () =>
        op.parse({ stdout: Buffer.from('@@x:home@@\n/root'), stderr: Buffer.from('bash: line 3: killed'), code: 137, truncated: false }),
      /did not complete on n \(exit 137: bash: line 3: killed\)/,
    );
  });

  it('parses a full synthetic output', () => {
    const N = 'GSabc';
    const sec = (n: string, body: string) => `\n@@${N}:${n}@@\n${body}`;
    const out =
      sec('home', '/root') +
      sec('hostname', 'b200-node\n') +
      sec('os', 'PRETTY_NAME="Ubuntu 24.04.2 LTS"\nNAME="Ubuntu"\n') +
      sec('kernel', 'Linux 6.8.0-60-generic x86_64\n') +
      sec('uptime', '63012.55 1000.0\n') +
      sec('cpu', 'model name\t: Intel(R) Xeon(R) Platinum 8570\n224\n') +
      sec('mem', 'MemTotal:       2113500000 kB\nMemAvailable:   1000000000 kB\n') +
      sec(
        'disks',
        'Filesystem     1024-blocks      Used Available Capacity Mounted on\noverlay 100 50 50 50% /\n/dev/nvme0n1p1 1000000 500000 500000 50% /data\ntmpfs 923000000 900000000 23000000 98% /dev/shm\n',
      ) +
      sec(
        'ps',
        '  100     1 python3 -m sglang.launch_server --model-path /dev/shm/Qwen3.6-27B --port 30000 --speculative-algorithm EAGLE --dp 2 --tp=2\n  101   100 sglang::scheduler_DP0_TP0\n',
      ) +
      sec('proc', '') +
      sec('artifacts', 'F\t100\t1700000000\t/root/launch_all.sh\0') +
      sec('gpus', '0, NVIDIA B200, GPU-0, 183359, 160000, 98, 60, 900.00\n1, NVIDIA B200, GPU-1, 183359, 160000, 97, 59, [N/A]\n') +
      sec('gpusrc', '0\n') +
      sec(
        'banner',
        '| NVIDIA-SMI 580.65.06   Driver Version: 580.65.06   CUDA Version: 13.0 |\n| Processes: |\n|    1   N/A  N/A   101   C   sglang::scheduler_DP0_TP0   160000MiB |\n',
      ) +
      sec('bannerrc', '0\n') +
      sec('apps', 'pid, process_name, used_gpu_memory [MiB]\n101, sglang::scheduler_DP0_TP0, 160000 MiB\n') +
      sec('end', '');
    const p = parseProbeOutput('b200', out, N);
    assert.equal(p.hostname, 'b200-node');
    assert.equal(p.os, 'Ubuntu 24.04.2 LTS');
    assert.equal(p.cpuCores, 224);
    assert.equal(p.uptimeS, 63013);
    assert.equal(p.driverVersion, '580.65.06');
    assert.equal(p.cudaVersion, '13.0');
    assert.equal(p.gpus.length, 2);
    assert.equal(p.gpus[1].powerW, null);
    // a container's overlay root is where the job writes: kept (like /dev/shm); other pseudo filesystems are not
    assert.deepEqual(
      p.disks.map((d) => d.mount),
      ['/', '/data', '/dev/shm'],
    );
    assert.equal(p.servers.length, 1);
    assert.equal(p.servers[0].dp, 2);
    assert.equal(p.servers[0].tp, 2);
    assert.equal(p.servers[0].speculativeAlgorithm, 'EAGLE');
    assert.deepEqual(p.servers[0].gpus, [1]);
    assert.equal(p.gpuProcesses[0].gpuIndex, 1);
    assert.equal(p.artifacts[0].kind, 'launch-script');
  });

  it('bounds depth and count in the script', () => {
    const s = buildProbeScript('N', { maxDepth: 1000, maxArtifacts: 5 });
    assert.match(s, /-maxdepth 32 /);
    assert.match(s, /\nARTIFACT_MAX=6\n/);
    assert.match(s, /\| head -z -n "\$ARTIFACT_MAX"/);
  });
});
