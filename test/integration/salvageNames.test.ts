/**
 * Exact local names over a REAL OpenSSH sshd (issue 23 items 1 and 5): files whose names are legal on Linux but
 * not on Windows are saved under the node's exact names, the manifest's `localPath` says where; a listing record
 * that cannot be mapped (a path with `..`, as a hostile node could send) is a failed item with its reason; a
 * folder an earlier version wrote with %-encoded names still resumes without a transfer.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { SalvageOptions, Salvager } from '../../src/core/flows/salvage';
import type { ExecOptions, SshTransport, Transport } from '../../src/core/ssh/transport';
import { SimNode, startSimNode } from '../helpers/simnode';
import { cli } from '../helpers/cli';

const HOSTILE = [
  'weird/*',
  'double"quote.txt',
  '$(echo x | xargs touch)',
  'new\nline.log',
  'run:2026-12-02T00:00:00.log',
  'back\\slash',
  'CON',
];

/** The transport, with records a hostile node could send (a path with `..`: a file and a git repository) added to the listing. */
function withBadRecord(t: SshTransport, bad: string, badRepo = `${bad}-repo`): Transport {
  const exec = t.exec.bind(t);
  const wrapped = Object.create(t) as SshTransport;
  wrapped.exec = async (command: string, opts: ExecOptions = {}) => {
    const r = await exec(command, opts);
    const text = r.stdout.toString('utf8');
    const m = /@@(GS[0-9a-f]+):files@@\n/.exec(text);
    if (!m) return r;
    const at = m.index + m[0].length;
    return { ...r, stdout: Buffer.from(text.slice(0, at) + `F\t1\t5\t1700000000\t${bad}\0G\t1\t0\t0\t${badRepo}\0` + text.slice(at)) };
  };
  return wrapped;
}

describe('salvage: exact local names, every record an item, old folders resume (real sshd)', function () {
  this.timeout(240_000);
  let sim: SimNode;
  let work: string;
  let base: string;
  let pool: ConnectionPool;
  let t: SshTransport;

  before(async function () {
    if (process.getuid?.() !== 0 || process.platform === 'win32') this.skip();
    sim = await startSimNode({
      user: 'gs23names',
      startServers: false,
      beforeStart: (home) => {
        work = path.join(home, 'names');
        mkdirSync(path.join(work, 'weird'), { recursive: true });
        for (const n of HOSTILE) writeFileSync(path.join(work, n), `bytes of ${n}\n`);
        // two model folders a launch script names: one fine-tuned here, one downloaded with huggingface-cli
        for (const m of ['ft-model', 'hub-model']) {
          mkdirSync(path.join(home, m), { recursive: true });
          writeFileSync(path.join(home, m, 'config.json'), '{"model_type": "qwen3", "edited": "by hand"}\n');
          writeFileSync(path.join(home, m, 'model.safetensors'), Buffer.alloc(2 * 1024 * 1024, m.length));
          writeFileSync(path.join(home, `launch_${m}.sh`), `python3 -m sglang.launch_server --model-path ${path.join(home, m)} --port 1\n`);
        }
        const dl = path.join(home, 'hub-model', '.cache', 'huggingface', 'download');
        mkdirSync(dl, { recursive: true });
        writeFileSync(path.join(dl, 'model.safetensors.metadata'), `${'ab12'.repeat(10)}\n"etag"\n1764633600.0\n`);
      },
    });
    execFileSync('chown', ['-R', `${sim.user}:${sim.user}`, sim.home]);
    base = mkdtempSync(path.join(os.tmpdir(), 'gs23-names-'));
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    t = pool.get(listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0]) as SshTransport;
  });
  after(async () => {
    pool?.dispose();
    await sim?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  const opts = (transport: Transport, b: string): SalvageOptions => ({
    node: 'names',
    transport,
    base: b,
    roots: [work],
    volumes: [],
    concurrency: 1,
    snapshot: async () => ({ json: {}, markdown: '', summary: 'skipped in this test' }),
  });

  it('saves hostile names byte-exact, records localPath, and reports a `..` record as failed', async () => {
    const bad = `${work}/../../etc/passwd`;
    const s = new Salvager(opts(withBadRecord(t, bad), path.join(base, 'a')));
    const m = (await s.run())!;
    for (const n of HOSTILE) {
      const it = m.items.find((i) => i.remotePath === `${work}/${n}`);
      assert.ok(it, n);
      assert.equal(it.status, 'verified', `${n}: ${it.reason}`);
      assert.equal(it.localPath, `files${work}/${n}`);
      assert.equal(readFileSync(path.join(s.dir, it.localPath!), 'utf8'), `bytes of ${n}\n`);
    }
    assert.deepEqual(readdirSync(path.join(s.dir, 'files', work, 'weird')), ['*']);
    const onDisk = JSON.parse(readFileSync(path.join(s.dir, 'salvage-manifest.json'), 'utf8'));
    const con = onDisk.items.find((i: { remotePath: string }) => i.remotePath === `${work}/CON`);
    assert.equal(con.localPath, `files${work}/CON`);
    const badItem = m.items.find((i) => i.remotePath === bad);
    assert.ok(badItem, 'the `..` record is an item');
    assert.equal(badItem.status, 'failed');
    assert.match(badItem.reason ?? '', /cannot be mapped.*\.\./);
    // the same record as a git repository is reported too (issue 40 item 6), never dropped
    const badRepo = m.items.find((i) => i.remotePath === `${bad}-repo`);
    assert.ok(badRepo, `the \`..\` git record is an item: ${JSON.stringify(m.items.map((i) => i.remotePath))}`);
    assert.equal(badRepo.status, 'failed');
    assert.match(badRepo.reason ?? '', /cannot be mapped.*\.\./);
    assert.equal(m.verdict, 'unsafe');
    assert.ok(m.reasons.includes('failed-items'), m.reasons.join());
  });

  it('an existing folder with %-encoded names resumes without a transfer', async () => {
    const b2 = path.join(base, 'old');
    const first = new Salvager(opts(t, b2));
    const m1 = (await first.run())!;
    // make it look like a folder an earlier version wrote: %-encoded local names
    const old = m1.items.find((i) => i.remotePath === `${work}/weird/*`)!;
    const oldRel = `files${work}/weird/%2A`;
    writeFileSync(path.join(first.dir, oldRel), readFileSync(path.join(first.dir, old.localPath!)));
    rmSync(path.join(first.dir, old.localPath!));
    old.localPath = oldRel;
    writeFileSync(path.join(first.dir, 'salvage-manifest.json'), JSON.stringify(m1));
    const second = new Salvager(opts(t, b2));
    assert.equal(second.dir, first.dir);
    const m2 = (await second.run())!;
    const again = m2.items.find((i) => i.remotePath === `${work}/weird/*`)!;
    assert.equal(again.localPath, oldRel);
    assert.equal(again.status, 'verified');
    assert.match(again.reason ?? '', /previous run/);
    assert.equal(m2.stats.filesTransferred, 0);
  });

  it('weights of unknown origin make the verdict unsafe (unique-weights) unless --leave; hub weights do not', async () => {
    const args = [
      '--ssh-config',
      sim.sshd.sshConfigFile,
      '--known-hosts',
      sim.sshd.knownHostsFile,
      'salvage',
      'simnode',
      '--yes',
      '--json',
    ];
    const ft = path.join(sim.home, 'ft-model');
    const hub = path.join(sim.home, 'hub-model');
    const r = await cli([...args, '--dest', path.join(base, 'w1')], { timeoutMs: 180_000 });
    assert.equal(r.code, 5, r.stderr + r.stdout.slice(0, 2000));
    const rep = JSON.parse(r.stdout);
    assert.equal(rep.verdict, 'unsafe');
    assert.deepEqual(rep.reasons, ['unique-weights'], JSON.stringify(rep.reasonDetails));
    const detail = rep.reasonDetails.find((d: { code: string }) => d.code === 'unique-weights').message;
    assert.match(detail, new RegExp(`${ft} \\(1 file\\(s\\), 2\\.0 MiB\\)`));
    assert.ok(!detail.includes(hub), detail);
    const by = new Map(rep.items.map((i: { remotePath: string }) => [i.remotePath, i]));
    const item = (p: string) => by.get(p) as { status: string; leftReason: string | null; reason: string };
    assert.equal(item(`${ft}/model.safetensors`).leftReason, 'origin-unknown');
    assert.equal(item(`${hub}/model.safetensors`).leftReason, 'on-the-hub');
    assert.match(item(`${hub}/model.safetensors`).reason, /revision ab12/);
    // the evidence itself comes home (issue 40 item 5): the download metadata is salvaged, though its folder is a cache
    const evidence = `${hub}/.cache/huggingface/download/model.safetensors.metadata`;
    assert.ok(item(`${hub}/model.safetensors`).reason.includes(evidence));
    assert.equal(item(evidence)?.status, 'verified', JSON.stringify(item(evidence)));
    assert.match(readFileSync((item(evidence) as unknown as { localPath: string }).localPath, 'utf8'), /^(ab12){10}\n/);
    // the hand-edited config files are salvaged like any other file
    assert.equal(item(`${ft}/config.json`).status, 'verified');
    assert.equal(item(`${hub}/config.json`).status, 'verified');
    const md = readFileSync(path.join(rep.dest, 'SALVAGE.md'), 'utf8');
    assert.match(md, /unknown origin/);
    assert.ok(md.includes(ft));

    const ok = await cli([...args, '--dest', path.join(base, 'w2'), '--leave', ft], { timeoutMs: 180_000 });
    assert.equal(ok.code, 0, ok.stderr + ok.stdout.slice(0, 2000));
    const rep2 = JSON.parse(ok.stdout);
    assert.equal(rep2.verdict, 'safe', JSON.stringify(rep2.reasonDetails));
    assert.equal(rep2.items.find((i: { remotePath: string }) => i.remotePath === `${ft}/model.safetensors`).leaveAccepted, true);
  });
});
