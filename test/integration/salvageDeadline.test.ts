/**
 * Deadline-aware salvage (issue 17, item 4), over a REAL OpenSSH sshd: with `--deadline`, the plan against
 * the rental's end is stated before the bulk data (from the rate measured on the steps before it) and what
 * will not make it is named — in `--json` (`deadline`), on stderr and in SALVAGE.md.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { salvageArgs } from '../helpers/salvageArgs';
import { SimNode, startSimNode } from '../helpers/simnode';

describe('salvage --deadline: most valuable per byte first, what will not make it named (real sshd)', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let base: string;
  const bulk = 'completions/hidden_states_bulk.bin';

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({
      gpuCount: 1,
      beforeStart: (home) => {
        writeFileSync(path.join(home, bulk), randomBytes(9 * 1024 * 1024));
        const env = path.join(home, '.sim', 'env.sh');
        writeFileSync(env, readFileSync(env, 'utf8') + 'export SGLANG_SIM_RUNNING=0\n');
      },
    });
    base = mkdtempSync(path.join(os.tmpdir(), 'gs-deadline-'));
  });
  after(async () => {
    await sim?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  const salvage = (dest: string, deadline: string) =>
    cli(salvageArgs(sim, dest, '--yes', '--json', '--include-large', '--deadline', deadline), { timeoutMs: 240_000 });

  it('a rental already over: every bulk file is named before it travels, the largest last; SALVAGE.md says so', async () => {
    const r = await salvage(path.join(base, 'over'), new Date(Date.now() - 60_000).toISOString());
    const rep = JSON.parse(r.stdout);
    const d = rep.deadline;
    assert.ok(d, `deadline plan in --json: ${r.stderr.slice(-800)}`);
    assert.equal(d.fits, false);
    assert.ok(d.secondsLeft <= 0);
    const names = d.wontMakeIt.map((w: { remotePath: string }) => w.remotePath);
    assert.equal(names[names.length - 1], path.join(sim.home, bulk), `the largest goes last: ${names.join(', ')}`);
    const sizes = d.wontMakeIt.map((w: { size: number }) => w.size);
    assert.deepEqual(
      sizes,
      [...sizes].sort((a, b) => a - b),
      'smaller first (value per byte)',
    );
    const kindOf = new Map(rep.items.map((i: { remotePath: string; kind: string }) => [i.remotePath, i.kind]));
    const valuable = names.filter((n: string) =>
      ['script', 'launch-script', 'python', 'log', 'progress', 'config', 'patch'].includes(String(kindOf.get(n))),
    );
    assert.deepEqual(valuable, [], 'scripts, configs, progress and logs are not bulk: they went before the plan');
    const md = readFileSync(path.join(rep.dest, 'SALVAGE.md'), 'utf8');
    assert.match(md, /Rental deadline/);
    assert.match(md, /were not expected to make it/);
    assert.ok(md.includes('hidden_states_bulk.bin'));
    // Still tried, most valuable first: the node is still there.
    const item = rep.items.find((i: { remotePath: string }) => i.remotePath === path.join(sim.home, bulk));
    assert.equal(item.status, 'verified');
  });

  it('a deadline far ahead: not said to be missed', async () => {
    const r = await salvage(path.join(base, 'far'), new Date(Date.now() + 86_400_000).toISOString());
    const rep = JSON.parse(r.stdout);
    assert.ok(rep.deadline, r.stderr.slice(-800));
    assert.notEqual(rep.deadline.fits, false, JSON.stringify(rep.deadline).slice(0, 500));
    assert.deepEqual(rep.deadline.wontMakeIt, []);
    console.log(`      rate before the bulk data: ${rep.deadline.rateBps ?? 'unknown'} B/s, bulk ${rep.deadline.remainingBytes} B`);
  });
});
