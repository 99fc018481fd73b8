/**
 * Salvage you can trust, over a REAL OpenSSH sshd on the simulated node: one server works in a folder
 * outside the home (a temp dir standing in for /workspace) full of files no extension list knows, a client
 * keeps writing results, the home holds a Hugging Face cache, a private key and AWS credentials.
 * Every file is saved byte-identical or listed with its reason; no key or credentials file is copied; while
 * the servers and the client run every salvage says unsafe/still-running; --stop-servers --stop-writers ends
 * safe; a rerun transfers 0 bytes; a hit listing bound says unsafe/listing-truncated.
 */
import assert from 'node:assert/strict';
import { chmodSync, existsSync, lstatSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode } from '../helpers/simnode';
import { planted } from '../helpers/planted';
import { waitFor } from '../helpers/wait';
import { processRunning } from '../helpers/procs';

const HF_TOKEN = planted('hf_', 'QwErTyUiOpAsDfGhJkLzXcVbNm0123456789');

interface Item {
  remotePath: string;
  localPath: string | null;
  kind: string;
  status: string;
  sha256: string | null;
  size: number;
  leftReason: string | null;
  secrets: Array<{ line: number; kind: string }>;
  reason: string | null;
  jobWeights?: boolean;
}

function walkFiles(dir: string, out: string[] = []): string[] {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) walkFiles(p, out);
    else if (e.isFile()) out.push(p);
  }
  return out;
}

describe('salvage you can trust (real sshd, work outside the home, live writers)', function () {
  /** The report of the --stop-servers run (the rerun compares against it). */
  let afterStop: { items: Array<Item & { size: number; mtime: string }> } | undefined;
  this.timeout(300_000);
  let sim: SimNode;
  let ws: string;
  let base: string;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    ws = mkdtempSync(path.join(os.tmpdir(), 'gs-workspace-'));
    chmodSync(ws, 0o755);
    sim = await startSimNode({
      gpuCount: 3,
      workspace: ws,
      startClient: true,
      beforeStart: () => {
        writeFileSync(path.join(ws, '.env'), `MODEL=qwen\nHF_TOKEN=${HF_TOKEN}\n`);
      },
    });
    base = mkdtempSync(path.join(os.tmpdir(), 'gs-trust-'));
  });
  after(async () => {
    await sim?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
    if (ws) rmSync(ws, { recursive: true, force: true });
  });

  const args = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];
  const dest = () => path.join(base, 'dest');

  it('while servers and the client run, two salvages in a row both say unsafe / still-running', async () => {
    const reps = [];
    for (let k = 0; k < 2; k++) {
      const r = await cli([...args(), 'salvage', 'simnode', '--dest', dest(), '--yes', '--json'], { timeoutMs: 180_000 });
      assert.equal(r.code, 5, r.stderr + r.stdout.slice(0, 2000));
      reps.push(JSON.parse(r.stdout));
    }
    for (const rep of reps) {
      assert.equal(rep.verdict, 'unsafe');
      assert.ok(rep.reasons.includes('still-running'), JSON.stringify(rep.reasons));
      const ports = new Set(sim.layout.ports.map(String));
      const servers = rep.writers.filter((w: { command: string }) => /sglang\.launch_server/.test(w.command));
      assert.equal(servers.length, 3, JSON.stringify(rep.writers));
      for (const w of servers)
        assert.ok(
          [...ports].some((p) => w.command.includes(`--port ${p}`)),
          w.command,
        );
      const client = rep.writers.find((w: { command: string }) => /run_experiment/.test(w.command));
      assert.ok(client, `the client is a writer: ${JSON.stringify(rep.writers)}`);
      assert.ok(
        client.writes.some((f: string) => f === path.join(ws, 'out', 'results.jsonl')),
        JSON.stringify(client),
      );
      // The work folder outside the home was found, with why.
      const root = rep.roots.find((r: { path: string }) => r.path === ws);
      assert.ok(root, `roots: ${JSON.stringify(rep.roots)}`);
      assert.match(root.why, /working directory of the SGLang server/);
      assert.ok(rep.roots.some((r: { path: string; why: string }) => r.path === sim.home && /home/.test(r.why)));
      assert.equal(typeof rep.stats.bytesTransferred, 'number');
    }
    assert.equal(reps[0].dest, reps[1].dest, 'the rerun continues the same folder');
    assert.ok(reps[1].stats.bytesTransferred < reps[0].stats.bytesTransferred, 'the rerun fetched only what changed');
  });

  it('--stop-servers --stop-writers: command lines written, everything stopped, final pass, verdict safe', async () => {
    const before = JSON.parse(
      readFileSync(
        path.join(readdirSync(path.join(dest(), 'simnode')).map((d) => path.join(dest(), 'simnode', d))[0], 'salvage-manifest.json'),
        'utf8',
      ),
    );
    const pids: number[] = before.writers.map((w: { pid: number }) => w.pid);
    const r = await cli([...args(), 'salvage', 'simnode', '--dest', dest(), '--yes', '--json', '--stop-servers', '--stop-writers'], {
      timeoutMs: 240_000,
    });
    const rep = JSON.parse(r.stdout);
    afterStop = rep;
    assert.equal(
      rep.verdict,
      'safe',
      `${JSON.stringify(rep.reasonDetails)} lost: ${JSON.stringify(rep.lost).slice(0, 1000)} stopped: ${JSON.stringify(rep.stopped)} writers-before: ${JSON.stringify(before.writers)}`,
    );
    assert.equal(r.code, 0);
    assert.deepEqual(rep.reasons, []);
    assert.deepEqual(rep.writers, []);
    await waitFor('the stopped processes to be gone', () => pids.every((p) => !processRunning(p)), 10_000);
    const servers = readFileSync(path.join(rep.dest, 'running-servers.sh'), 'utf8');
    for (const port of sim.layout.ports) assert.match(servers, new RegExp(`--port ${port}\\b`));
    assert.ok(rep.stopped.length >= 4, JSON.stringify(rep.stopped));

    // Every regular file under the home and the work folder: verified byte-identical, or listed with its reason.
    const items: Item[] = rep.items;
    const byPath = new Map(items.map((i) => [i.remotePath, i]));
    const caches = items.filter((i) => i.leftReason === 'cache');
    const nodeFiles = [...walkFiles(sim.home), ...walkFiles(ws)];
    assert.ok(nodeFiles.length > 40, `${nodeFiles.length} files on the node`);
    let verified = 0;
    for (const f of nodeFiles) {
      const cache = caches.find((c) => f.startsWith(c.remotePath + '/'));
      if (cache) continue;
      const it = byPath.get(f);
      assert.ok(it, `${f} is in the manifest`);
      if (it.leftReason) {
        assert.ok(it.reason, `${f} has a reason`);
        continue;
      }
      assert.equal(it.status, 'verified', `${f}: ${it.reason}`);
      assert.ok(readFileSync(it.localPath!).equals(readFileSync(f)), `${f} byte-identical`);
      verified++;
    }
    assert.ok(verified > 30, `verified ${verified}`);
    for (const rel of [
      'Makefile',
      'Dockerfile',
      'notes',
      'run_experiment',
      'kernels/attn.cu',
      'templates/chat_template.jinja',
      '.hydra/config.yaml',
    ]) {
      const it = byPath.get(path.join(ws, rel))!;
      assert.equal(it.status, 'verified', rel);
      assert.equal(it.leftReason, null, rel);
    }
    assert.equal(byPath.get(path.join(ws, 'Makefile'))!.kind, 'other');
    const ckpt = byPath.get(path.join(ws, 'checkpoints/drafter-lora/adapter_model.safetensors'))!;
    assert.equal(ckpt.status, 'verified', 'a checkpoint the job wrote is saved');
    assert.equal(ckpt.jobWeights, true);
    const hf = caches.find((c) => c.remotePath === path.join(sim.home, '.cache'));
    assert.ok(hf && hf.size > 32 * 1024, `the cache with the HF model is listed with its size: ${JSON.stringify(hf)}`);
    // Secret stores: listed, never copied.
    for (const rel of ['.ssh/id_ed25519', '.aws/credentials']) {
      const it = byPath.get(path.join(sim.home, rel))!;
      assert.equal(it.leftReason, 'secret-store', rel);
      assert.equal(it.status, 'skipped');
      assert.equal(existsSync(path.join(rep.dest, 'files', sim.home.slice(1), rel)), false, `${rel} not copied`);
    }
    const key = readFileSync(path.join(sim.home, '.ssh/id_ed25519'), 'utf8').split('\n')[1];
    for (const f of walkFiles(rep.dest)) assert.ok(!readFileSync(f, 'utf8').includes(key), `private key in ${f}`);
    // The user's file with a token is copied exactly; the scan names the line and kind, the product's files never the value.
    const env = byPath.get(path.join(ws, '.env'))!;
    assert.deepEqual(env.secrets, [{ line: 2, kind: 'huggingface-token' }]);
    assert.ok(readFileSync(env.localPath!, 'utf8').includes(HF_TOKEN), 'byte-exact copy');
    for (const f of ['salvage-manifest.json', 'SALVAGE.md', 'running-servers.sh', 'environment.json', 'environment.md'])
      assert.ok(!readFileSync(path.join(rep.dest, f), 'utf8').includes(HF_TOKEN), `token in ${f}`);
    assert.equal(
      readFileSync(path.join(rep.dest, '.gitignore'), 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('#'))[0],
      '*',
    );
    const md = readFileSync(path.join(rep.dest, 'SALVAGE.md'), 'utf8');
    assert.match(md, /Safe to shut down/);
    assert.match(md, /working directory of the SGLang server/);
    assert.match(md, /secret-store/);
  });

  it('a rerun on the unchanged, stopped node transfers 0 bytes and gives the same verdict', async () => {
    const r = await cli([...args(), 'salvage', 'simnode', '--dest', dest(), '--yes', '--json'], { timeoutMs: 180_000 });
    const rep = JSON.parse(r.stdout);
    assert.equal(rep.verdict, 'safe', `${JSON.stringify(rep.reasonDetails)} writers: ${JSON.stringify(rep.writers)}`);
    assert.equal(r.code, 0);
    // which files changed on the node after the safe verdict (size or mtime), to tell a late writer from a resume bug
    const was = new Map((afterStop?.items ?? []).map((i: Item & { size: number; mtime: string }) => [i.remotePath, i]));
    const changed = rep.items
      .filter((i: Item & { size: number; mtime: string }) => {
        const w = was.get(i.remotePath) as (Item & { size: number; mtime: string }) | undefined;
        return !w || w.size !== i.size || w.mtime !== i.mtime;
      })
      .map((i: Item & { size: number; mtime: string }) => `${i.remotePath} ${i.size} ${i.mtime}`);
    assert.deepEqual(rep.stats, { bytesTransferred: 0, filesTransferred: 0 }, `changed since the safe run: ${changed.join('; ')}`);
    assert.ok(
      rep.roots.some((x: { path: string }) => x.path === ws),
      'the work folder is remembered after its server stopped',
    );
    assert.ok(rep.items.some((i: Item) => i.remotePath === path.join(ws, 'Makefile') && i.status === 'verified'));
  });

  it('a hit listing bound makes the verdict unsafe / listing-truncated', async () => {
    const r = await cli([...args(), 'salvage', 'simnode', '--dest', path.join(base, 'bounded'), '--yes', '--json', '--max-files', '10'], {
      timeoutMs: 180_000,
    });
    assert.equal(r.code, 5, r.stderr);
    const rep = JSON.parse(r.stdout);
    assert.equal(rep.verdict, 'unsafe');
    assert.ok(rep.reasons.includes('listing-truncated'), JSON.stringify(rep.reasons));
    assert.match(rep.reasonDetails.find((d: { code: string }) => d.code === 'listing-truncated').message, /--max-files/);
    assert.ok(rep.listing.notListed > 0);
  });

  it('--redact writes redacted copies, marked in the manifest; --no-gitignore writes no .gitignore', async () => {
    const r = await cli(
      [...args(), 'salvage', 'simnode', '--dest', path.join(base, 'redacted'), '--yes', '--json', '--redact', '--no-gitignore'],
      { timeoutMs: 180_000 },
    );
    const rep = JSON.parse(r.stdout);
    const env = rep.items.find((i: Item) => i.remotePath === path.join(ws, '.env'));
    assert.equal(env.redacted, true);
    assert.ok(!readFileSync(env.localPath, 'utf8').includes(HF_TOKEN));
    assert.equal(
      env.sha256,
      spawnSync('sha256sum', [path.join(ws, '.env')])
        .stdout.toString()
        .split(' ')[0],
      "the node's hash",
    );
    assert.equal(existsSync(path.join(rep.dest, '.gitignore')), false);
    assert.ok(lstatSync(rep.dest).isDirectory());
  });
});
