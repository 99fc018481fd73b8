/**
 * The node guard without the laptop (issue 47), over a REAL OpenSSH sshd (user gsgrest) and s3rver:
 * - `restore --from-guard s3://bucket/prefix DIR NODE` with no local salvage: the guard's own index in S3 names
 *   what it verified; each file is read back, checked against the guard's SHA-256, written only under DIR, and
 *   restored byte-exact (name and mode); a tampered index (hostile paths and keys) is refused entry by entry, named.
 * - The laptop side dies (SIGKILL to `guard start` mid-run and to `watch`) and the user's SSH access is taken
 *   away: the node's guard still copies a new batch to S3, verified, and runs its data check; `guard status` after
 *   reconnecting reads all of it.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { S3rverHandle, createBucket, s3Env, startS3rver, testS3Client } from '../helpers/s3rver';
import { SimNode, putOnNode, startSimNode, testUser } from '../helpers/simnode';
import { Watch } from '../helpers/watchCli';
import { sleep, waitFor } from '../helpers/wait';

const USER = testUser('gsgrest');
const BUCKET = 'grest';
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const DIST_CLI = path.resolve(__dirname, '..', '..', '..', 'dist', 'cli.js');

interface RestoreJson {
  from: { node: string; run: string; guard?: string };
  files: { uploaded: number; failed: Array<{ path: string; reason: string }> };
  fromGuard?: { fetched: number; present: number; failed: number };
  exitCode: number;
}

interface StatusJson {
  running: boolean;
  pid: number | null;
  lastVerifiedSync: { at: string; files: number } | null;
  bytesAtRisk: number | null;
  journal: Array<{ t: string; event: string; [k: string]: unknown }>;
}

/** Every file under dir, relative. */
function walk(dir: string, rel = ''): string[] {
  return readdirSync(path.join(dir, rel), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? walk(dir, path.join(rel, e.name)) : [path.join(rel, e.name)],
  );
}

describe('the node guard without the laptop, over a real OpenSSH sshd and s3rver', function () {
  this.timeout(240_000);
  let sim: SimNode;
  let s3: S3rverHandle;
  let root: string;
  const base = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];
  const put = (rel: string, body: string) => putOnNode(sim, rel, body);
  const guard = async (sub: string, extra: string[] = []) => {
    const r = await cli([...base(), '--roots', '~/job', 'guard', 'simnode', sub, ...extra, '--json'], { timeoutMs: 90_000, env: s3Env() });
    return { code: r.code, out: r.stdout ? (JSON.parse(r.stdout) as Record<string, unknown>) : {}, stderr: r.stderr };
  };
  const status = async () => (await guard('status')).out as unknown as StatusJson;
  const guardProcs = () => spawnSync('pgrep', ['-u', USER, '-f', 'guard.py run'], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean);
  const restore = async (prefix: string, dir: string, extra: string[] = []) => {
    const r = await cli(
      [
        ...base(),
        'restore',
        '--from-guard',
        `s3://${BUCKET}/${prefix}`,
        '--s3-endpoint',
        s3.endpoint,
        dir,
        'simnode',
        '--map',
        `${sim.home}/job=${sim.home}/restored`,
        '--yes',
        '--json',
        ...extra,
      ],
      { timeoutMs: 120_000, env: s3Env() },
    );
    return { code: r.code, j: r.stdout ? (JSON.parse(r.stdout) as RestoreJson) : null, stderr: r.stderr };
  };
  const odd = 'out/name with spaces é\tand tab.jsonl';
  const work: Record<string, string> = {
    'job/train.py': '#!/usr/bin/env python3\nprint("train")\n',
    'job/out/batch_000.jsonl': '{"response":"a"}\n'.repeat(50),
    [`job/${odd}`]: '{"response":"odd"}\n',
  };

  before(async () => {
    sim = await startSimNode({ user: 'gsgrest', startServers: false, gpuCount: 1 });
    for (const [rel, body] of Object.entries(work)) put(rel, body);
    chmodSync(path.join(sim.home, 'job/train.py'), 0o755);
    s3 = await startS3rver();
    await createBucket(s3.endpoint, BUCKET);
    root = mkdtempSync(path.join(os.tmpdir(), 'gs-grest-'));
  });
  after(async () => {
    await guard('stop').catch(() => undefined);
    spawnSync('pkill', ['-u', USER, '-f', 'guard.py run']);
    await sim?.stop();
    await s3?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("restore --from-guard: no salvage; the guard's index in S3, each file checked, written only under DIR; hostile entries refused", async () => {
    const r = await guard('start', ['--s3', `s3://${BUCKET}/run`, '--s3-endpoint', s3.endpoint, '--interval', '2']);
    assert.equal(r.code, 0, r.stderr);
    const indexKey = 'run/.gpu-sessions-guard/index.json';
    const c = testS3Client(s3.endpoint);
    const { GetObjectCommand, HeadObjectCommand, PutObjectCommand } = await import('@aws-sdk/client-s3');
    const readIndex = async () => {
      const o = await c.send(new GetObjectCommand({ Bucket: BUCKET, Key: indexKey })).catch(() => null);
      return o ? (JSON.parse(await o.Body!.transformToString()) as { files: Array<Record<string, unknown>> }) : null;
    };
    await waitFor('every work file in the guard index in S3', async () => ((await readIndex())?.files.length ?? 0) >= 3, 30_000, 500);
    assert.equal((await guard('stop')).code, 0);
    const index = (await readIndex())!;
    const head = await c.send(new HeadObjectCommand({ Bucket: BUCKET, Key: indexKey }));
    assert.ok(head.Metadata?.sha256, 'the index carries its SHA-256');

    // 1. a clean restore: every file, byte-exact name and mode, nothing written outside DIR
    const dir = path.join(root, 'run1');
    const a = await restore('run', dir);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.j!.exitCode, 0);
    assert.deepEqual(a.j!.fromGuard, { fetched: 3, present: 0, failed: 0 }, a.stderr);
    assert.equal(a.j!.from.guard, `s3://${BUCKET}/run/`);
    assert.equal(a.j!.files.uploaded, 3);
    for (const [rel, body] of Object.entries(work))
      assert.equal(readFileSync(path.join(sim.home, 'restored', rel.slice('job/'.length)), 'utf8'), body, rel);
    assert.equal(statSync(path.join(sim.home, 'restored/train.py')).mode & 0o777, 0o755);
    assert.deepEqual(readdirSync(root), ['run1'], 'nothing written beside DIR');
    assert.ok(walk(dir).includes('salvage-manifest.json'));
    // again into the same DIR: the bytes already there are not read again
    const again = await restore('run', dir);
    assert.deepEqual(again.j!.fromGuard, { fetched: 0, present: 3, failed: 0 }, again.stderr);
    assert.equal(again.code, 0);

    // 2. a non-empty folder of something else is refused (usage), nothing read
    const other = path.join(root, 'other');
    mkdirSync(other);
    writeFileSync(path.join(other, 'mine.txt'), 'mine\n');
    const busy = await restore('run', other);
    assert.equal(busy.code, 2, busy.stderr);
    assert.match(busy.stderr, /is not empty/);
    assert.deepEqual(readdirSync(other), ['mine.txt']);

    // 3. a tampered index (whoever can write the bucket): hostile paths and keys refused, each named
    const evil = `gs-evil-${process.pid}-${Date.now()}`;
    const evilBody = 'evil bytes\n';
    const evilKey = `run/tmp/${evil}`;
    await c.send(new PutObjectCommand({ Bucket: BUCKET, Key: evilKey, Body: evilBody, Metadata: { sha256: sha(evilBody) } }));
    const legit = index.files[0];
    const entry = (p: string, key: string) => ({ ...legit, path: p, key, size: evilBody.length, sha256: sha(evilBody) });
    const hostile = {
      ...index,
      files: [
        ...index.files,
        entry(`${sim.home}/job/../../../tmp/${evil}`, evilKey),
        entry(`${sim.home}/job/ok-name`, evilKey),
        entry(`/etc/cron.d/${evil}`, `run/etc/cron.d/${evil}`),
        entry(`${sim.home}/job/${evil}`, `run/../${evil}`),
        { ...legit }, // the same path twice
      ],
    };
    const hb = JSON.stringify(hostile);
    await c.send(new PutObjectCommand({ Bucket: BUCKET, Key: indexKey, Body: hb, Metadata: { sha256: sha(hb) } }));
    const dir2 = path.join(root, 'run2');
    const h = await restore('run', dir2);
    assert.ok(h.j, h.stderr);
    assert.equal(h.code, 1, h.stderr);
    assert.equal(h.j!.exitCode, 1);
    const reasons = h.j!.files.failed.map((f) => `${f.path}: ${f.reason}`);
    const refused = (re: RegExp) =>
      assert.ok(
        reasons.some((x) => re.test(x)),
        `${re} not in:\n${reasons.join('\n')}`,
      );
    refused(/\/\.\.\/.*refused: .*"\." or "\.\." components/);
    refused(/job\/ok-name: refused: .*key .* is not the path's own key under the prefix/);
    refused(/cron\.d.*refused: .*system folder/);
    refused(/refused: .*key "run\/\.\.\//);
    refused(/refused: .*names it twice/);
    assert.equal(h.j!.fromGuard?.fetched, 3, 'the legit files are still restored');
    assert.equal(h.j!.fromGuard?.failed, 5);
    assert.ok(!existsSync(`/tmp/${evil}`) && !existsSync(`/etc/cron.d/${evil}`) && !existsSync(path.join(sim.home, 'restored/ok-name')));
    for (const f of walk(dir2)) assert.ok(!readFileSync(path.join(dir2, f), 'utf8').includes('evil bytes'), `${f} holds the evil bytes`);

    // 4. an index whose bytes are not the SHA-256 stored with it: nothing restored
    await c.send(new PutObjectCommand({ Bucket: BUCKET, Key: indexKey, Body: hb, Metadata: { sha256: sha('other') } }));
    const t = await restore('run', path.join(root, 'run3'));
    assert.notEqual(t.code, 0);
    assert.match(t.stderr, /not the SHA-256 stored with it/);
    // 5. no index at all
    const none = await restore('nothing-here', path.join(root, 'run4'));
    assert.equal(none.code, 2, none.stderr);
    assert.match(none.stderr, /No guard index at s3:\/\/grest\/nothing-here\/\.gpu-sessions-guard\/index\.json/);
    c.destroy();
  });

  it('the laptop side dies (SIGKILL) and SSH access is gone: the node guard still syncs a new batch verified and checks the data', async () => {
    put('job/out/results.jsonl', '{"response":"fine"}\n');
    // `guard start` killed mid-run: once the node's guard process exists, before the CLI has its answer
    const starter = spawn(
      process.execPath,
      [
        DIST_CLI,
        ...base(),
        '--roots',
        '~/job',
        'guard',
        'simnode',
        'start',
        '--s3',
        `s3://${BUCKET}/run2`,
        '--s3-endpoint',
        s3.endpoint,
        '--interval',
        '2',
        '--data',
        '~/job/out/results.jsonl',
        '--json',
      ],
      { env: { ...process.env, ...s3Env() }, stdio: 'ignore' },
    );
    const starterExit = new Promise<NodeJS.Signals | null>((res) => starter.once('exit', (_c, sig) => res(sig)));
    await waitFor('the node guard process', () => guardProcs().length === 1 || null, 60_000, 20);
    starter.kill('SIGKILL');
    assert.equal(await starterExit, 'SIGKILL');
    const pid = Number(guardProcs()[0]);
    // `watch`, the laptop side that reports the guard's events, killed too
    const w = new Watch(sim, ['--interval', '1'], {});
    await waitFor('a guard-summary line from watch', () => w.lines.find((l) => (l.type as string) === 'guard-summary'), 30_000);
    w.proc.kill('SIGKILL');
    await waitFor('watch to end', () => w.exit !== null || w.proc.signalCode !== null || null, 10_000);
    const killedAt = Date.now();
    const keys = readFileSync(sim.sshd.authorizedKeys);
    writeFileSync(sim.sshd.authorizedKeys, ''); // the laptop is gone
    const c = testS3Client(s3.endpoint);
    try {
      const { HeadObjectCommand } = await import('@aws-sdk/client-s3');
      const body = '{"response":"c"}\n'.repeat(500);
      put('job/out/batch_009.jsonl', body);
      // degenerate rows in the checked file: the data check must see them with no laptop
      appendFileSync(path.join(sim.home, 'job/out/results.jsonl'), '{"response":"OK."}\n'.repeat(120));
      const key = `run2/${sim.home.slice(1)}/job/out/batch_009.jsonl`;
      const t0 = Date.now();
      const obj = await waitFor(
        'the new batch in S3',
        () => c.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key })).catch(() => null),
        15_000,
        200,
      );
      assert.equal(obj.Metadata?.sha256, sha(body));
      assert.equal(obj.ContentLength, Buffer.byteLength(body));
      // two intervals (2 s each), and the slack of a pass's own listing on a busy machine
      assert.ok(Date.now() - t0 <= 2 * 2000 + 6000, `it took ${Date.now() - t0} ms (interval 2 s)`);
      await sleep(3000); // a pass or more with no laptop: the data check runs too
      assert.deepEqual(guardProcs(), [String(pid)], 'the same guard runs');
    } finally {
      writeFileSync(sim.sshd.authorizedKeys, keys);
      c.destroy();
    }
    // reconnecting: status reads what it did while the laptop was away
    const s = await waitFor(
      'the data event in the status',
      async () => {
        const x = await status();
        return x.journal.some((e) => e.event === 'data-degenerate') ? x : null;
      },
      20_000,
      500,
    );
    assert.equal(s.running, true);
    assert.equal(s.pid, pid);
    const after = s.journal.filter((e) => Date.parse(e.t) >= Math.floor(killedAt / 1000) * 1000);
    const bad = after.find((e) => e.event === 'data-degenerate');
    assert.ok(bad, `no data-degenerate after the kill: ${JSON.stringify(s.journal.map((e) => [e.t, e.event]))}`);
    assert.equal(bad.path, path.join(sim.home, 'job/out/results.jsonl'));
    assert.ok(
      after.some((e) => e.event === 'sync' && Number(e.copied) >= 1),
      JSON.stringify(after.map((e) => e.event)),
    );
    assert.ok(
      s.lastVerifiedSync && Date.parse(s.lastVerifiedSync.at) >= Math.floor(killedAt / 1000) * 1000,
      JSON.stringify(s.lastVerifiedSync),
    );
  });

  it('job done with nothing listed under the folders: unsafe (nothing-listed), the rental is kept, never ended', async () => {
    mkdirSync(path.join(sim.home, 'emptyjob'), { recursive: true });
    execFileSync('chown', [`${sim.user}:${sim.user}`, path.join(sim.home, 'emptyjob')]);
    const start = await cli(
      [
        ...base(),
        '--roots',
        '~/emptyjob',
        'guard',
        'simnode',
        'start',
        '--to',
        '~/vol0',
        '--interval',
        '1',
        '--idle',
        '0.05',
        '--when-done',
        'stop',
        '--yes',
        '--json',
      ],
      { timeoutMs: 90_000 },
    );
    assert.equal(start.code, 0, start.stderr);
    const s = await waitFor(
      'the job done',
      async () => {
        const x = await status();
        return x.journal.some((e) => e.event === 'rental-kept') ? x : null;
      },
      30_000,
      500,
    );
    const done = s.journal.filter((e) => e.event === 'job-done').at(-1)!;
    assert.equal(done.verdict, 'unsafe');
    assert.deepEqual(done.reasons, ['nothing-listed']);
    assert.match(String(s.journal.find((e) => e.event === 'rental-kept')?.why), /nothing was listed/);
    await sleep(3000); // passes go on: kept, never retried into an end, not journaled again every pass
    const later = await status();
    assert.equal(later.running, true);
    assert.ok(!later.journal.some((e) => String(e.event).startsWith('rental-end')), JSON.stringify(later.journal.map((e) => e.event)));
    assert.equal(later.journal.filter((e) => e.event === 'rental-kept').length, 1);
  });
});
