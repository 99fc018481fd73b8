/**
 * `gpu-sessions guard` over a REAL OpenSSH sshd (user gs47guard) and s3rver (issue 47): the guard is started,
 * the CLI exits (its connection closed), the user's SSH access is taken away, and the guard alone copies the new
 * files, verified, to a folder on the node and to S3; a second start does not start a second guard; job done →
 * final sync → safe → the provider stand-in (a fake runpodctl) records exactly one stop; SIGTERM → last-gasp
 * sync; --until stops it; status after reconnecting shows all of it.
 */
import { Watch } from '../helpers/watchCli';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { S3rverHandle, createBucket, s3Env, startS3rver, testS3Client } from '../helpers/s3rver';
import { SimNode, putOnNode, startSimNode, testUser } from '../helpers/simnode';
import { sleep, waitFor } from '../helpers/wait';

const USER = testUser('gs47guard');
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

interface StatusJson {
  node: string;
  running: boolean;
  pid: number | null;
  settings: { target: string; whenDone: string; intervalS: number; until: string | null } | null;
  lastVerifiedSync: { at: string; files: number; target: string } | null;
  bytesAtRisk: number | null;
  lastCycle: string | null;
  startedAt: string | null;
  summary: string;
  journal: Array<{ t: string; event: string; [k: string]: unknown }>;
}

describe('gpu-sessions guard over a real OpenSSH sshd', function () {
  this.timeout(240_000);
  let sim: SimNode;
  let s3: S3rverHandle | null = null;
  const args = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile, '--roots', '~/job'];
  const put = (rel: string, body: string) => putOnNode(sim, rel, body);
  const guard = async (sub: string, extra: string[] = [], env?: NodeJS.ProcessEnv) => {
    const r = await cli([...args(), 'guard', 'simnode', sub, ...extra, '--json'], { timeoutMs: 90_000, env });
    return { code: r.code, out: r.stdout ? (JSON.parse(r.stdout) as Record<string, unknown>) : {}, stderr: r.stderr };
  };
  const status = async () => (await guard('status')).out as unknown as StatusJson;
  const guardProcs = () => spawnSync('pgrep', ['-u', USER, '-f', 'guard.py run'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);

  before(async () => {
    sim = await startSimNode({ user: 'gs47guard', startServers: false, gpuCount: 1 });
    put('job/out/batch_000.jsonl', '{"response":"a"}\n');
  });
  after(async () => {
    spawnSync('pkill', ['-u', USER, '-f', 'guard.py run']);
    await sim?.stop();
    await s3?.stop();
  });
  afterEach(async () => {
    await guard('stop');
  });

  it('--to DIR_ON_NODE: copies new files verified with no client connected; one guard; status; stop', async () => {
    const r = await guard('start', ['--to', '~/vol', '--interval', '2']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.out.started, true, JSON.stringify(r.out));
    const pid = r.out.pid as number;
    assert.ok(pid > 0);
    // the CLI has exited: nothing of the laptop is connected; a new batch appears, verified, in the volume
    const body = '{"response":"b"}\n'.repeat(100);
    put('job/out/batch_001.jsonl', body);
    const copy = path.join(sim.home, 'vol', sim.home.slice(1), 'job/out/batch_001.jsonl');
    await waitFor('the guard to copy the new batch', () => existsSync(copy) && readFileSync(copy, 'utf8') === body, 8_000);
    // a second start reports the running guard and starts nothing
    const again = await guard('start', ['--to', '~/other']);
    assert.equal(again.code, 0);
    assert.equal(again.out.alreadyRunning, true);
    assert.equal(again.out.started, false);
    assert.equal(again.out.pid, pid);
    assert.equal(guardProcs().length, 1, `guard processes: ${guardProcs().join(',')}`);
    const st = await waitFor(
      'a verified sync in the status',
      async () => {
        const s = await status();
        return s.lastVerifiedSync && s.bytesAtRisk === 0 ? s : null;
      },
      10_000,
    );
    assert.equal(st.running, true);
    assert.equal(st.pid, pid);
    assert.equal(st.settings?.target, '~/vol');
    assert.ok(st.journal.some((e) => e.event === 'started'));
    assert.ok(st.journal.some((e) => e.event === 'sync' && Number(e.copied) >= 1));
    // an unchanged file is never copied again: no new sync event over two more intervals
    const syncs = st.journal.filter((e) => e.event === 'sync').length;
    await sleep(4500);
    assert.equal((await status()).journal.filter((e) => e.event === 'sync').length, syncs);
    // the guard's files are private
    const dir = path.join(sim.home, '.gpu-sessions/guard');
    assert.equal(execFileSync('stat', ['-c', '%a', dir], { encoding: 'utf8' }).trim(), '700');
    assert.equal(execFileSync('stat', ['-c', '%a', path.join(dir, 'config.json')], { encoding: 'utf8' }).trim(), '600');
    // `watch` reports the guard: what it did so far, in one line (issue 47, laptop side)
    const w = new Watch(sim, ['--interval', '1'], {});
    try {
      const line = await waitFor(
        'a guard-summary line from watch',
        () => w.lines.find((l) => (l.type as string) === 'guard-summary'),
        30_000,
      );
      assert.equal((line as unknown as { running: boolean }).running, true);
      assert.match(String((line as unknown as { summary: string }).summary), /files? copied, verified/);
    } finally {
      await w.stop();
    }
    const stop = await guard('stop');
    assert.equal(stop.code, 0);
    assert.equal(stop.out.wasRunning, true);
    assert.equal(stop.out.stopped, true);
    assert.equal(guardProcs().length, 0);
    const after = await status();
    assert.equal(after.running, false);
    assert.ok(after.journal.some((e) => e.event === 'stopped'));
  });

  it('--data: degenerate rows → a journal event; --idle with no writer → job done, --when-done notify records it; --yes replaces', async () => {
    put('job/out/results.jsonl', '{"response":"OK."}\n'.repeat(120));
    const r = await guard('start', ['--to', '~/vol4', '--interval', '1', '--data', '~/job/out/results.jsonl', '--idle', '0.05']);
    assert.equal(r.out.started, true, JSON.stringify(r.out));
    const s = await waitFor(
      'the data event and the job done',
      async () => {
        const x = await status();
        return x.journal.some((e) => e.event === 'data-degenerate') && x.journal.some((e) => e.event === 'job-done') ? x : null;
      },
      20_000,
      500,
    );
    const bad = s.journal.find((e) => e.event === 'data-degenerate')!;
    assert.equal(bad.path, path.join(sim.home, 'job/out/results.jsonl'));
    assert.match(String(bad.reasons), /topResponse 100%/);
    const done = s.journal.find((e) => e.event === 'job-done')!;
    assert.equal(done.verdict, 'safe');
    assert.equal(done.whenDone, 'notify');
    assert.match(String(done.why), /no writer/);
    // notify records it and keeps guarding
    assert.equal(s.running, true);
    assert.ok(!s.journal.some((e) => String(e.event).startsWith('rental-')));
    // --yes replaces the running guard's settings: one guard, a new pid
    const again = await guard('start', ['--to', '~/vol5', '--interval', '5', '--yes']);
    assert.equal(again.out.started, true, JSON.stringify(again.out));
    assert.equal(again.out.replaced, true);
    assert.notEqual(again.out.pid, r.out.pid);
    assert.equal(guardProcs().length, 1);
    assert.equal((await status()).settings?.target, '~/vol5');
  });

  it('between syncs: under 5 % of one core and 100 MB; a crash of its worker is journaled and it restarts', async () => {
    const r = await guard('start', ['--to', '~/vol7', '--interval', '600']);
    assert.equal(r.out.started, true, JSON.stringify(r.out));
    const pid = r.out.pid as number;
    const worker = () =>
      spawnSync('pgrep', ['-u', USER, '-f', 'guard.py work'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
    await waitFor('the first pass', async () => (await status()).lastCycle !== null || null, 15_000, 300);
    const [w] = worker();
    const ticks = (x: number) => {
      const f = readFileSync(`/proc/${x}/stat`, 'utf8').split(') ')[1].split(' ');
      return Number(f[11]) + Number(f[12]);
    };
    const rss = (x: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${x}/status`, 'utf8'))![1]) * 1024;
    const t0 = ticks(pid) + ticks(w);
    await sleep(3000);
    const cpu = (ticks(pid) + ticks(w) - t0) / 100 / 3;
    assert.ok(cpu < 0.05, `CPU between syncs: ${(cpu * 100).toFixed(1)} % of one core`);
    assert.ok(rss(pid) + rss(w) < 100 * 1024 * 1024, `memory: ${rss(pid) + rss(w)} bytes`);
    // its worker dies (the OOM killer, a bug): journaled, restarted, the same guard
    process.kill(w, 'SIGKILL');
    const s = await waitFor(
      'the restart',
      async () => {
        const x = await status();
        return x.journal.some((e) => e.event === 'crashed') && worker().length === 1 && worker()[0] !== w ? x : null;
      },
      15_000,
      300,
    );
    assert.equal(s.running, true);
    assert.equal(s.pid, pid);
    assert.equal(s.journal.filter((e) => e.event === 'crashed').at(-1)?.restarts, 1);
    assert.equal(guardProcs().length, 1);
  });

  it('a file being appended to all the time: its bytes are copied every pass, and the last verified sync still moves', async () => {
    const grow = put('job/out/growing.jsonl', '');
    const stopAt = Date.now() + 7000;
    const writer = (async () => {
      while (Date.now() < stopAt) {
        appendFileSync(grow, '{"response":"row"}\n'.repeat(2000));
        await sleep(5);
      }
    })();
    const r = await guard('start', ['--to', '~/vol9', '--interval', '1']);
    assert.equal(r.out.started, true, JSON.stringify(r.out));
    await sleep(4000);
    const during = await status();
    await writer;
    assert.equal(during.lastVerifiedSync?.target, '~/vol9', JSON.stringify(during));
    assert.ok(during.startedAt && during.lastVerifiedSync.at >= during.startedAt);
    const final = await waitFor(
      'the whole file verified once it stops growing',
      async () => {
        const s = await status();
        return s.bytesAtRisk === 0 ? s : null;
      },
      10_000,
      500,
    );
    assert.ok(final.lastVerifiedSync);
    const copy = path.join(sim.home, 'vol9', sim.home.slice(1), 'job/out/growing.jsonl');
    assert.equal(sha(readFileSync(copy)), sha(readFileSync(grow)));
  });

  it('a pass that fails (its listing cut short) is journaled once and the guard keeps going', async () => {
    const r = await guard('start', ['--to', '~/vol10', '--interval', '1']);
    assert.equal(r.out.started, true, JSON.stringify(r.out));
    writeFileSync(path.join(sim.home, '.gpu-sessions/guard/listing.sh'), 'exit 3\n');
    await waitFor('the failed pass', async () => (await status()).journal.some((e) => e.event === 'cycle-failed') || null, 10_000, 300);
    await sleep(3000);
    const s = await status();
    assert.equal(s.running, true);
    assert.equal(s.journal.filter((e) => e.event === 'cycle-failed').length, 1);
    assert.match(String(s.journal.find((e) => e.event === 'cycle-failed')?.error), /cut short/);
  });

  it('--until stops the guard by itself; a secret store is never copied', async () => {
    put('job/.aws/credentials', '[default]\naws_secret_access_key=abc\n');
    const until = new Date(Date.now() + 5_000).toISOString();
    const r = await guard('start', ['--to', '~/vol2', '--interval', '1', '--until', until]);
    assert.equal(r.out.started, true, JSON.stringify(r.out));
    await waitFor('the guard to stop at --until', () => guardProcs().length === 0, 20_000);
    const s = await status();
    assert.equal(s.running, false);
    assert.ok(s.journal.some((e) => e.event === 'until-reached'));
    assert.ok(existsSync(path.join(sim.home, 'vol2', sim.home.slice(1), 'job/out/batch_001.jsonl')));
    assert.ok(!existsSync(path.join(sim.home, 'vol2', sim.home.slice(1), 'job/.aws/credentials')));
  });

  it('--s3: with SSH access taken away, new batches land in S3 verified; job done → one provider stop; status after reconnecting', async () => {
    s3 = await startS3rver();
    await createBucket(s3.endpoint, 'guard-bucket');
    // the provider stand-in: a pod's environment and a runpodctl that records every call
    put('.ssh/environment', 'RUNPOD_POD_ID=pod47test\nRUNPOD_API_KEY=rpa_TESTKEY0123456789\n');
    chmodSync(path.join(sim.home, '.ssh/environment'), 0o600);
    put(
      'bin/runpodctl',
      `#!/bin/sh\necho "$*" >> "$HOME/runpodctl.calls"\ncase "$1 $2" in\n` +
        `  "pod get") if [ -f "$HOME/stopped" ]; then echo '{"desiredStatus": "EXITED", "id": "pod47test"}'; ` +
        `else echo '{"desiredStatus": "RUNNING", "id": "pod47test"}'; fi;;\n` +
        `  "pod stop") touch "$HOME/stopped"; echo '{"desiredStatus": "EXITED"}';;\nesac\n`,
    );
    chmodSync(path.join(sim.home, 'bin/runpodctl'), 0o755);
    const r = await guard(
      'start',
      ['--s3', 's3://guard-bucket/run1', '--s3-endpoint', s3.endpoint, '--interval', '2', '--when-done', 'stop'],
      s3Env(),
    );
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.out.started, true, JSON.stringify(r.out));
    // the laptop reconnects and starts it again: the running guard is kept and gets a new credential
    const again = await guard(
      'start',
      ['--s3', 's3://guard-bucket/run1', '--s3-endpoint', s3.endpoint, '--interval', '2', '--when-done', 'stop'],
      s3Env(),
    );
    assert.equal(again.out.alreadyRunning, true);
    assert.equal(again.out.pid, r.out.pid);
    assert.match(String(again.out.renewed), /^\d{4}-\d\d-\d\dT/);
    await waitFor(
      'the renewal journaled',
      async () => (await status()).journal.some((e) => e.event === 'credential-renewed') || null,
      10_000,
      300,
    );
    const keys = readFileSync(sim.sshd.authorizedKeys);
    writeFileSync(sim.sshd.authorizedKeys, ''); // the laptop is gone
    try {
      const body = '{"response":"c"}\n'.repeat(1000);
      put('job/out/batch_002.jsonl', body);
      const c = testS3Client(s3.endpoint);
      const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
      const key = `run1/${sim.home.slice(1)}/job/out/batch_002.jsonl`;
      const head = await waitFor(
        'the new batch in S3',
        async () => c.send(new HeadObjectCommand({ Bucket: 'guard-bucket', Key: key })).catch(() => null),
        10_000,
        300,
      );
      assert.equal(head.Metadata?.sha256, sha(body));
      assert.equal(head.ContentLength, Buffer.byteLength(body));
      // job done: the progress file says so → final sync → safe → exactly one stop
      put('job/out/progress.json', JSON.stringify({ status: 'done', completed: 3 }));
      await waitFor('the provider stop', () => existsSync(path.join(sim.home, 'stopped')), 15_000);
      await waitFor('the guard to end', () => guardProcs().length === 0, 15_000);
      await sleep(500);
      const calls = readFileSync(path.join(sim.home, 'runpodctl.calls'), 'utf8').split('\n').filter(Boolean);
      assert.deepEqual(
        calls.filter((l) => l.startsWith('pod stop')),
        ['pod stop pod47test'],
      );
      const pj = await c.send(new HeadObjectCommand({ Bucket: 'guard-bucket', Key: `run1/${sim.home.slice(1)}/job/out/progress.json` }));
      assert.ok(pj.Metadata?.sha256);
      c.destroy();
    } finally {
      writeFileSync(sim.sshd.authorizedKeys, keys);
    }
    const s = await status();
    assert.equal(s.running, false);
    const ev = s.journal.map((e) => e.event);
    assert.ok(ev.includes('job-done'), ev.join(','));
    assert.equal(s.journal.find((e) => e.event === 'job-done')?.verdict, 'safe');
    assert.ok(ev.includes('rental-ended'), ev.join(','));
    assert.ok(ev.indexOf('rental-ending') < ev.indexOf('rental-ended'), ev.join(','));
    assert.match(s.summary, /job done \d\d:\d\d · synced · rental stopped \d\d:\d\d/);
    // no secret in the journal or status
    assert.ok(!JSON.stringify(s).includes('rpa_TESTKEY0123456789'));
  });

  it('job done with a file that cannot be copied: unsafe → the rental is kept (no stop), and the guard keeps guarding', async () => {
    writeFileSync(path.join(sim.home, 'runpodctl.calls'), '');
    const locked = put('job/out/locked.bin', 'x');
    chmodSync(locked, 0o000);
    try {
      const r = await guard('start', ['--to', '~/vol6', '--interval', '1', '--when-done', 'stop']);
      assert.equal(r.out.started, true, JSON.stringify(r.out));
      put('job/out/progress.json', JSON.stringify({ status: 'done', completed: 4 }));
      const s = await waitFor(
        'the rental kept',
        async () => {
          const x = await status();
          return x.journal.some((e) => e.event === 'rental-kept') ? x : null;
        },
        15_000,
        500,
      );
      await sleep(2500); // more cycles: no stop, no second rental-kept
      const again = await status();
      assert.equal(again.running, true);
      assert.equal(s.journal.filter((e) => e.event === 'job-done').at(-1)?.verdict, 'unsafe');
      assert.equal(again.journal.filter((e) => e.event === 'rental-kept').length, 1);
      assert.equal(again.journal.filter((e) => e.event === 'sync' && Number(e.failed) > 0 && e.t > s.journal.at(-1)!.t).length, 0);
      assert.equal(readFileSync(path.join(sim.home, 'runpodctl.calls'), 'utf8'), '');
    } finally {
      chmodSync(locked, 0o644);
    }
  });

  it("MCP: guard_start and guard_stop need confirm: true; guard_status answers the CLI's JSON", async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');
    const client = new Client({ name: 'gs-guard-test', version: '1.0.0' });
    await client.connect(new StdioClientTransport({ command: process.execPath, args: [CLI, ...args(), 'mcp'], stderr: 'ignore' }));
    type R = { isError?: boolean; structuredContent?: Record<string, unknown> };
    const call = async (name: string, a: Record<string, unknown>) =>
      (await client.callTool({ name, arguments: a }, undefined, { timeout: 60_000 })) as R;
    try {
      const refused = await call('guard_start', { node: 'simnode', to: '~/vol8', confirm: false });
      assert.equal(refused.isError, true);
      assert.equal(guardProcs().length, 0);
      const started = await call('guard_start', { node: 'simnode', to: '~/vol8', intervalS: 2, confirm: true });
      assert.ok(!started.isError, JSON.stringify(started));
      assert.equal(started.structuredContent?.started, true);
      const st = await call('guard_status', { node: 'simnode' });
      assert.equal(st.structuredContent?.running, true);
      assert.equal((st.structuredContent?.settings as { target: string }).target, '~/vol8');
      assert.equal((await call('guard_stop', { node: 'simnode', confirm: false })).isError, true);
      assert.equal(guardProcs().length, 1);
      const stopped = await call('guard_stop', { node: 'simnode', confirm: true });
      assert.equal(stopped.structuredContent?.stopped, true);
      assert.equal(guardProcs().length, 0);
    } finally {
      await client.close();
    }
  });

  it('SIGTERM to the guard (a shutdown): the newest bytes are in S3 within 20 s', async () => {
    assert.ok(s3);
    const r = await guard('start', ['--s3', 's3://guard-bucket/run2', '--s3-endpoint', s3.endpoint, '--interval', '600'], s3Env());
    assert.equal(r.out.started, true, JSON.stringify(r.out));
    await sleep(1500); // its first pass
    const body = '{"response":"late"}\n'.repeat(50);
    put('job/out/batch_003.jsonl', body);
    const t0 = Date.now();
    process.kill(r.out.pid as number, 'SIGTERM');
    await waitFor('the guard to end', () => guardProcs().length === 0, 20_000);
    assert.ok(Date.now() - t0 < 20_000);
    const c = testS3Client(s3.endpoint);
    const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
    const head = await c.send(new HeadObjectCommand({ Bucket: 'guard-bucket', Key: `run2/${sim.home.slice(1)}/job/out/batch_003.jsonl` }));
    assert.equal(head.Metadata?.sha256, sha(body));
    c.destroy();
    const s = await status();
    assert.ok(s.journal.some((e) => e.event === 'last-gasp'));
  });
});
