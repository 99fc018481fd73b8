/**
 * Secrets and capture fidelity over a REAL OpenSSH sshd: a node running three different SGLang servers
 * (TP 2 + EAGLE with an API key and HF_TOKEN in its environment, DP 2 + NEXTN with --enable-metrics, a
 * small model on one GPU with --log-level warning) → capture → ONE profile with three groups → dry run
 * prints all three → stop → launch with the secrets from the environment reproduces every argv exactly
 * (key included) on the node. Every output is grepped for the planted secrets.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, readdirSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { validateProfile } from '../../src/core/launch/profile';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode } from '../helpers/simnode';
import { planted } from '../helpers/planted';
import { freeTestPorts } from '../helpers/ports';
import { waitFor } from '../helpers/wait';

const API_KEY = 'gs-test-api-key-4f1c9e2b7a';
const HF = planted('hf_', 'PlantedTokenValue0123456789abcdefXYZ');
const ENV_SECRET = 'planted-env-secret-a91b';

describe('secrets never leave in clear; capture reproduces three different servers', function () {
  this.timeout(240_000);
  let sim: SimNode;
  let dir: string;
  let ports: number[];
  const outputs: Array<[string, string]> = [];
  const run = async (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const r = await cli(['-v', '--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile, ...args], {
      timeoutMs: 150_000,
      env,
    });
    outputs.push([`${args.join(' ')} stdout`, r.stdout], [`${args.join(' ')} stderr`, r.stderr]);
    return r;
  };
  /** Exact argv (and environ) of our servers on the node, by port, read from /proc as root. */
  const procOf = (port: number): { argv: string[]; env: Record<string, string>; cwd: string } | null => {
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      let argv: string[];
      try {
        argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').slice(0, -1);
      } catch {
        continue;
      }
      if (!argv.includes('sglang.launch_server')) continue;
      const i = argv.indexOf('--port');
      if (i < 0 || argv[i + 1] !== String(port)) continue;
      const env = Object.fromEntries(
        readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .filter(Boolean)
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
      );
      return { argv, env, cwd: readlinkSync(`/proc/${pid}/cwd`) };
    }
    return null;
  };
  let original: Array<ReturnType<typeof procOf>> = [];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: 'gssecret', startServers: false, gpuCount: 5, decodePeriodS: 0.5 });
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-secrets-it-'));
    const base = await freeTestPorts(30);
    ports = [base, base + 10, base + 20];
    const m = sim.layout.modelPath;
    const start = (cvd: string, log: string, cwd: string, args: string, env = '') =>
      `(cd ${cwd} && CUDA_VISIBLE_DEVICES=${cvd} ${env} setsid nohup python3 -m sglang.launch_server ${args} > ${log} 2>&1 < /dev/null &)`;
    const script = [
      'mkdir -p ~/work ~/logs',
      'cp -r "$HOME/models/Qwen3.6-27B" ~/models/small-0.6B',
      start(
        '0,1',
        '~/logs/eagle_tp2.log',
        '~',
        `--model-path ${m} --served-model-name big --tp 2 --mem-frac 0.85 --speculative-algorithm EAGLE --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --reasoning-parser qwen3 --api-key ${API_KEY} --host 127.0.0.1 --port ${ports[0]}`,
        `HF_TOKEN=${HF} SGLANG_MY_SECRET=${ENV_SECRET}`,
      ),
      start(
        '2,3',
        '~/work/nextn.log',
        '~/work',
        `--model-path ${m} --dp-size 2 --speculative-algorithm=NEXTN --enable-metrics --port ${ports[1]} --decode-log-interval 20`,
      ),
      start('4', '~/logs/small.log', '~', `--model-path ~/models/small-0.6B --port ${ports[2]} --log-level warning`),
    ].join('\n');
    const f = path.join(sim.home, 'start3.sh');
    writeFileSync(f, script + '\n');
    chmodSync(f, 0o755);
    const pw = spawnSync('id', ['-u', sim.user], { encoding: 'utf8' });
    chownSync(f, Number(pw.stdout.trim()), Number(pw.stdout.trim()));
    const r = sim.sshd.ssh('sh ~/start3.sh');
    assert.equal(r.status, 0, r.stderr);
    await waitFor('three servers', () => ports.every((p) => procOf(p) !== null), 20_000);
    await waitFor(
      'the EAGLE server to be ready',
      () => readFileSync(path.join(sim.home, 'logs/eagle_tp2.log'), 'utf8').includes('ready to roll'),
      30_000,
    );
    original = ports.map(procOf);
  });
  after(async () => {
    spawnSync('pkill', ['-u', sim?.user ?? 'nobody-here', '-f', 'sglang.launch_server']);
    await sim?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('probe --json shows hasApiKey and no secret', async () => {
    const r = await run(['probe', 'simnode', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const p = JSON.parse(r.stdout);
    const eagle = p.servers.find((s: { port: number }) => s.port === ports[0]);
    assert.equal(eagle.hasApiKey, true);
    assert.equal(eagle.args[eagle.args.indexOf('--api-key') + 1], '<redacted>');
    assert.equal(eagle.tp, 2);
    const small = p.servers.find((s: { port: number }) => s.port === ports[2]);
    assert.equal(small.hasApiKey, false);
    assert.equal(small.statLines, false, '--log-level warning: SGLang prints no stat lines');
    assert.equal(small.logLevel, 'warning');
    const human = await run(['probe', 'simnode']);
    assert.equal(human.code, 0, human.stderr);
  });

  let profileFile = '';
  it('capture writes ONE profile with three groups, secrets as references, logs and directories kept', async () => {
    profileFile = path.join(dir, 'three.json');
    const r = await run(['capture', 'simnode', '--out', profileFile]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /Captured 3 servers .* as 3 server groups/);
    assert.match(r.stdout, new RegExp(`SGLANG_API_KEY \\(--api-key, port ${ports[0]}\\)`));
    assert.match(r.stdout, /HF_TOKEN \(env HF_TOKEN, port/);
    assert.match(r.stdout, /export SGLANG_API_KEY=… \(or --secret SGLANG_API_KEY=@FILE\)/);
    const text = readFileSync(profileFile, 'utf8');
    outputs.push(['profile', text]);
    const v = validateProfile(JSON.parse(text));
    assert.deepEqual(v.errors, []);
    const g = v.groups!;
    assert.equal(g.length, 3);
    assert.deepEqual(g[0].apiKey, { env: 'SGLANG_API_KEY' });
    assert.deepEqual(g[0].env.HF_TOKEN, { env: 'HF_TOKEN' });
    assert.equal(g[0].tp, 2);
    assert.equal(g[0].speculative?.algorithm, 'EAGLE');
    assert.equal(g[0].reasoningParser, 'qwen3');
    assert.equal(g[0].logFile, path.join(sim.home, 'logs/eagle_tp2.log'));
    assert.equal(g[1].dp, 2);
    assert.equal(g[1].speculative?.algorithm, 'NEXTN');
    assert.equal(g[1].enableMetrics, true);
    assert.equal(g[1].workDir, path.join(sim.home, 'work'));
    assert.equal(g[1].logFile, path.join(sim.home, 'work/nextn.log'));
    assert.deepEqual(g[2].gpus, [4]);
    assert.equal(g[2].modelPath, path.join(sim.home, 'models/small-0.6B'));
  });

  it('launch --dry-run prints one script starting all three, the port findings as warnings, and exits 0', async () => {
    const r = await run(['launch', 'simnode', '--profile', profileFile, '--dry-run']);
    assert.equal(r.code, 0, r.stderr);
    const s = r.stdout;
    outputs.push(['dry-run script', s]);
    for (const p of ports) assert.match(s, new RegExp(`^  start_group\\d '?[0-9,]+'? ${p} `, 'm'));
    assert.match(s, / --tp 2 \\\n/);
    assert.match(s, / --mem-frac 0\.85 \\\n/);
    assert.match(s, / --dp-size 2 \\\n/);
    assert.match(s, / --speculative-algorithm EAGLE \\\n/);
    assert.match(s, / --speculative-algorithm=NEXTN \\\n/);
    assert.match(s, / --reasoning-parser qwen3 \\\n/);
    assert.match(s, / --api-key "\$\(cat "\$HOME"\/\.gpu-sessions\/secrets\/SGLANG_API_KEY\)" \\\n/);
    assert.match(s, /export HF_TOKEN="\$\(cat "\$HOME"\/\.gpu-sessions\/secrets\/HF_TOKEN\)"/);
    assert.match(r.stderr, new RegExp(`warning: a launch would be refused: group 1: Port ${ports[0]} .*is already in use`));
    for (const n of ['SGLANG_API_KEY', 'HF_TOKEN', 'SGLANG_MY_SECRET'])
      assert.match(r.stderr, new RegExp(`warning: secrets not supplied: .*${n}`));
    // a real launch is refused while the servers run
    const refused = await run(['launch', 'simnode', '--profile', profileFile], {
      SGLANG_API_KEY: API_KEY,
      HF_TOKEN: HF,
      SGLANG_MY_SECRET: ENV_SECRET,
    });
    assert.equal(refused.code, 6, refused.stderr);
  });

  it('capture → stop → launch with the secrets from the environment reproduces every argv exactly', async () => {
    for (const p of ports) {
      const r = await run(['stop', 'simnode', '--port', String(p)]);
      assert.equal(r.code, 0, r.stdout + r.stderr);
    }
    await waitFor('the servers to stop', () => ports.every((p) => procOf(p) === null), 20_000);
    const missing = await run(['launch', 'simnode', '--profile', profileFile], { SGLANG_API_KEY: '', HF_TOKEN: '' });
    assert.equal(missing.code, 6);
    assert.match(missing.stderr, /not supplied: export SGLANG_API_KEY=…/);
    const keyFile = path.join(dir, 'key.txt');
    writeFileSync(keyFile, API_KEY + '\n');
    const r = await run(
      ['launch', 'simnode', '--profile', profileFile, '--secret', `SGLANG_API_KEY=@${keyFile}`, '--ready-timeout', '60'],
      {
        HF_TOKEN: HF,
        SGLANG_MY_SECRET: ENV_SECRET,
      },
    );
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /3\/3 ready/);
    for (const [k, p] of ports.entries()) {
      const now = procOf(p);
      assert.ok(now, `port ${p} is back`);
      assert.deepEqual(now.argv, original[k]!.argv, `port ${p}: the very same argv`);
      assert.equal(now.cwd, original[k]!.cwd);
      assert.equal(now.env.CUDA_VISIBLE_DEVICES, original[k]!.env.CUDA_VISIBLE_DEVICES);
    }
    assert.equal(procOf(ports[0])!.env.HF_TOKEN, HF);
    const secretsDir = path.join(sim.home, '.gpu-sessions/secrets');
    assert.equal(statSync(secretsDir).mode & 0o777, 0o700);
    assert.equal(statSync(path.join(secretsDir, 'SGLANG_API_KEY')).mode & 0o777, 0o600);
    const last = readFileSync(path.join(sim.home, '.gpu-sessions/launch/last.sh'), 'utf8');
    outputs.push(['last.sh on the node', last]);
    // the launched server enforces its key: the monitor's /metrics-style request needs it
  });

  it('no output holds a planted secret', () => {
    assert.ok(outputs.length >= 10);
    for (const [what, text] of outputs)
      for (const secret of [API_KEY, HF, ENV_SECRET]) assert.ok(!text.includes(secret), `${what} contains ${secret}:\n${text}`);
  });
});
