/**
 * The live data guard over a REAL OpenSSH sshd (user gs26watch): `watch --data` gives exactly one transition
 * when a clean file turns degenerate, within two intervals; and the simulator's `sim-fault data-degenerate`
 * makes the generation client write the seed's `OK.` rows, which `data` (with no PATH: discovery finds the
 * client's open file and the completions/ folder) calls degenerate.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFileSync, chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { plantedLines } from '../helpers/dataRows';
import { SimNode, startSimNode, testUser } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const USER = testUser('gs26watch');

interface Line {
  type: string;
  subject?: string;
  path?: string;
  from?: string;
  to?: string;
  message?: string;
  data?: Array<{ path: string; verdict: string }>;
}

describe('the live data guard over a real OpenSSH sshd', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let ws: string;
  const args = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    ws = mkdtempSync(path.join(os.tmpdir(), 'gs26-workspace-'));
    chmodSync(ws, 0o755);
    sim = await startSimNode({ user: USER, gpuCount: 1, startClient: true, workspace: ws });
  });
  after(async () => {
    await sim?.stop();
    if (ws) rmSync(ws, { recursive: true, force: true });
  });

  it('watch --data: a clean file turning degenerate gives exactly one transition, within two intervals', async () => {
    const file = path.join(sim.home, 'gen.jsonl');
    writeFileSync(file, plantedLines('openai-chat', 800, {}, 21).join(''));
    execFileSync('chown', [`${USER}:${USER}`, file]);
    const child = spawn(
      process.execPath,
      [path.join(ROOT, 'dist', 'cli.js'), ...args(), 'watch', 'simnode', '--json', '--interval', '1', '--data', file],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    const lines: Line[] = [];
    let buf = '';
    let stderr = '';
    child.stdout.on('data', (b) => {
      buf += b;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, i);
        buf = buf.slice(i + 1);
        try {
          lines.push(JSON.parse(l) as Line);
        } catch {
          /* not a line of ours */
        }
      }
    });
    child.stderr.on('data', (b) => (stderr += b));
    const exited = new Promise<void>((r) => child.on('close', () => r()));
    try {
      const samplesWithData = () => lines.filter((l) => l.type === 'sample' && l.data?.some((f) => f.path === file));
      await waitFor(`two samples with the file judged (stderr: ${stderr})`, () => samplesWithData().length >= 2, 60_000);
      assert.equal(
        samplesWithData()
          .at(-1)!
          .data!.find((f) => f.path === file)!.verdict,
        'ok',
      );
      // the model starts answering `OK.`: 600 rows at once
      const t0 = Date.now();
      appendFileSync(file, plantedLines('openai-chat', 600, { top: 1 }, 22, 800).join(''));
      await waitFor('the data transition', () => lines.some((l) => l.type === 'transition' && l.subject === 'data'), 30_000);
      const took = Date.now() - t0;
      const seen = samplesWithData().length;
      await waitFor('three more samples', () => samplesWithData().length >= seen + 3, 30_000);
      const tr = lines.filter((l) => l.type === 'transition' && l.subject === 'data');
      assert.equal(tr.length, 1, JSON.stringify(tr));
      assert.equal(tr[0].path, file);
      assert.equal(tr[0].from, 'data-ok');
      assert.equal(tr[0].to, 'data-degenerate');
      assert.match(tr[0].message!, /the same `OK\.`/);
      // two intervals of 1 s, plus the poll's own time (probe + check) on a busy machine
      assert.ok(took < 2 * 1000 + 6000, `transition after ${took} ms`);
    } finally {
      child.kill('SIGINT');
      await exited;
    }
  });

  it('sim-fault data-degenerate 0.9: the client writes the seed `OK.` rows, and data (discovering the files) says degenerate', async () => {
    const out = path.join(sim.layout.workspace!, 'out', 'results.jsonl');
    await waitFor('the client to write a dozen rows', () => readFileSync(out, 'utf8').split('\n').length > 12, 30_000);
    const before = await cli([...args(), 'data', 'simnode', '--json']);
    assert.equal(before.code, 0, before.stdout + before.stderr);
    const r0 = JSON.parse(before.stdout) as { files: Array<{ path: string; verdict: string; foundBy: string; format: string }> };
    const client = r0.files.find((f) => f.path === out);
    assert.ok(client, `discovery finds the client's open file: ${before.stdout}`);
    assert.match(client.foundBy, /open by process/);
    assert.equal(client.verdict, 'ok');
    assert.ok(
      r0.files.some((f) => /\/completions\/batch_000000\.jsonl$/.test(f.path) && f.verdict === 'ok'),
      'the completions/ folder is found and its batches are fine',
    );

    const f = sim.sshd.ssh('sim-fault data-degenerate 0.9 || ~/bin/sim-fault data-degenerate 0.9');
    assert.equal(f.status, 0, f.stderr);
    const rows0 = readFileSync(out, 'utf8').split('\n').length;
    // 90 % of the new rows are `OK.`: enough of them that they are over 20 % of the sample
    const want = rows0 + Math.max(30, Math.ceil(rows0 * 0.6));
    await waitFor('enough new rows', () => readFileSync(out, 'utf8').split('\n').length > want, 120_000);
    const after = await cli([...args(), 'data', 'simnode', out, '--json']);
    assert.equal(after.code, 7, after.stdout + after.stderr);
    const r1 = JSON.parse(after.stdout) as { files: Array<{ verdict: string; topResponse: { text: string } }> };
    assert.equal(r1.files[0].verdict, 'degenerate');
    assert.equal(r1.files[0].topResponse.text, 'OK.');
    sim.sshd.ssh('sim-fault data-degenerate 0 || ~/bin/sim-fault data-degenerate 0');
  });
});
