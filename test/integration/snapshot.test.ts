/**
 * The environment snapshot over a REAL OpenSSH sshd with the simulated 7× B200 node behind it, with
 * secrets planted in the servers' environment and on their command line: everything is captured, and no
 * planted secret reaches the snapshot or its markdown.
 */
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { checkHealth } from '../../src/core/sglang/endpoints';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { runOperation } from '../../src/core/remote/operation';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { probeOperation } from '../../src/core/node/probe';
import { REDACTED } from '../../src/core/util/redact';
import { EnvSnapshot, renderSnapshotMarkdown, snapshotOperation, takeSnapshot } from '../../src/core/salvage/snapshot/snapshot';
import { LocalTransport, SshTransport } from '../../src/core/ssh/transport';
import { freePort } from '../helpers/sshd';
import { SimNode, startSimNode, testUser } from '../helpers/simnode';
import { planted } from '../helpers/planted';

const SECRETS = {
  HF_TOKEN: planted('hf_', 'abcdefghijklmnopqrstuvwxyz0123456789'),
  AWS_ACCESS_KEY_ID: planted('AKIA', 'QWERTYUIOPASDFGH'),
  AWS_SECRET_ACCESS_KEY: planted('q8Zr+Xw3Kp9Lm2Nv5Bt', '7Yc1Hd4Gf6Js0Ae/Ui8Oo'),
  WANDB_API_KEY: '3f9a1c7e5b2d4f6a8c0e1b3d5f7a9c2e4b6d8f01',
  OPENAI_API_KEY: planted('sk-proj-', 'PlantedOpenAiKey0123456789abcdefXYZ'),
  PIP_PASSWORD: 'pipPassw0rd77',
};
/** On the servers' command line (`--api-key`), so it is in argv AND in /server_info's `api_key`. */
const API_KEY = 'plantedApiKey-7f3a9c2e41';

describe('environment snapshot over a real OpenSSH sshd', function () {
  this.timeout(180_000);
  let sim: SimNode;
  let pool: ConnectionPool;
  let t: SshTransport;
  let snap: EnvSnapshot;
  let md: string;
  let execs = 0;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({
      user: 'gssnap',
      genTokPerSec: 1800,
      beforeStart: (home) => {
        // Sourced by venv/bin/activate, which launch_all.sh sources: the servers inherit these.
        appendFileSync(
          path.join(home, '.sim', 'env.sh'),
          [
            `export HF_TOKEN=${SECRETS.HF_TOKEN}`,
            `export AWS_ACCESS_KEY_ID=${SECRETS.AWS_ACCESS_KEY_ID}`,
            `export AWS_SECRET_ACCESS_KEY='${SECRETS.AWS_SECRET_ACCESS_KEY}'`,
            `export WANDB_API_KEY=${SECRETS.WANDB_API_KEY}`,
            `export OPENAI_API_KEY=${SECRETS.OPENAI_API_KEY}`,
            `export PIP_INDEX_URL=https://builder:${SECRETS.PIP_PASSWORD}@pypi.example.com/simple`,
            'export KEYBOARD_LAYOUT=us',
            '',
          ].join('\n'),
        );
        const launch = path.join(home, 'launch_all.sh');
        const script = readFileSync(launch, 'utf8');
        assert.ok(script.includes('    --trust-remote-code \\\n'));
        writeFileSync(launch, script.replace('    --trust-remote-code \\\n', `    --trust-remote-code \\\n    --api-key ${API_KEY} \\\n`));
      },
    });
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes.find((n) => n.name === 'simnode')!;
    t = pool.get(node) as SshTransport;
    // The node's process table is this machine's: other suites' servers may be visible. Take ours.
    const probe = await runOperation(t, probeOperation('simnode'));
    const servers = probe.servers.filter((s) => sim.layout.ports.includes(s.port)).sort((a, b) => a.port - b.port);
    assert.equal(servers.length, 7);
    const orig = t.exec.bind(t);
    t.exec = (c, o) => (execs++, orig(c, o));
    snap = await takeSnapshot(
      t,
      'simnode',
      servers.map((s) => ({ pid: s.pid, port: s.port, host: s.host, enableMetrics: s.enableMetrics })),
    );
    md = renderSnapshotMarkdown(snap);
  });

  after(async () => {
    pool?.dispose();
    await sim?.stop();
  });

  it('takes the remote part in one exec', () => {
    assert.equal(execs, 1);
  });

  it('GPUs from nvidia-smi -q, driver/CUDA, topology', () => {
    assert.equal(snap.gpus.gpuState, 'ok');
    assert.equal(snap.gpus.devices.length, 7);
    for (const g of snap.gpus.devices) {
      assert.equal(g.name, 'NVIDIA B200');
      assert.equal(g.memoryTotalMiB, 183359);
      assert.match(g.uuid ?? '', /^GPU-/);
      assert.match(g.busId, /^00000000:[0-9A-F]{2}:00\.0$/);
    }
    assert.equal(snap.gpus.driverVersion, '570.133.20');
    assert.equal(snap.gpus.cudaVersion, '12.8');
    assert.match(snap.gpus.smiQ, /NVSMI LOG/);
    assert.match(snap.gpus.topology, /GPU0\s+X\s+NV18/);
    assert.match(snap.gpus.topology, /Legend/);
    assert.ok(!snap.gpus.topology.includes('\x1b'), 'no terminal colour codes');
  });

  it('host facts: hostname, OS, kernel, CPU, memory, disks', () => {
    assert.ok(snap.hostname);
    assert.ok(snap.kernel && /Linux/.test(snap.kernel));
    assert.ok((snap.cpu.cores ?? 0) >= 1);
    assert.ok((snap.memory.totalKiB ?? 0) > 0);
    assert.ok(snap.disks.length >= 1);
  });

  it("the servers' argv, environment, cwd and interpreter", () => {
    assert.equal(snap.servers.length, 7);
    for (const [i, s] of snap.servers.entries()) {
      assert.equal(s.port, sim.layout.ports[i]);
      assert.equal(s.alive, true);
      assert.deepEqual(s.argv.slice(0, 3), ['python3', '-m', 'sglang.launch_server']);
      assert.equal(s.argv[s.argv.indexOf('--port') + 1], String(sim.layout.ports[i]));
      assert.equal(s.argv[s.argv.indexOf('--api-key') + 1], REDACTED);
      assert.ok(s.argv.includes('--enable-metrics'));
      assert.equal(s.env.CUDA_VISIBLE_DEVICES, String(i));
      assert.equal(s.env.HF_TOKEN, REDACTED);
      assert.equal(s.env.AWS_SECRET_ACCESS_KEY, REDACTED);
      assert.equal(s.env.WANDB_API_KEY, REDACTED);
      assert.equal(s.env.KEYBOARD_LAYOUT, 'us');
      assert.equal(s.env.SGLANG_SIM_GEN_TPS, '1800');
      assert.equal(s.env.PIP_INDEX_URL, `https://builder:${REDACTED}@pypi.example.com/simple`);
      assert.equal(s.cwd, sim.home);
      assert.match(s.python ?? '', /python3/);
    }
  });

  it('Python and packages of the servers’ interpreter (their PYTHONPATH included)', () => {
    assert.match(snap.python.version ?? '', /^3\.\d+/);
    assert.ok(snap.python.executable);
    assert.equal(snap.keyPackages.sglang, '0.5.11');
    assert.ok('torch' in snap.keyPackages && 'sgl-kernel' in snap.keyPackages && 'flashinfer' in snap.keyPackages);
    assert.ok(snap.pipFreeze.length > 0, `pip freeze: ${snap.errors.join('; ')}`);
  });

  it('server info and metrics per port, through the SSH connection', () => {
    for (const port of sim.layout.ports) {
      const info = snap.serverInfo[String(port)] as Record<string, unknown>;
      assert.ok(info, `server info of ${port}: ${snap.errors.join('; ')}`);
      assert.equal(info.port, port);
      assert.match(String(info.model_path), /Qwen3\.6-27B$/);
      assert.equal(info.api_key, REDACTED);
      assert.match(snap.metrics[String(port)] ?? '', /sglang:gen_throughput/);
    }
  });

  it('SSH details: host, port, user, host-key fingerprint, never key material', () => {
    assert.equal(snap.ssh.host, '127.0.0.1');
    assert.equal(snap.ssh.port, sim.sshd.port);
    assert.equal(snap.ssh.user, testUser('gssnap'));
    assert.match(snap.ssh.hostKeyFingerprint ?? '', /^SHA256:/);
    assert.equal(snap.ssh.hostKeyType, 'ssh-ed25519');
    const json = JSON.stringify(snap);
    assert.ok(!/PRIVATE KEY/.test(json));
    const clientKey = readFileSync(sim.sshd.clientKey, 'utf8').split('\n').slice(1, 3).join('');
    assert.ok(!json.includes(clientKey) && !md.includes(clientKey));
  });

  it('NO planted secret appears anywhere in the snapshot or its markdown', () => {
    const json = JSON.stringify(snap);
    for (const [name, value] of Object.entries({ ...SECRETS, API_KEY })) {
      assert.ok(!json.includes(value), `${name} leaked into the snapshot JSON`);
      assert.ok(!md.includes(value), `${name} leaked into the markdown`);
    }
  });

  it('renders a readable environment.md', () => {
    assert.match(md, /^# Environment of simnode/);
    assert.match(md, /7× NVIDIA B200/);
    assert.match(md, /\| NVIDIA driver \| 570\.133\.20 \|/);
    assert.match(md, /```text\n[^`]*GPU0/);
    assert.match(md, /\| sglang \| 0\.5\.11 \|/);
    assert.match(md, /```sh\ncd [^\n]+\nCUDA_VISIBLE_DEVICES=0 python3 -m sglang\.launch_server \\\n {2}--model-path /);
    assert.match(md, /--api-key '<redacted>'/);
    assert.match(md, new RegExp(`### Port ${sim.layout.ports[0]} \\(pid \\d+\\)`));
    assert.match(md, /tok\/s at snapshot/);
    assert.match(md, /\| Host key \| ssh-ed25519 SHA256:/);
  });

  it('health over the SSH connection: a live server is healthy, a closed port is dead', async () => {
    const live = await checkHealth(t, '127.0.0.1', sim.layout.ports[0]);
    assert.equal(live.health, 'healthy', live.detail);
    const dead = await checkHealth(t, '0.0.0.0', await freePort(), 5000);
    assert.equal(dead.health, 'dead', dead.detail);
  });
});

// No root needed: the script on this machine with a bare PATH (no nvidia-smi, no python3, no timeout, no lscpu).
describe('environment snapshot on a bare node (missing tools are errors, never fatal)', function () {
  this.timeout(60_000);
  let dir: string;
  let child: ChildProcess;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-bare-'));
    for (const tool of [
      'sh',
      'mktemp',
      'mkdir',
      'head',
      'tr',
      'grep',
      'cut',
      'readlink',
      'hostname',
      'cat',
      'uname',
      'nproc',
      'df',
      'rm',
      'sleep',
    ]) {
      for (const d of ['/usr/bin', '/bin']) {
        try {
          symlinkSync(path.join(d, tool), path.join(dir, tool));
          break;
        } catch {
          /* try the next directory */
        }
      }
    }
    child = spawn('sleep', ['60'], {
      env: {
        PATH: '/usr/bin:/bin',
        HF_TOKEN: planted('hf_', 'zyxwvutsrqponmlkjihgfedcba9876543210'),
        GH_TOKEN: planted('ghp_', 'plantedplantedplantedplanted12345678'),
      },
      stdio: 'ignore',
    });
  });
  after(() => {
    child?.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });

  it('records what is missing and still returns a snapshot', async () => {
    const t = new LocalTransport({ PATH: dir, HOME: dir, LC_ALL: 'C' }, dir);
    const gone = 2_000_000_000;
    const core = await runOperation(t, snapshotOperation('bare', [child.pid!, gone]));
    assert.equal(core.gpus.gpuState, 'no-nvidia-smi');
    assert.equal(core.gpus.devices.length, 0);
    assert.equal(core.python.executable, null);
    assert.deepEqual(core.pipFreeze, []);
    assert.equal(core.keyPackages.sglang, null);
    assert.ok(
      core.errors.some((e) => /nvidia-smi/.test(e)),
      core.errors.join('\n'),
    );
    assert.ok(
      core.errors.some((e) => /No Python interpreter/.test(e)),
      core.errors.join('\n'),
    );
    assert.ok(
      core.errors.some((e) => new RegExp(`pid ${gone}: no such process`).test(e)),
      core.errors.join('\n'),
    );
    assert.ok(core.kernel && core.hostname);
    const [sleeper, missing] = core.servers;
    assert.equal(sleeper.alive, true);
    assert.deepEqual(sleeper.argv, ['sleep', '60']);
    assert.equal(sleeper.env.HF_TOKEN, REDACTED);
    assert.equal(sleeper.env.GH_TOKEN, REDACTED);
    assert.equal(sleeper.env.PATH, '/usr/bin:/bin');
    assert.equal(missing.alive, false);
    assert.deepEqual(missing.argv, []);
    const json = JSON.stringify(core);
    assert.ok(!json.includes('zyxwvutsrqponmlkjihgfedcba') && !json.includes('plantedplanted'));
  });
});
