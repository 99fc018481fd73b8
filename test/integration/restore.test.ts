/**
 * Restore over TWO real OpenSSH sshd nodes (users gs27a and gs27b: different homes and GPU counts): salvage the
 * first while its job runs, restore onto the second. Every file byte-identical under its exact name (hostile
 * names included) with its mode; symlinks as links; the new home's shell files kept; a rerun sends nothing; a
 * changed file is a conflict left alone (exit 9) until --force; an unwritable folder is an error naming it;
 * --launch --dry-run prints the script and starts nothing; --launch starts the servers on disjoint GPUs, they
 * answer /health, and the generation client resumes from .done_indices without redoing rows.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode, testUser } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';

const HOSTILE = [
  'a b.log',
  `q'uote".log`,
  '$(touch PWNED).log',
  '`touch PWNED2`.log',
  'new\nline.log',
  '-leading-dash.log',
  '日本語 ünïcødé.log',
  'semi;colon&amp.sh',
  'back\\slash.log',
  'tab\tname.log',
  'CON.txt',
  'trailing dot.',
  'Case.txt',
  'case.txt',
];

/** A generation client like the seeds': skips the indices in .done_indices, appends rows and indices. */
const GEN = `import json, os, sys, time, urllib.request
ports = [int(p) for p in sys.argv[sys.argv.index('--ports') + 1].split(',')]
pause = float(os.environ.get('GEN_SLEEP', '0.005'))
os.makedirs('out', exist_ok=True)
done_path = os.path.join('out', '.done_indices')
done = set(int(x) for x in open(done_path) if x.strip()) if os.path.exists(done_path) else set()
prompts = [json.loads(l) for l in open('prompts.jsonl')]
log = open(os.path.join('out', 'gen.log'), 'a', buffering=1)
log.write('resuming: %d done, %d to go\\n' % (len(done), len(prompts) - len(done)))
for i, p in enumerate(prompts):
    if i in done:
        continue
    port = ports[i % len(ports)]
    body = json.dumps({'model': 'm', 'messages': [{'role': 'user', 'content': p['prompt']}], 'max_tokens': 4}).encode()
    req = urllib.request.Request('http://127.0.0.1:%d/v1/chat/completions' % port, body, {'Content-Type': 'application/json'})
    json.load(urllib.request.urlopen(req, timeout=60))
    with open(os.path.join('out', 'results.jsonl'), 'a') as f:
        f.write(json.dumps({'index': i}) + '\\n')
    with open(done_path, 'a') as f:
        f.write('%d\\n' % i)
    time.sleep(pause)
log.write('finished\\n')
`;
const PROMPTS = 500;
const CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');

function health(port: number): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/health', timeout: 3000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => {
      req.destroy();
      resolve(0);
    });
  });
}

describe('restore a salvaged run onto another node (two real sshd nodes)', function () {
  this.timeout(300_000);
  let a: SimNode;
  let b: SimNode;
  let base: string;
  let ws: string;
  let cfg: string;
  let kh: string;
  let run = '';
  const g = () => ['--ssh-config', cfg, '--known-hosts', kh];
  const bHome = () => b.home;
  const aHome = () => a.home;
  /** The workspace into the new home; the old node's simulated hardware (~/.sim) aside (the new node has its own). */
  const maps = () => [
    '--map',
    `${ws}=${path.join(bHome(), 'ws')}`,
    '--map',
    `${path.join(aHome(), '.sim')}=${path.join(bHome(), 'old-sim')}`,
  ];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    ws = path.join('/tmp', `gs27-ws-${randomBytes(4).toString('hex')}`);
    a = await startSimNode({
      user: testUser('gs27a'),
      gpuCount: 2,
      workspace: ws,
      decodePeriodS: 0.5,
      beforeStart: (home) => {
        const h = path.join(home, 'hostile');
        mkdirSync(h, { recursive: true });
        HOSTILE.forEach((n, i) =>
          writeFileSync(path.join(h, n), `content ${i} of ${JSON.stringify(n)}\n` + randomBytes(50 + i * 31).toString('base64')),
        );
        const job = path.join(home, 'job');
        mkdirSync(job, { recursive: true });
        writeFileSync(path.join(job, 'gen.py'), GEN);
        writeFileSync(
          path.join(job, 'prompts.jsonl'),
          Array.from({ length: PROMPTS }, (_, i) => JSON.stringify({ prompt: `p${i}` }) + '\n').join(''),
        );
        writeFileSync(path.join(job, 'run.sh'), '#!/bin/sh\necho run\n');
        chmodSync(path.join(job, 'run.sh'), 0o750);
        writeFileSync(path.join(job, 'private.cfg'), 'x=1\n');
        chmodSync(path.join(job, 'private.cfg'), 0o600);
        writeFileSync(path.join(job, 'data.txt'), 'data\n');
        symlinkSync('data.txt', path.join(job, 'latest'));
        symlinkSync(path.join(home, 'job', 'data.txt'), path.join(job, 'abs-link'));
        writeFileSync(path.join(home, '.bashrc'), '# the OLD node bashrc\n');
        const repo = path.join(home, 'repo');
        mkdirSync(repo);
        writeFileSync(path.join(repo, 'train.py'), 'lr = 1e-4\n');
        const git = (...args: string[]) => execFileSync('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args]);
        git('init', '-q');
        git('add', '.');
        git('commit', '-qm', 'init');
        writeFileSync(path.join(repo, 'train.py'), 'lr = 3e-4\n');
      },
    });
    b = await startSimNode({
      user: testUser('gs27b'),
      gpuCount: 4,
      startServers: false,
      beforeStart: (home) => {
        // A fresh node: its venv, model, simulated GPUs and its own shell setup; none of the old job.
        for (const e of readdirSync(home))
          if (!['.sim', '.ssh', 'venv', 'models', 'bin'].includes(e)) rmSync(path.join(home, e), { recursive: true, force: true });
        writeFileSync(path.join(home, '.bashrc'), '# the NEW node bashrc\n');
        // The job's repository, cloned clean on the new node: the salvaged uncommitted diff is applied to it.
        // The source repository belongs to the old node's user; a local clone's upload-pack drops `-c`
        // settings, so safe.directory comes from a throwaway global config.
        const gitConfig = path.join(home, '.gs-test-gitconfig');
        writeFileSync(gitConfig, '[safe]\n\tdirectory = *\n');
        execFileSync('git', ['clone', '-q', path.join(a.home, 'repo'), path.join(home, 'repo')], {
          env: { ...process.env, GIT_CONFIG_GLOBAL: gitConfig },
        });
        rmSync(gitConfig);
      },
    });
    base = mkdtempSync(path.join(os.tmpdir(), 'gs27-restore-'));
    cfg = path.join(base, 'ssh_config');
    kh = path.join(base, 'known_hosts');
    writeFileSync(
      cfg,
      readFileSync(a.sshd.sshConfigFile, 'utf8').replace(/^Host simnode$/m, 'Host nodea') +
        readFileSync(b.sshd.sshConfigFile, 'utf8')
          .replace(/^Host simnode$/m, 'Host nodeb')
          .replace(/UserKnownHostsFile .*/, `UserKnownHostsFile ${kh}`),
    );
    writeFileSync(cfg, readFileSync(cfg, 'utf8').replace(/UserKnownHostsFile .*/g, `UserKnownHostsFile ${kh}`));
    writeFileSync(kh, readFileSync(a.sshd.knownHostsFile, 'utf8') + readFileSync(b.sshd.knownHostsFile, 'utf8'));
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    for (const n of [a, b]) if (n) spawnSync('pkill', ['-u', n.user, '-f', 'gen.py']);
    if (base) rmSync(base, { recursive: true, force: true });
    if (ws) rmSync(ws, { recursive: true, force: true });
  });

  it('salvages the first node while its client runs, recording what restore needs', async () => {
    const ports = a.layout.ports.join(',');
    const r0 = a.sshd.ssh(
      `cd ~/job && GEN_SLEEP=0.3 setsid nohup python3 gen.py --ports ${ports} > gen.out 2>&1 < /dev/null & echo started`,
    );
    assert.match(r0.stdout, /started/);
    await waitFor('the client to finish a row', () => existsSync(path.join(aHome(), 'job', 'out', '.done_indices')), 20_000);
    await new Promise((r) => setTimeout(r, 1500));
    const r = await cli(
      [...g(), 'salvage', 'nodea', '--dest', path.join(base, 'salvage'), '--yes', '--json', '--stop-servers', '--stop-writers'],
      {
        timeoutMs: 180_000,
      },
    );
    assert.ok(r.code === 0 || r.code === 5, `exit ${r.code}: ${r.stderr.slice(-3000)}`);
    const rep = JSON.parse(r.stdout);
    run = rep.dest;
    const m = JSON.parse(readFileSync(path.join(run, 'salvage-manifest.json'), 'utf8'));
    assert.equal(m.restore.home, aHome());
    assert.ok(m.restore.profile?.length, `profile: ${JSON.stringify(m.restore.problems)}`);
    assert.ok(m.restore.client, 'the client is recorded');
    assert.ok(m.restore.client.argv.includes('gen.py'), JSON.stringify(m.restore.client));
    assert.equal(m.restore.client.cwd, path.join(aHome(), 'job'));
    assert.ok(
      Array.isArray(m.restore.client.envNames) && m.restore.client.envNames.includes('GEN_SLEEP'),
      JSON.stringify(m.restore.client),
    );
    assert.equal(m.restore.modes[path.join(aHome(), 'job', 'run.sh')], '750');
    const done = readFileSync(path.join(aHome(), 'job', 'out', '.done_indices'), 'utf8')
      .trim()
      .split('\n');
    assert.ok(done.length > 0 && done.length < PROMPTS, `the client was stopped mid-way (${done.length} rows)`);
  });

  it('refuses a folder the new node cannot write, naming it and suggesting --map; nothing written', async () => {
    const r = await cli([...g(), 'restore', run, 'nodeb', '--yes'], { timeoutMs: 120_000 });
    assert.notEqual(r.code, 0);
    assert.ok(r.stderr.includes(ws), r.stderr);
    assert.match(r.stderr, /--map/);
    assert.equal(existsSync(path.join(bHome(), 'job')), false);
  });

  it('restores every file byte-exact under its exact name and mode; symlinks as links; keeps the new shell files', async () => {
    const r = await cli([...g(), 'restore', run, 'nodeb', ...maps(), '--yes', '--json'], { timeoutMs: 180_000 });
    assert.equal(r.code, 0, r.stderr.slice(-3000) + r.stdout.slice(-3000));
    const j = JSON.parse(r.stdout);
    assert.equal(j.node, 'nodeb');
    assert.equal(j.from.node, 'nodea');
    assert.equal(j.from.run, run);
    assert.ok(j.mapped.some((x: { from: string; to: string }) => x.from === aHome() && x.to === bHome()));
    assert.ok(j.mapped.some((x: { from: string; to: string }) => x.from === ws && x.to === path.join(bHome(), 'ws')));
    assert.ok(j.files.uploaded > 20, JSON.stringify(j.files).slice(0, 2000));
    assert.deepEqual(j.files.conflicts, []);
    assert.deepEqual(j.files.failed, []);
    assert.ok(j.files.bytes > 0);
    assert.ok(j.files.kept.includes(path.join(bHome(), '.bashrc')), JSON.stringify(j.files.kept));
    assert.equal(readFileSync(path.join(bHome(), '.bashrc'), 'utf8'), '# the NEW node bashrc\n');
    for (const n of HOSTILE) {
      const want = readFileSync(path.join(aHome(), 'hostile', n));
      const got = readFileSync(path.join(bHome(), 'hostile', n));
      assert.ok(got.equals(want), `${JSON.stringify(n)} byte-identical under its exact name`);
    }
    assert.deepEqual(readdirSync(path.join(bHome(), 'hostile')).sort(), [...HOSTILE].sort());
    assert.equal(existsSync(path.join(bHome(), 'hostile', 'PWNED')), false);
    assert.equal(existsSync(path.join(bHome(), 'PWNED2')), false);
    assert.equal(statSync(path.join(bHome(), 'job', 'run.sh')).mode & 0o777, 0o750);
    assert.equal(statSync(path.join(bHome(), 'job', 'private.cfg')).mode & 0o777, 0o600);
    assert.ok(lstatSync(path.join(bHome(), 'job', 'latest')).isSymbolicLink());
    assert.equal(readlinkSync(path.join(bHome(), 'job', 'latest')), 'data.txt');
    assert.equal(readlinkSync(path.join(bHome(), 'job', 'abs-link')), path.join(bHome(), 'job', 'data.txt'));
    assert.ok(
      readFileSync(path.join(bHome(), 'job', 'out', '.done_indices')).equals(
        readFileSync(path.join(aHome(), 'job', 'out', '.done_indices')),
      ),
    );
    // The workspace went where --map said; the uncommitted diff was applied to the clean clone (not a conflict).
    assert.ok(existsSync(path.join(bHome(), 'ws', 'run_experiment')));
    assert.equal(readFileSync(path.join(bHome(), 'repo', 'train.py'), 'utf8'), 'lr = 3e-4\n');
    const gitItem = j.files.git.find((x: { path: string }) => x.path === path.join(bHome(), 'repo'));
    assert.ok(gitItem && gitItem.state === 'applied', JSON.stringify(j.files.git));
    assert.match(execFileSync('git', ['-c', 'safe.directory=*', '-C', path.join(bHome(), 'repo'), 'diff']).toString(), /^\+lr = 3e-4$/m);
    // Owned by the new node's user.
    assert.equal(statSync(path.join(bHome(), 'job', 'gen.py')).uid, Number(execFileSync('id', ['-u', b.user]).toString().trim()));
  });

  it('a rerun sends nothing', async () => {
    const r = await cli([...g(), 'restore', run, 'nodeb', ...maps(), '--yes', '--json'], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr.slice(-2000));
    const j = JSON.parse(r.stdout);
    assert.equal(j.files.uploaded, 0);
    assert.equal(j.files.bytes, 0);
    assert.ok(j.files.unchanged > 20);
  });

  it('MCP restore_plan compares and writes nothing; restore_run needs confirm: true', async () => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, ...g(), 'mcp', '--mcp-dest', base],
      stderr: 'ignore',
    });
    const client = new Client({ name: 'gs27-test', version: '1.0.0' });
    await client.connect(transport);
    type R = { isError?: boolean; structuredContent?: Record<string, any> };
    const call = async (name: string, args: Record<string, unknown>) =>
      (await client.callTool({ name, arguments: args }, undefined, { timeout: 150_000 })) as R;
    try {
      const mapArgs = [`${ws}=${path.join(bHome(), 'ws')}`, `${path.join(aHome(), '.sim')}=${path.join(bHome(), 'old-sim')}`];
      const f = path.join(bHome(), 'job', 'data.txt');
      rmSync(f);
      const p = await call('restore_plan', { run, node: 'nodeb', map: mapArgs });
      assert.ok(!p.isError, JSON.stringify(p.structuredContent));
      assert.equal(p.structuredContent!.files.toUpload, 1);
      assert.equal(p.structuredContent!.files.uploaded, 0);
      assert.equal(existsSync(f), false, 'the plan wrote nothing');
      const no = await call('restore_run', { run, node: 'nodeb', map: mapArgs, confirm: false });
      assert.ok(no.isError);
      assert.equal(existsSync(f), false);
      const yes = await call('restore_run', { run, node: 'nodeb', map: mapArgs, confirm: true });
      assert.ok(!yes.isError, JSON.stringify(yes.structuredContent));
      assert.equal(yes.structuredContent!.files.uploaded, 1);
      assert.equal(readFileSync(f, 'utf8'), 'data\n');
    } finally {
      await client.close().catch(() => undefined);
    }
  });

  it('a changed file is a conflict left alone (exit 9) until --force', async () => {
    const f = path.join(bHome(), 'job', 'prompts.jsonl');
    const orig = readFileSync(f);
    writeFileSync(f, 'edited on the new node\n');
    const r = await cli([...g(), 'restore', run, 'nodeb', ...maps(), '--yes', '--json'], { timeoutMs: 120_000 });
    assert.equal(r.code, 9, r.stderr.slice(-2000));
    const j = JSON.parse(r.stdout);
    assert.equal(j.files.conflicts.length, 1);
    assert.equal(j.files.conflicts[0].path, f);
    assert.equal(typeof j.files.conflicts[0].reason, 'string');
    assert.equal(readFileSync(f, 'utf8'), 'edited on the new node\n');
    const r2 = await cli([...g(), 'restore', run, 'nodeb', ...maps(), '--yes', '--json', '--force'], { timeoutMs: 120_000 });
    assert.equal(r2.code, 0, r2.stderr.slice(-2000));
    assert.equal(JSON.parse(r2.stdout).files.uploaded, 1);
    assert.ok(readFileSync(f).equals(orig));
  });

  it('--launch --dry-run prints the exact script with the servers on disjoint GPUs and starts nothing', async () => {
    const r = await cli([...g(), 'restore', run, 'nodeb', ...maps(), '--launch', '--dry-run', '--json'], { timeoutMs: 120_000 });
    assert.equal(r.code, 0, r.stderr.slice(-2000) + r.stdout.slice(-2000));
    const j = JSON.parse(r.stdout);
    assert.equal(j.launch.servers.length, 2);
    assert.match(j.launch.script, /sglang\.launch_server/);
    assert.ok(j.launch.script.includes(path.join(bHome(), 'models')), 'the model path is mapped');
    assert.ok(!j.launch.script.includes(aHome()), 'nothing of the old home is left in the script');
    const gpus = j.launch.servers.flatMap((s: { gpus: number[] }) => s.gpus);
    assert.equal(new Set(gpus).size, gpus.length);
    assert.deepEqual(
      j.launch.servers.map((s: { port: number }) => s.port),
      a.layout.ports,
    );
    for (const s of j.launch.servers) {
      assert.equal(s.modelPath, path.join(bHome(), 'models', 'Qwen3.6-27B'));
      assert.match(s.command, /python3 -m sglang\.launch_server/);
    }
    const n = b.sshd.ssh(`pgrep -u ${b.user} -f 'sglang[.]launch_server' | wc -l`).stdout.trim();
    assert.equal(n, '0');
  });

  it('--launch starts the servers on disjoint GPUs, they answer /health, and the client resumes without redoing rows', async () => {
    const doneA = readFileSync(path.join(aHome(), 'job', 'out', '.done_indices'), 'utf8')
      .trim()
      .split('\n');
    const rowsA = readFileSync(path.join(aHome(), 'job', 'out', 'results.jsonl'), 'utf8');
    const r = await cli(
      [...g(), 'restore', run, 'nodeb', ...maps(), '--launch', '--resume-client', '--yes', '--json', '--ready-timeout', '90'],
      {
        timeoutMs: 200_000,
      },
    );
    assert.equal(r.code, 0, r.stderr.slice(-3000) + r.stdout.slice(-3000));
    const j = JSON.parse(r.stdout);
    assert.equal(j.launch.outcome, 'ready');
    const gpus = j.launch.servers.flatMap((s: { gpus: number[] }) => s.gpus);
    assert.equal(new Set(gpus).size, gpus.length, 'no GPU shared');
    for (const s of j.launch.servers) assert.equal(await health(s.port), 200, `port ${s.port} /health`);
    // The simulated node's pid files say which GPU each server holds.
    const held = readdirSync(path.join(bHome(), '.sim', 'run')).map(
      (f) =>
        readFileSync(path.join(bHome(), '.sim', 'run', f), 'utf8')
          .trim()
          .split(/\s+/)[1],
    );
    assert.equal(new Set(held).size, held.length);
    assert.ok(j.client.started, JSON.stringify(j.client));
    const doneFile = path.join(bHome(), 'job', 'out', '.done_indices');
    const genLog = path.join(bHome(), 'job', 'out', 'gen.log');
    await waitFor(
      'the resumed client to finish',
      () => readFileSync(genLog, 'utf8').includes(`resuming: ${doneA.length} done`) && readFileSync(genLog, 'utf8').endsWith('finished\n'),
      120_000,
    );
    const doneB = readFileSync(doneFile, 'utf8').trim().split('\n');
    assert.equal(doneB.length, PROMPTS, 'every prompt exactly once');
    assert.equal(new Set(doneB).size, PROMPTS, 'no row redone');
    assert.deepEqual(doneB.slice(0, doneA.length), doneA);
    assert.ok(readFileSync(path.join(bHome(), 'job', 'out', 'results.jsonl'), 'utf8').startsWith(rowsA));
    assert.match(readFileSync(path.join(bHome(), 'job', 'out', 'gen.log'), 'utf8'), new RegExp(`resuming: ${doneA.length} done`));
  });
});
