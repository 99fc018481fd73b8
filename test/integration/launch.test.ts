/**
 * Launch profiles over a REAL OpenSSH sshd with the simulated node (user gslaunch: its own home, wiped by
 * startSimNode; the process table is this machine's, so servers are always filtered by our ports).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { cmdCapture, cmdLaunch, cmdStop } from '../../src/cli/cmdLaunch';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { renderLaunchScript, validateProfile } from '../../src/core/launch/profile';
import { listNodes } from '../../src/core/ssh/nodes';
import { runOperation } from '../../src/core/remote/operation';
import type { SglangServer } from '../../src/core/sglang/serverArgv';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { probeOperation } from '../../src/core/node/probe';
import type { Transport } from '../../src/core/ssh/transport';
import { SimNode, startSimNode, testUser } from '../helpers/simnode';
import { freeTestPorts } from '../helpers/ports';
import { sleep, waitFor } from '../helpers/wait';

const USER = testUser('gslaunch');

function capture() {
  const o = { out: '', err: '' };
  return { o, io: { out: (s: string) => void (o.out += s), err: (s: string) => void (o.err += s), isTTY: false } };
}

/** argv without the `--port N` pair. */
const withoutPort = (args: string[]) => {
  const i = args.indexOf('--port');
  return i < 0 ? args : [...args.slice(0, i), ...args.slice(i + 2)];
};

describe('launch profiles over a real OpenSSH sshd', function () {
  this.timeout(180_000);
  let sim: SimNode;
  let pool: ConnectionPool;
  let t: Transport;
  let dir: string;
  let firstServers: SglangServer[] = [];
  let firstScript = '';

  const servers = async (ports: number[]) =>
    (await runOperation(t, probeOperation('simnode', { maxArtifacts: 1 }))).servers.filter((s) => ports.includes(s.port));
  const ourServerCount = () => Number(sim.sshd.ssh(`pgrep -u ${USER} -f 'sglang[.]launch_server' | wc -l`).stdout.trim());
  const profile = (basePort: number, extra: Record<string, unknown> = {}) => ({
    name: 'four',
    modelPath: sim.layout.modelPath,
    servedModelName: 'qwen3.6-27b',
    gpus: [0, 1, 2, 3],
    layout: 'per-gpu',
    basePort,
    host: '127.0.0.1',
    memFractionStatic: 0.88,
    contextLength: 32768,
    reasoningParser: 'qwen3',
    trustRemoteCode: true,
    speculative: { algorithm: 'NEXTN', numSteps: 3, eagleTopk: 1, numDraftTokens: 4 },
    enableMetrics: true,
    venv: '~/venv',
    logDir: '~/launch-logs',
    ...extra,
  });
  const writeProfile = (name: string, p: unknown) => {
    const f = path.join(dir, `${name}.json`);
    writeFileSync(f, JSON.stringify(p, null, 2));
    return f;
  };
  const freeBlock = (n: number) => freeTestPorts(n);

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: USER, startServers: false, gpuCount: 7, decodePeriodS: 0.5 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-launch-it-'));
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes.find((n) => n.name === 'simnode')!;
    t = pool.get(node);
  });
  after(async () => {
    pool?.dispose();
    // every process this suite started runs as USER: stop them all, SIGKILL what is left after 10 s
    spawnSync('pkill', ['-u', USER]);
    const gone = () => spawnSync('pgrep', ['-u', USER, '-f', 'sglang[.]launch_server']).status === 1;
    await waitFor('the servers to exit', gone, 10_000).catch(() => spawnSync('pkill', ['-KILL', '-u', USER]));
    await sim?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('dry run prints the exact script and starts nothing', async () => {
    const base = await freeBlock(4);
    const p = profile(base);
    const file = writeProfile('dry', p);
    const { o, io } = capture();
    const code = await cmdLaunch(t, 'simnode', { profileFile: file, dryRun: true, json: false, override: false }, io);
    assert.equal(code, 0, o.err);
    assert.equal(o.out, renderLaunchScript(validateProfile(p).profile!, [0, 1, 2, 3]).script);
    assert.match(o.out, /^#!\/bin\/sh\n/);
    assert.match(o.err, /Dry run: nothing was started/);
    assert.equal(ourServerCount(), 0);
    assert.equal(sim.sshd.ssh('ls ~/.gpu-sessions/launch 2>/dev/null | wc -l').stdout.trim(), '0', 'no script uploaded');
  });

  it('a 4-instance per-GPU profile comes up and every instance is detected ready', async () => {
    const base = await freeBlock(4);
    const file = writeProfile('four', profile(base));
    const { o, io } = capture();
    const started = Date.now();
    const code = await cmdLaunch(t, 'simnode', { profileFile: file, dryRun: false, json: true, override: false, timeoutS: 60 }, io);
    assert.equal(code, 0, o.out + o.err);
    const r = JSON.parse(o.out);
    assert.equal(r.outcome, 'ready');
    assert.equal(r.instances.length, 4);
    for (const [k, i] of r.instances.entries()) {
      assert.equal(i.port, base + k);
      assert.deepEqual(i.gpus, [k]);
      assert.equal(i.ready, true);
      assert.equal(i.readyVia, 'log');
      assert.ok(i.pid > 0);
    }
    assert.ok(Date.now() - started < 60_000);
    assert.equal(r.previousScript, null);
    assert.match(r.scriptPath, new RegExp(`^${sim.home}/\\.gpu-sessions/launch/\\d{8}T\\d{6}Z-four\\.sh$`));
    assert.equal(readFileSync(r.scriptPath, 'utf8'), r.script, 'the script is kept on the node');
    assert.equal(readFileSync(path.join(sim.home, '.gpu-sessions/launch/last.sh'), 'utf8'), r.script, 'last.sh is the launched script');
    firstScript = r.script;

    const ports = [0, 1, 2, 3].map((k) => base + k);
    firstServers = await servers(ports);
    assert.equal(firstServers.length, 4);
    for (const [k, s] of firstServers.entries()) {
      assert.equal(s.port, base + k);
      assert.equal(s.pid, r.instances[k].pid);
      assert.deepEqual(s.gpus, [k]);
      assert.equal(s.logFile, path.join(sim.home, 'launch-logs', `sglang_gpu${k}.log`));
      assert.deepEqual(s.args, r.instances[k].argv);
      assert.equal(s.speculativeAlgorithm, 'NEXTN');
    }
  });

  it('capture then launch reproduces the same argv', async () => {
    assert.equal(firstServers.length, 4, 'needs the servers of the previous test');
    const out = path.join(dir, 'captured', 'simnode.json');
    const c = capture();
    assert.equal(await cmdCapture(t, 'simnode', { out }, c.io), 0, c.o.err);
    assert.match(c.o.out, /Captured 4 servers of simnode/);
    const captured = validateProfile(JSON.parse(readFileSync(out, 'utf8')));
    assert.deepEqual(captured.errors, []);
    const p = captured.profile!;
    assert.equal(p.name, 'simnode');
    assert.equal(p.layout, 'per-gpu');
    assert.deepEqual(p.gpus, [0, 1, 2, 3]);
    assert.equal(p.basePort, firstServers[0].port);
    assert.equal(p.venv, path.join(sim.home, 'venv'));
    assert.equal(p.workDir, sim.home);
    assert.equal(p.logDir, path.join(sim.home, 'launch-logs'));

    // Launch the captured profile elsewhere (same GPUs: they are busy, so override).
    const base = await freeBlock(4);
    const file = writeProfile('recaptured', { ...JSON.parse(readFileSync(out, 'utf8')), basePort: base });
    const refused = capture();
    assert.equal(
      await cmdLaunch(t, 'simnode', { profileFile: file, dryRun: false, json: true, override: false, timeoutS: 60 }, refused.io),
      6,
    );
    assert.ok(JSON.parse(refused.o.out).preflight.refusals.some((x: { message: string }) => /GPU 0 is in use/.test(x.message)));
    const { o, io } = capture();
    assert.equal(
      await cmdLaunch(t, 'simnode', { profileFile: file, dryRun: false, json: true, override: true, timeoutS: 60 }, io),
      0,
      o.out + o.err,
    );
    const r = JSON.parse(o.out);
    assert.equal(r.previousScript, firstScript, 'the previous last.sh comes back for the diff');
    const again = await servers([0, 1, 2, 3].map((k) => base + k));
    assert.equal(again.length, 4);
    for (const [k, s] of again.entries()) {
      assert.deepEqual(withoutPort(s.args), withoutPort(firstServers[k].args));
      assert.equal(s.args[s.args.indexOf('--port') + 1], String(base + k));
      assert.deepEqual(s.gpus, firstServers[k].gpus);
    }
  });

  it('an instance with a bad flag fails and is reported with its error', async () => {
    const base = await freeBlock(1);
    const file = writeProfile('bad', profile(base, { name: 'bad', gpus: [4], extraArgs: ['--bogus-flag'] }));
    const { o, io } = capture();
    const code = await cmdLaunch(t, 'simnode', { profileFile: file, dryRun: false, json: false, override: false, timeoutS: 60 }, io);
    assert.equal(code, 7, o.out + o.err);
    assert.match(
      o.out,
      new RegExp(`port ${base}  GPU 4  pid \\d+  FAILED: exited before it was ready: .*unrecognized arguments: --bogus-flag`),
    );
    // the log's last lines: argparse's usage (its head is out of sight, as with a real server's hundreds of flags)
    // and its error line
    assert.match(o.out, /^ {4}\| {2,}\[--[a-z-]+/m);
    assert.match(o.out, /^ {4}\| launch_server\.py: error: unrecognized arguments: --bogus-flag$/m);
    assert.match(o.out, /0\/1 ready/);
  });

  it('an instance still starting at the timeout is reported, left running, and can be stopped', async () => {
    const base = await freeBlock(1);
    const file = writeProfile('slow', profile(base, { name: 'slow', gpus: [5], env: { SGLANG_SIM_STARTUP_S: '120' } }));
    const { o, io } = capture();
    const started = Date.now();
    const code = await cmdLaunch(t, 'simnode', { profileFile: file, dryRun: false, json: true, override: false, timeoutS: 3 }, io);
    assert.equal(code, 7, o.out + o.err);
    assert.ok(Date.now() - started < 20_000);
    const inst = JSON.parse(o.out).instances[0];
    assert.equal(inst.state, 'timeout');
    assert.match(inst.error, /^not ready after 3 s \(still starting; process \d+ left running\)/);
    assert.ok(
      inst.lastLines.some((l: string) => /server_args=ServerArgs\(/.test(l)),
      'its log so far',
    );
    assert.equal((await servers([base])).length, 1, 'left running');
    const q = capture();
    assert.equal(await cmdStop(t, 'simnode', { port: base, drain: false, json: false }, q.io), 0, q.o.out + q.o.err);
    assert.equal((await servers([base])).length, 0);
  });

  it('a port already in use is refused in preflight', async () => {
    const base = await freeBlock(2);
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(base + 1, '127.0.0.1', resolve));
    try {
      const file = writeProfile('busyport', profile(base, { name: 'busyport', gpus: [5, 6] }));
      const before = ourServerCount();
      const { o, io } = capture();
      const code = await cmdLaunch(t, 'simnode', { profileFile: file, dryRun: false, json: false, override: false }, io);
      assert.equal(code, 6, o.out + o.err);
      assert.match(
        o.err,
        new RegExp(`refused: Port ${base + 1} \\(GPU 6\\) is already in use on simnode: something listens on 127\\.0\\.0\\.1:${base + 1}`),
      );
      assert.match(o.err, /nothing was started/);
      assert.equal(ourServerCount(), before);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  it('stop with drain waits for the simulated load to finish, then the server is gone', async () => {
    const target = firstServers[0];
    assert.ok(target, 'needs the servers of the first launch');
    sim.sshd.ssh('rm -f ~/.sim/pause_load');
    const { o, io } = capture();
    const started = Date.now();
    const stopping = cmdStop(t, 'simnode', { port: target.port, drain: true, json: true }, io);
    await sleep(2500);
    const paused = Date.now();
    assert.equal(sim.sshd.ssh('touch ~/.sim/pause_load').status, 0);
    const code = await stopping;
    const ended = Date.now();
    sim.sshd.ssh('rm -f ~/.sim/pause_load');
    assert.equal(code, 0, o.out + o.err);
    const r = JSON.parse(o.out);
    assert.equal(r.stopped, true);
    assert.equal(r.signal, 'SIGTERM');
    assert.equal(r.group, true);
    assert.equal(r.pid, target.pid);
    assert.equal(r.drain.source, 'metrics');
    assert.equal(r.drain.drained, true);
    assert.ok(
      r.drain.waitedMs >= paused - started - 200,
      `drain waited ${r.drain.waitedMs} ms, the load was paused after ${paused - started} ms`,
    );
    assert.ok(ended - started >= r.drain.waitedMs);
    assert.ok(ended > paused + 1000, 'the load drains over several decode rounds after the pause');
    await waitFor('the server to be gone', async () => (await servers([target.port])).length === 0, 10_000);
    // gone, or a zombie waiting for an init that does not reap (this test machine's PID 1)
    assert.match(sim.sshd.ssh(`sed 's/.*) //' /proc/${target.pid}/stat 2>/dev/null | cut -c1`).stdout.trim(), /^(Z?)$/);

    // without --enable-metrics the drain reads /get_load
    const base = await freeBlock(1);
    const file = writeProfile('nometrics', profile(base, { name: 'nometrics', gpus: [6], enableMetrics: false }));
    const l = capture();
    assert.equal(
      await cmdLaunch(t, 'simnode', { profileFile: file, dryRun: false, json: true, override: false, timeoutS: 60 }, l.io),
      0,
      l.o.out + l.o.err,
    );
    const d = capture();
    const stopping2 = cmdStop(t, 'simnode', { port: base, drain: true, json: true }, d.io);
    await sleep(1000);
    sim.sshd.ssh(`touch ~/.sim/pause_load_${base}`);
    assert.equal(await stopping2, 0, d.o.out + d.o.err);
    const r2 = JSON.parse(d.o.out);
    assert.equal(r2.drain.source, 'get_load');
    assert.equal(r2.drain.drained, true);
    assert.ok(r2.drain.waitedMs >= 1000);

    // without drain: SIGTERM right away
    const second = firstServers[1];
    const q = capture();
    const t0 = Date.now();
    assert.equal(await cmdStop(t, 'simnode', { port: second.port, drain: false, json: false }, q.io), 0, q.o.out + q.o.err);
    assert.match(q.o.out, new RegExp(`Stopped the server on port ${second.port} \\(pid ${second.pid}, its process group\\) with SIGTERM`));
    assert.ok(Date.now() - t0 < 15_000);
    // nothing on a free port
    const none = capture();
    assert.equal(await cmdStop(t, 'simnode', { port: second.port, drain: false, json: false }, none.io), 1);
    assert.match(none.o.out, new RegExp(`No SGLang server listens on port ${second.port}`));
  });
});
