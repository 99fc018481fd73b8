/**
 * Salvage over a REAL OpenSSH sshd with the simulated node: byte-identical downloads (hostile names
 * included, nothing injected), symlinks not followed, resume after a dropped connection, secrets kept
 * out of the salvage folder, and the verdict.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import {
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { Salvager } from '../../src/core/flows/salvage';
import type { SshTransport } from '../../src/core/ssh/transport';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode } from '../helpers/simnode';
import { walk } from '../helpers/walk';
import { planted } from '../helpers/planted';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

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
];
const SECRETS = {
  HF_TOKEN: planted('hf_', 'ZyXwVuTsRqPoNmLkJiHgFeDcBa0123456789'),
  AWS_SECRET_ACCESS_KEY: planted('wJalrXUtnFEMI/', 'K7MDENG/bPxRfiCYEXAMPLEKEYzz'),
  AWS_ACCESS_KEY_ID: planted('AKIA', 'IOSFODNN7EXAMPL3'),
  WANDB_API_KEY: 'a3f9c2d1e4b5a6978877665544332211aabbccdd',
};

describe('salvage over a real OpenSSH sshd', function () {
  this.timeout(240_000);
  let sim: SimNode;
  let base: string;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({
      beforeStart: (home: string) => {
        // Hostile names, a symlink leading outside the roots, planted secrets.
        const h = path.join(home, 'hostile');
        mkdirSync(h, { recursive: true });
        HOSTILE.forEach((n, i) =>
          writeFileSync(path.join(h, n), `content ${i} of ${JSON.stringify(n)}\n` + randomBytes(100 + i * 37).toString('base64')),
        );
        symlinkSync('/etc/passwd', path.join(home, 'outside-link.log'));
        writeFileSync(
          path.join(home, 'launch_secret.sh'),
          `#!/bin/bash\nexport HF_TOKEN=${SECRETS.HF_TOKEN}\nexport WANDB_API_KEY=${SECRETS.WANDB_API_KEY}\npython3 -m sglang.launch_server --model-path /m --api-key ${SECRETS.HF_TOKEN}\n`,
        );
        const envFile = path.join(home, '.sim', 'env.sh');
        // Idle servers (the job is done): their logs do not grow while they are salvaged.
        writeFileSync(
          envFile,
          readFileSync(envFile, 'utf8') +
            Object.entries(SECRETS)
              .map(([k, v]) => `export ${k}=${v}\n`)
              .join('') +
            'export SGLANG_SIM_RUNNING=0\n',
        );
      },
    });
    base = mkdtempSync(path.join(os.tmpdir(), 'gs-salvage-'));
  });
  after(async () => {
    await sim?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  const args = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];

  it('downloads everything byte-identical, hostile names included, no command injected; stops the servers; verdict safe', async () => {
    const dest = path.join(base, 'run1');
    const r = await cli([...args(), 'salvage', 'simnode', '--dest', dest, '--yes', '--json', '--stop-servers'], { timeoutMs: 180_000 });
    const rep = JSON.parse(r.stdout);
    assert.equal(
      r.code,
      0,
      `${JSON.stringify(rep.reasonDetails)} lost: ${JSON.stringify(rep.lost).slice(0, 2000)} ${r.stderr.slice(-2000)}`,
    );
    assert.equal(rep.verdict, 'safe');
    assert.ok(rep.dest.startsWith(path.join(dest, 'simnode') + path.sep));
    const byRemote = new Map<
      string,
      { localPath: string; status: string; sha256: string; kind: string; redacted?: boolean; reason: string }
    >(rep.items.map((i: { remotePath: string }) => [i.remotePath, i]));
    for (const n of HOSTILE) {
      const remote = path.join(sim.home, 'hostile', n);
      const it = byRemote.get(remote);
      assert.ok(it, `item for ${JSON.stringify(n)}`);
      assert.equal(it.status, 'verified', `${JSON.stringify(n)}: ${it.reason}`);
      const want = readFileSync(remote);
      const got = readFileSync(it.localPath);
      assert.ok(got.equals(want), `${JSON.stringify(n)} byte-identical`);
      assert.equal(it.sha256, sha(want));
    }
    assert.equal(existsSync(path.join(sim.home, 'hostile', 'PWNED')), false);
    assert.equal(existsSync(path.join(sim.home, 'PWNED')), false);
    assert.equal(existsSync(path.join(sim.home, 'PWNED2')), false);
    // The seed artifacts are there and identical.
    for (const rel of ['launch_all.sh', 'launch_tuned.sh', 'completions/progress.json', 'completions/.done_indices', 'logs/generate.log']) {
      const it = byRemote.get(path.join(sim.home, rel))!;
      assert.equal(it.status, 'verified', rel);
      assert.ok(readFileSync(it.localPath).equals(readFileSync(path.join(sim.home, rel))), rel);
    }
    // Logs may grow while being salvaged; they are verified as of the moment they were hashed.
    assert.equal(byRemote.get(sim.layout.logFiles[0])?.status, 'verified');
    // Running servers captured as a script; environment recorded; report written.
    const folder = rep.dest as string;
    const servers = readFileSync(path.join(folder, 'running-servers.sh'), 'utf8');
    // (The node's process table is this machine's: count the servers of this node's ports.)
    for (const port of sim.layout.ports) assert.match(servers, new RegExp(`--port ${port}\\b`));
    assert.ok(existsSync(path.join(folder, 'environment.json')));
    assert.ok(existsSync(path.join(folder, 'environment.md')));
    const md = readFileSync(path.join(folder, 'SALVAGE.md'), 'utf8');
    assert.match(md, /Safe to shut down/);
    const manifest = JSON.parse(readFileSync(path.join(folder, 'salvage-manifest.json'), 'utf8'));
    assert.equal(manifest.verdict, 'safe');
    for (const it of manifest.items) assert.ok(['verified', 'failed', 'skipped'].includes(it.status));
    // No temporary files left behind; nothing written outside the folder.
    assert.deepEqual(
      walk(dest).filter((f) => f.endsWith('.gs-partial') || f.endsWith('.gs-tmp')),
      [],
    );
    for (const f of walk(dest)) assert.ok(f.startsWith(folder + path.sep), f);
  });

  it('does not follow a symlink that leads outside the roots', () => {
    const folder = readdirSync(path.join(base, 'run1', 'simnode')).map((d) => path.join(base, 'run1', 'simnode', d))[0];
    const manifest = JSON.parse(readFileSync(path.join(folder, 'salvage-manifest.json'), 'utf8'));
    const link = manifest.items.find((i: { remotePath: string }) => i.remotePath === path.join(sim.home, 'outside-link.log'));
    assert.ok(link, 'the symlink is listed');
    assert.equal(link.status, 'verified', 'the link itself is recorded');
    assert.equal(link.linkTarget, '/etc/passwd');
    assert.match(link.reason, /never followed/);
    const passwd = readFileSync('/etc/passwd');
    for (const f of walk(folder)) assert.ok(!readFileSync(f).equals(passwd), `${f} is not /etc/passwd`);
  });

  it("copies the user's files exactly (secrets included, listed by line and kind) and keeps secrets out of what it writes itself", () => {
    const folder = readdirSync(path.join(base, 'run1', 'simnode')).map((d) => path.join(base, 'run1', 'simnode', d))[0];
    const manifest = JSON.parse(readFileSync(path.join(folder, 'salvage-manifest.json'), 'utf8'));
    const script = manifest.items.find((i: { remotePath: string }) => i.remotePath === path.join(sim.home, 'launch_secret.sh'));
    assert.equal(script.status, 'verified');
    assert.ok(readFileSync(path.join(folder, script.localPath)).equals(readFileSync(path.join(sim.home, 'launch_secret.sh'))));
    assert.deepEqual(
      script.secrets.map((x: { line: number }) => x.line),
      [2, 3, 4],
    );
    assert.equal(script.secrets[0].kind, 'huggingface-token');
    for (const f of walk(folder)) {
      if (f.startsWith(path.join(folder, 'files') + path.sep)) continue;
      const text = readFileSync(f).toString('latin1');
      for (const [k, v] of Object.entries(SECRETS)) assert.ok(!text.includes(v), `${k} leaked into ${f}`);
    }
    assert.equal(readFileSync(path.join(folder, '.gitignore'), 'utf8').trim().split('\n').pop(), '*');
  });

  it('resumes after the connection drops mid-transfer without re-downloading verified files', async () => {
    const big = path.join(sim.home, 'big', 'hidden_states.jsonl');
    mkdirSync(path.dirname(big), { recursive: true });
    writeFileSync(big, randomBytes(96 * 1024 * 1024));
    chownSync(
      path.dirname(big),
      Number(execFileSync('id', ['-u', sim.user]).toString()),
      Number(execFileSync('id', ['-g', sim.user]).toString()),
    );
    const dest = path.join(base, 'run2');
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    try {
      const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0];
      const t = pool.get(node) as SshTransport;
      let dropped = false;
      // The connection drops and the user gives up (Ctrl-C): without the cancel, the final pass would
      // retry the failed file over the reconnected transport and finish the job in this same run.
      const ac = new AbortController();
      const first = new Salvager({
        node: 'simnode',
        transport: t,
        base: dest,
        concurrency: 1,
        signal: ac.signal,
        snapshot: async () => ({ json: {}, markdown: '', summary: 'skipped in this test' }),
        onProgress: (p) => {
          if (!dropped && p.bytesDone > 20 * 1024 * 1024) {
            dropped = true;
            sim.sshd.dropConnections();
            setTimeout(() => ac.abort(), 200);
          }
        },
      });
      const m1 = (await first.run())!;
      assert.ok(dropped, 'the connection was dropped during the transfer');
      assert.equal(m1.verdict, 'unsafe');
      const bigItem1 = m1.items.find((i) => i.remotePath === big)!;
      assert.notEqual(bigItem1.status, 'verified');
      const verified1 = m1.items
        .filter((i) => i.status === 'verified' && i.kind !== 'server-cmdline' && i.kind !== 'git-state' && i.kind !== 'symlink')
        .map((i) => i.remotePath);
      assert.ok(verified1.length > 5, 'small files were verified before the drop');
      // The manifest on disk is consistent: nothing partial is called verified.
      const onDisk = JSON.parse(readFileSync(path.join(first.dir, 'salvage-manifest.json'), 'utf8'));
      for (const it of onDisk.items)
        if (it.status === 'verified' && it.localPath && it.kind !== 'git-state')
          assert.equal(sha(readFileSync(path.join(first.dir, it.localPath))), it.localSha256 ?? it.sha256);
      // Rerun: same folder, verified files skipped, the rest completes.
      let bytes = 0;
      const second = new Salvager({
        node: 'simnode',
        transport: t,
        base: dest,
        snapshot: async () => ({ json: {}, markdown: '', summary: 'skipped' }),
        onProgress: (p) => (bytes = p.bytesDone),
      });
      assert.equal(second.dir, first.dir, 'the rerun resumes the same folder');
      const m2 = (await second.run())!;
      assert.equal(m2.verdict, 'safe', JSON.stringify(m2.lost));
      const bigItem2 = m2.items.find((i) => i.remotePath === big)!;
      assert.equal(bigItem2.status, 'verified');
      assert.ok(readFileSync(path.join(second.dir, bigItem2.localPath!)).equals(readFileSync(big)));
      for (const p of verified1) {
        const it = m2.items.find((i) => i.remotePath === p)!;
        if (/sglang_gpu\d\.log$|generate\.log$/.test(p)) continue; // live logs grow: re-downloaded by design
        assert.match(it.reason ?? '', /previous run|redacted/, `${p} was not re-downloaded`);
      }
      assert.ok(bytes < 96 * 1024 * 1024 + 8 * 1024 * 1024, `second run transferred ${bytes} bytes`);
    } finally {
      pool.dispose();
    }
  });

  it('checks S3 (s3rver): present, mismatch and missing batches, cross-checked with awscli', async () => {
    const { startS3rver, putObjects, s3Env, awsCli, awsLsRecursive } = await import('../helpers/s3rver');
    const s3 = await startS3rver();
    try {
      const comp = path.join(sim.home, 'completions');
      const batches = readdirSync(comp)
        .filter((f) => /^batch_.*\.jsonl$/.test(f))
        .sort();
      assert.ok(batches.length >= 3);
      const uploaded = batches.slice(0, -1);
      await putObjects(s3.endpoint, 'train-dflash', [
        ...uploaded.slice(1).map((f) => ({ key: `qwen36/completions/${f}`, body: readFileSync(path.join(comp, f)) })),
        // Same key, different bytes of the same length: an ETag (MD5) mismatch.
        {
          key: `qwen36/completions/${uploaded[0]}`,
          body: Buffer.from(readFileSync(path.join(comp, uploaded[0])).toString('latin1').replace(/./, 'X'), 'latin1'),
        },
      ]);
      const dest = path.join(base, 'run-s3');
      const r = await cli(
        [
          ...args(),
          'salvage',
          'simnode',
          '--dest',
          dest,
          '--yes',
          '--json',
          '--s3',
          's3://train-dflash/qwen36/',
          '--s3-endpoint',
          s3.endpoint,
        ],
        { timeoutMs: 180_000, env: s3Env() },
      );
      assert.ok(r.code === 0 || r.code === 5, r.stderr);
      const rep = JSON.parse(r.stdout);
      const st = (f: string) => rep.items.find((i: { remotePath: string }) => i.remotePath === path.join(comp, f))?.s3;
      for (const f of uploaded.slice(1)) assert.equal(st(f), 'present', f);
      assert.equal(st(uploaded[0]), 'mismatch');
      assert.equal(st(batches[batches.length - 1]), 'missing');
      assert.equal(rep.s3.objects, uploaded.length);
      assert.equal(rep.steps.s3.status, 'done');
      // Everything selected is verified locally, so the node is safe even though one batch is not in S3.
      assert.equal(rep.verdict, 'safe');
      const aws = awsCli();
      if (aws) {
        const ls = awsLsRecursive(aws, s3.endpoint, 's3://train-dflash/qwen36/');
        for (const f of uploaded)
          assert.equal(ls.keys.get(`qwen36/completions/${f}`), statSync(path.join(comp, f)).size, `awscli agrees on ${f}`);
        assert.equal(ls.keys.size, uploaded.length);
      }
    } finally {
      await s3.stop();
    }
  });

  it('lists large files without downloading them, and the verdict names what would be lost', async () => {
    const dest = path.join(base, 'run3');
    const r = await cli([...args(), 'salvage', 'simnode', '--dest', dest, '--yes', '--json', '--size-threshold', '10'], {
      timeoutMs: 180_000,
    });
    const rep = JSON.parse(r.stdout);
    const big = rep.items.find((i: { remotePath: string }) => i.remotePath.endsWith('big/hidden_states.jsonl'));
    assert.equal(big.status, 'skipped');
    assert.equal(big.leftReason, 'large');
    assert.match(big.reason, /threshold/);
    assert.equal(existsSync(path.join(rep.dest, 'files', big.remotePath.slice(1))), false);
    // Not selected → not counted against the verdict, but reported as left on the node.
    assert.equal(rep.verdict, 'safe');
    assert.equal(r.code, 0);
    const md = readFileSync(path.join(rep.dest, 'SALVAGE.md'), 'utf8');
    assert.match(md, /Left on the node/);
    assert.ok(statSync(path.join(rep.dest, 'salvage-manifest.json')).size > 0);
  });
  it("drives plan → review → execute in the core: the review's null downloads nothing, a subset takes only it, includeLarge preselects", async () => {
    const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const noSnapshot = async () => ({ json: {}, markdown: '', summary: 'skipped in this test' });
    try {
      const t = pool.get(listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0]) as SshTransport;
      const opts = { node: 'simnode', transport: t, snapshot: noSnapshot, sizeThreshold: 10 * 1024 * 1024 };
      // stopped at the review: nothing downloaded, the plan's manifest stays
      let seen = 0;
      const stopped = new Salvager({ ...opts, base: path.join(base, 'flow-stop'), review: async (items) => ((seen = items.length), null) });
      assert.equal(await stopped.run(), null);
      assert.ok(seen > 5, 'the review saw the plan');
      assert.equal(existsSync(path.join(stopped.dir, 'files')), false, 'nothing was downloaded');
      assert.ok(existsSync(path.join(stopped.dir, 'salvage-manifest.json')));
      // a subset: exactly those files, the rest deselected
      let chosen: string[] = [];
      const subset = new Salvager({
        ...opts,
        base: path.join(base, 'flow-subset'),
        review: async (items) => (chosen = items.filter((i) => i.kind === 'script' && i.selected).map((i) => i.remotePath)),
      });
      const m = (await subset.run())!;
      assert.ok(chosen.length >= 1, 'the node has scripts to choose');
      const taken = m.items.filter((i) => i.status === 'verified' && i.localPath?.startsWith('files/')).map((i) => i.remotePath);
      assert.deepEqual(taken.sort(), [...chosen].sort());
      assert.ok(m.items.some((i) => i.leftReason === 'deselected'));
      // includeLarge: the file above the threshold is preselected; the review sees it selected
      let bigSelected: boolean | undefined;
      const large = new Salvager({
        ...opts,
        base: path.join(base, 'flow-large'),
        includeLarge: true,
        review: async (items) => {
          bigSelected = items.find((i) => i.remotePath.endsWith('big/hidden_states.jsonl'))?.selected;
          return null;
        },
      });
      assert.equal(await large.run(), null);
      assert.equal(bigSelected, true);
    } finally {
      pool.dispose();
    }
  });
});
