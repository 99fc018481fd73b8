/**
 * End the rental when the work is safe (issue 46) over a REAL OpenSSH sshd: the simulated node plays a RunPod pod
 * (RUNPOD_POD_ID and a pod-scoped key in its environment, the runpodctl stand-in on PATH; once a stop ends the
 * container, the harness stops its sshd as the provider would). Detection of the pod and of no provider; refusals
 * (no verdict, a stale one, unique weights) call the provider never; --dry-run ends nothing; a stop that "succeeds"
 * while the pod stays RUNNING is exit 1; after a safe salvage, --stop runs exactly one provider call with the
 * node's own key, verifies (EXITED, SSH gone) and exits 0; the user's own key never reaches the node. The pod's
 * price (costPerHr) and the Vast instance's price and end (dph_total, end_date) in `probe --json` with their source,
 * and the flags over them; `watch` without a price flag counts spend at the pod's price.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { readSimPod, readSimVast, setSimPodKnobs } from '../../src/sim/provider';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';

const USER_KEY = 'rpa_USERSOWNKEY0123456789ABCDEF';

describe('end-rental over a real OpenSSH sshd (simulated RunPod pod)', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let work: string;
  const dest = () => path.join(work, 'salvage');
  const g = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];
  const calls = () => readSimPod(sim.home)!.calls;
  const endRental = (...extra: string[]) =>
    cli([...g(), 'end-rental', 'simnode', '--json', ...extra], { timeoutMs: 120_000, env: { RUNPOD_API_KEY: USER_KEY } });
  const salvage = async (to: string, expectCode = 0) => {
    const r = await cli([...g(), 'salvage', 'simnode', '--dest', to, '--yes', '--json', '--stop-servers'], { timeoutMs: 180_000 });
    assert.equal(r.code, expectCode, r.stderr + r.stdout.slice(0, 1500));
    return JSON.parse(r.stdout) as { verdict: string; reasons: string[] };
  };
  const onNode = (cmd: string) => {
    const r = sim.sshd.ssh(cmd);
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
  };

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    work = mkdtempSync(path.join(os.tmpdir(), 'gs-endrental-'));
    sim = await startSimNode({ user: 'gs46end', gpuCount: 2, provider: 'runpod' });
    setSimPodKnobs(sim.home, { dieAfterS: 1 });
    execFileSync('chown', ['-R', `${sim.user}:${sim.user}`, path.dirname(sim.layout.provider!.stateFile)]);
  });
  after(async () => {
    await sim?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('probe detects the RunPod pod (id, evidence, stop and terminate); without its variables, no provider', async () => {
    const r = await cli([...g(), 'probe', 'simnode', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const p = JSON.parse(r.stdout).provider;
    assert.equal(p.name, 'runpod');
    assert.equal(p.instanceId, sim.layout.provider!.instanceId);
    assert.deepEqual(p.actions, ['stop', 'terminate']);
    assert.ok(p.evidence.includes('RUNPOD_API_KEY (set) in the session environment'), p.evidence.join('; '));
    assert.ok(!r.stdout.includes(sim.layout.provider!.apiKey), 'the pod key is printed only as "set"');
    const envFile = path.join(sim.home, '.ssh', 'environment');
    const saved = readFileSync(envFile, 'utf8');
    writeFileSync(envFile, saved.replace(/^RUNPOD_.*\n/gm, ''));
    try {
      const none = JSON.parse((await cli([...g(), 'probe', 'simnode', '--json'])).stdout).provider;
      assert.equal(none.name, 'unknown');
      assert.deepEqual(none.actions, []);
    } finally {
      writeFileSync(envFile, saved);
    }
  });

  it("the pod's price from runpodctl in probe --json with its source (no end: a pod runs until stopped); flags override", async () => {
    const cost = readSimPod(sim.home)!.costPerHr;
    const j = JSON.parse((await cli([...g(), 'probe', 'simnode', '--json'])).stdout);
    assert.deepEqual(j.rental, { pricePerHour: cost, priceSource: 'runpodctl', deadline: null, deadlineSource: null });
    const told = j.provider.rental;
    assert.deepEqual(
      [told.pricePerHour, told.endsAt, told.state, told.source, told.instanceId],
      [cost, null, 'running', 'runpodctl', sim.layout.provider!.instanceId],
    );
    assert.match(told.readAt, /^\d{4}-\d\d-\d\dT/);
    const text = await cli([...g(), 'probe', 'simnode']);
    assert.equal(text.code, 0, text.stderr);
    assert.ok(text.stdout.includes(`  Rental: $${cost}/h from runpodctl\n`), text.stdout);
    const own = await cli([...g(), 'probe', 'simnode', '--json', '--price-per-hour', '3.49', '--deadline', '2026-12-31T18:00:00Z']);
    assert.equal(own.code, 0, own.stderr);
    const o = JSON.parse(own.stdout);
    assert.deepEqual(o.rental, {
      pricePerHour: 3.49,
      priceSource: '--price-per-hour',
      deadline: '2026-12-31T18:00:00.000Z',
      deadlineSource: '--deadline',
    });
    assert.equal(o.provider.rental.pricePerHour, cost, "the provider's own figure is still shown");
    assert.ok(!own.stdout.includes(sim.layout.provider!.apiKey), 'the pod key is never printed');
    assert.deepEqual(calls(), [], 'reading the price changes nothing');
  });

  it('watch without a price flag: spend at the pod price from runpodctl, with its source', async () => {
    const cost = readSimPod(sim.home)!.costPerHr;
    const CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');
    const child = spawn(process.execPath, [CLI, ...g(), 'watch', 'simnode', '--json', '--interval', '1', '--no-data'], {
      env: { ...process.env, GPU_SESSIONS_CACHE_DIR: path.join(work, 'cache') },
    });
    let out = '';
    child.stdout.on('data', (b) => (out += b));
    const closed = new Promise((r) => child.on('close', r));
    try {
      const sample = await waitFor(
        'a watch sample with spend',
        () =>
          out
            .split('\n')
            .filter((l) => l.startsWith('{'))
            .map((l) => JSON.parse(l) as { type: string; spend?: { perHour: number; priceSource?: string; total: number } })
            .find((l) => l.type === 'sample' && l.spend),
        60_000,
      );
      assert.deepEqual([sample.spend!.perHour, sample.spend!.priceSource], [cost, 'runpodctl']);
      assert.ok(sample.spend!.total > 0, 'spend since the node booted');
    } finally {
      child.kill('SIGINT');
      await closed;
    }
    assert.deepEqual(calls(), []);
  });

  it('refused without a salvage verdict: exit 5, no-safe-verdict, no provider call', async () => {
    const r = await endRental('--stop', '--yes', '--dest', dest());
    assert.equal(r.code, 5, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    assert.deepEqual(
      j.reasons.map((x: { code: string }) => x.code),
      ['no-safe-verdict'],
    );
    assert.match(j.reasons[0].message, /salvage it first/);
    assert.equal(j.verified, false);
    assert.deepEqual(calls(), []);
  });

  it('refused with a stale verdict (a file written after the salvage) and with unique weights', async () => {
    assert.equal((await salvage(dest())).verdict, 'safe');
    onNode('echo "a result written after the salvage" > ~/late_results.jsonl');
    const r = await endRental('--stop', '--yes', '--dest', dest());
    assert.equal(r.code, 5, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    assert.deepEqual(
      j.reasons.map((x: { code: string }) => x.code),
      ['verdict-stale'],
    );
    assert.match(j.reasons[0].message, /1 new file\(s\) under the salvaged folders \(.*late_results\.jsonl\)/);
    onNode('rm -f ~/late_results.jsonl');

    // a fine-tuned model a launch script serves, with no download metadata: its weights exist nowhere else
    const ft = path.join(sim.home, 'ft-model');
    onNode(
      `mkdir -p '${ft}' && head -c 2097152 /dev/zero > '${ft}/model.safetensors' && echo '{}' > '${ft}/config.json' && ` +
        `echo 'python3 -m sglang.launch_server --model-path ${ft} --port 1' > ~/launch_ft.sh`,
    );
    const w = path.join(work, 'weights');
    const rep = await salvage(w, 5);
    assert.deepEqual(rep.reasons, ['unique-weights']);
    const u = await endRental('--terminate', '--yes', '--dest', w);
    assert.equal(u.code, 5, u.stderr + u.stdout);
    const codes = JSON.parse(u.stdout).reasons.map((x: { code: string }) => x.code);
    assert.ok(codes.includes('no-safe-verdict') && codes.includes('unique-weights'), codes.join());
    onNode(`rm -rf '${ft}' ~/launch_ft.sh`);
    assert.deepEqual(calls(), []);
  });

  it('--dry-run ends nothing and prints exactly the command that would run', async () => {
    const r = await endRental('--stop', '--dry-run', '--dest', dest());
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    assert.equal(j.outcome, 'dry-run');
    assert.equal(j.command, `runpodctl pod stop ${sim.layout.provider!.instanceId}`);
    assert.equal(j.verified, false);
    const text = await cli([...g(), 'end-rental', 'simnode', '--stop', '--dry-run', '--dest', dest()]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(
      text.stdout,
      new RegExp(
        `^Dry run \\(nothing ended\\)\\. On simnode this would run:\\n {2}runpodctl pod stop ${sim.layout.provider!.instanceId}\\n`,
      ),
    );
    assert.deepEqual(calls(), []);
    assert.equal(readSimPod(sim.home)!.desiredStatus, 'RUNNING');
  });

  it('MCP end_rental: refused without confirm: true; dryRun says the command and ends nothing', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');
    const client = new Client({ name: 'gs-end-rental-test', version: '1.0.0' });
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [CLI, ...g(), 'mcp', '--mcp-dest', work], stderr: 'ignore' }),
    );
    type R = { isError?: boolean; structuredContent?: Record<string, unknown> };
    const call = async (a: Record<string, unknown>) =>
      (await client.callTool({ name: 'end_rental', arguments: { node: 'simnode', dest: dest(), ...a } }, undefined, {
        timeout: 60_000,
      })) as R;
    try {
      const refused = await call({ action: 'stop', confirm: false });
      assert.equal(refused.isError, true);
      assert.match(String(refused.structuredContent?.error), /confirm: true/);
      const dry = await call({ action: 'stop', dryRun: true, confirm: false });
      assert.ok(!dry.isError, JSON.stringify(dry));
      assert.equal(dry.structuredContent?.exitCode, 0);
      assert.equal(dry.structuredContent?.command, `runpodctl pod stop ${sim.layout.provider!.instanceId}`);
      const outside = await call({ action: 'stop', dest: '/etc', dryRun: true, confirm: false });
      assert.equal(outside.isError, true);
    } finally {
      await client.close();
    }
    assert.deepEqual(calls(), []);
  });

  it('at a terminal: the exact command is shown and a "no" ends nothing (exit 1, declined)', async () => {
    const { cmdEndRental } = await import('../../src/cli/cmdEndRental');
    const { makePool, nodeFor } = await import('../../src/cli/cliNode');
    const gl = {
      sshConfig: sim.sshd.sshConfigFile,
      knownHosts: sim.sshd.knownHostsFile,
      identity: [],
      acceptNew: false,
      json: false,
      verbose: false,
    };
    const node = nodeFor('simnode', gl);
    const pool = makePool(gl, { out: () => undefined, err: () => undefined, isTTY: false }, node);
    let out = '';
    let err = '';
    const asked: string[] = [];
    try {
      const code = await cmdEndRental(
        node,
        pool,
        () => makePool(gl, { out: () => undefined, err: () => undefined, isTTY: false }, node).get(node),
        { action: 'stop', dest: dest(), dryRun: false, yes: false, json: false, verifyTimeoutS: 5 },
        {
          out: (x) => (out += x),
          err: (x) => (err += x),
          isTTY: true,
          ask: async (q) => (asked.push(q), 'n'),
        },
      );
      assert.equal(code, 1, out + err);
    } finally {
      pool.dispose();
    }
    assert.deepEqual(asked, ['End the rental of simnode? [y/N] ']);
    assert.ok(err.includes(`  runpodctl pod stop ${sim.layout.provider!.instanceId}\n`), err);
    assert.match(out, /^Nothing ended\./);
    assert.deepEqual(calls(), []);
  });

  it('a stop that "succeeds" while the pod stays RUNNING is exit 1, never reported as ended', async () => {
    setSimPodKnobs(sim.home, { stopKeepsRunning: true });
    assert.equal((await salvage(dest())).verdict, 'safe');
    const r = await endRental('--stop', '--yes', '--dest', dest(), '--verify-timeout', '6');
    assert.equal(r.code, 1, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    assert.equal(j.outcome, 'not-verified');
    assert.equal(j.verified, false);
    assert.equal(j.endedAt, null);
    assert.ok(
      j.evidence.some((e: string) => /never reported the instance stopped or gone .*RUNNING/.test(e)),
      j.evidence.join('\n'),
    );
    assert.ok(j.evidence.includes('SSH still lets a new session in: the node is still up'));
    assert.deepEqual(
      calls().map((c) => [c.verb, c.key]),
      [['stop', 'pod']],
    );
  });

  it('after a safe salvage, --stop runs exactly one provider call with the pod key, verifies and exits 0', async () => {
    setSimPodKnobs(sim.home, { stopKeepsRunning: false });
    assert.equal((await salvage(dest())).verdict, 'safe');
    // the product's own price read runs runpodctl on the node, which writes ~/.runpod/config.toml as the real one
    // does on its first run: not a change of the work, so the verdict still holds
    rmSync(path.join(sim.home, '.runpod'), { recursive: true, force: true });
    assert.equal((await cli([...g(), 'probe', 'simnode', '--json'])).code, 0);
    assert.ok(existsSync(path.join(sim.home, '.runpod/config.toml')), 'the stand-in wrote its config as the real CLI does');
    const before = calls().length;
    const r = await endRental('--stop', '--yes', '--dest', dest(), '--verify-timeout', '60');
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    assert.deepEqual(
      [j.node, j.provider, j.action, j.instanceId, j.outcome, j.verified],
      ['simnode', 'runpod', 'stop', sim.layout.provider!.instanceId, 'ended', true],
    );
    assert.match(j.verdictAt, /^\d{4}-\d\d-\d\dT/);
    assert.match(j.endedAt, /^\d{4}-\d\d-\d\dT/);
    assert.ok(
      j.evidence.some((e: string) => /status right after the call: EXITED/.test(e)),
      j.evidence.join('\n'),
    );
    assert.ok(
      j.evidence.some((e: string) => /^SSH stopped answering/.test(e)),
      j.evidence.join('\n'),
    );
    const after = calls().slice(before);
    assert.deepEqual(
      after.map((c) => [c.verb, c.id, c.key]),
      [['stop', sim.layout.provider!.instanceId, 'pod']],
    );
    assert.equal(readSimPod(sim.home)!.desiredStatus, 'EXITED');
    // the user's own key never reached the node: not in any file of its home
    await waitFor('the container to end', () => readSimPod(sim.home)!.containerDead || null, 10_000);
    const grep = spawnSync('grep', ['-rl', USER_KEY, sim.home], { encoding: 'utf8' });
    assert.equal(grep.status, 1, grep.stdout);
  });
});

describe('end-rental --terminate over a real OpenSSH sshd (simulated Vast.ai instance)', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let work: string;
  const g = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    work = mkdtempSync(path.join(os.tmpdir(), 'gs-endrental-vast-'));
    sim = await startSimNode({ user: 'gs46vast', gpuCount: 1, provider: 'vast' });
    setSimPodKnobs(sim.home, { dieAfterS: 1 });
  });
  after(async () => {
    await sim?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('probe detects the Vast instance; after a safe salvage --terminate destroys it once (-y, the instance key), verified gone', async () => {
    const probed = JSON.parse((await cli([...g(), 'probe', 'simnode', '--json'])).stdout);
    const p = probed.provider;
    assert.deepEqual([p.name, p.instanceId, p.actions], ['vast', sim.layout.provider!.instanceId, ['stop', 'terminate']]);
    assert.ok(p.evidence.includes('vastai on PATH'), p.evidence.join('; '));
    // the instance's price (dph_total) and the contract's end (end_date) from vastai, with their source
    const v = readSimVast(sim.home)!;
    assert.deepEqual(probed.rental, {
      pricePerHour: v.dph_total,
      priceSource: 'vastai',
      deadline: new Date(v.end_date * 1000).toISOString(),
      deadlineSource: 'vastai',
    });
    const dest = path.join(work, 'salvage');
    const s = await cli([...g(), 'salvage', 'simnode', '--dest', dest, '--yes', '--json', '--stop-servers'], { timeoutMs: 180_000 });
    assert.equal(s.code, 0, s.stderr + s.stdout.slice(0, 1500));
    const r = await cli([...g(), 'end-rental', 'simnode', '--terminate', '--yes', '--json', '--dest', dest, '--verify-timeout', '60'], {
      timeoutMs: 120_000,
      env: { VAST_API_KEY: 'users-own-vast-key-0123456789abcdef' },
    });
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    assert.deepEqual([j.provider, j.action, j.outcome, j.verified], ['vast', 'terminate', 'ended', true]);
    assert.equal(j.command, `VAST_API_KEY="$CONTAINER_API_KEY" vastai destroy instance ${sim.layout.provider!.instanceId} -y`);
    assert.ok(
      j.evidence.some((e: string) => /status right after the call: gone \(terminated\)/.test(e)),
      j.evidence.join('\n'),
    );
    assert.deepEqual(
      readSimVast(sim.home)!.calls.map((c) => [c.verb, c.key]),
      [['delete', 'instance']],
    );
    assert.equal(spawnSync('grep', ['-rl', 'users-own-vast-key', sim.home]).status, 1, 'the user key never reached the node');
  });
});
