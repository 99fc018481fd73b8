/**
 * Salvage next to the node's own guard (issue 47), over a REAL OpenSSH sshd (user gs47gsalv) and s3rver:
 * salvage never lists the guard's state (`~/.gpu-sessions/guard`) nor its `--to` copy (a copy inside the work's
 * folders once took a salvage past its depth bound: listing-truncated, unsafe); the files the guard verified in
 * S3 count as saved, read back from S3 first, and are not downloaded again unless `--download-guarded`.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { S3rverHandle, createBucket, s3Env, startS3rver, testS3Client } from '../helpers/s3rver';
import { SimNode, putOnNode, startSimNode, testUser } from '../helpers/simnode';
import { waitFor } from '../helpers/wait';
import type { SalvageGuardRecord } from '../../src/core/salvage/salvageTypes';

const USER = testUser('gs47gsalv');
const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

interface SalvageJson {
  verdict: string;
  dest: string;
  reasons: string[];
  listing: { truncated: boolean } | null;
  stats: { filesTransferred: number };
  guard: SalvageGuardRecord | null;
  items: Array<{ remotePath: string; status: string; leftReason: string | null; s3: string; guardS3?: string; localPath: string | null }>;
}

describe('salvage next to the node guard over a real OpenSSH sshd and s3rver', function () {
  this.timeout(240_000);
  let sim: SimNode;
  let s3: S3rverHandle;
  let root: string;
  let dest: string;
  const base = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];
  const put = (rel: string, body: string) => putOnNode(sim, rel, body);
  const guard = async (sub: string, extra: string[] = []) => {
    const r = await cli([...base(), '--roots', '~/job', 'guard', 'simnode', sub, ...extra, '--json'], { timeoutMs: 90_000, env: s3Env() });
    return { code: r.code, out: r.stdout ? (JSON.parse(r.stdout) as Record<string, unknown>) : {}, stderr: r.stderr };
  };
  const salvage = async (extra: string[] = [], env: NodeJS.ProcessEnv = s3Env()) => {
    const r = await cli(
      [...base(), '--roots', '~/job,~/.gpu-sessions', 'salvage', 'simnode', '--dest', dest, '--yes', '--json', ...extra],
      {
        timeoutMs: 120_000,
        env,
      },
    );
    assert.ok(r.stdout, r.stderr);
    return { code: r.code, j: JSON.parse(r.stdout) as SalvageJson, stderr: r.stderr };
  };
  const work: Record<string, string> = {
    'job/train.py': 'print("train")\n',
    'job/out/batch_000.jsonl': '{"response":"a"}\n'.repeat(50),
    'job/out/batch_001.jsonl': '{"response":"b"}\n'.repeat(70),
  };

  before(async () => {
    sim = await startSimNode({ user: 'gs47gsalv', startServers: false, gpuCount: 1 });
    for (const [rel, body] of Object.entries(work)) put(rel, body);
    s3 = await startS3rver();
    await createBucket(s3.endpoint, 'gsalv');
    root = mkdtempSync(path.join(os.tmpdir(), 'gs-gsalv-'));
    dest = path.join(root, 'zero');
  });
  after(async () => {
    await guard('stop').catch(() => undefined);
    spawnSync('pkill', ['-u', USER, '-f', 'guard.py run']);
    await sim?.stop();
    await s3?.stop();
    rmSync(root, { recursive: true, force: true });
  });

  it("never lists the guard's state nor its --to copy inside the work's folders (the depth bound is not hit)", async () => {
    const r = await guard('start', ['--to', '~/job/guard-copy', '--interval', '2']);
    assert.equal(r.code, 0, r.stderr);
    const copy = path.join(sim.home, 'job/guard-copy', sim.home.slice(1), 'job/out/batch_001.jsonl');
    await waitFor('the guard to copy the work', () => existsSync(copy), 15_000);
    // the copy mirrors absolute paths: job/guard-copy/<home>/job/out/x is 4 levels deeper than the work's own files
    const depth = 2 + sim.home.split('/').filter(Boolean).length;
    const { code, j } = await salvage(['--max-depth', String(depth + 1)]);
    assert.equal(j.listing?.truncated, false, JSON.stringify(j.listing));
    assert.ok(!j.reasons.includes('listing-truncated'), j.reasons.join(','));
    const listed = j.items.map((i) => i.remotePath);
    assert.ok(!listed.some((p) => p.includes('/job/guard-copy')), `the copy is listed: ${listed.join(', ')}`);
    assert.ok(!listed.some((p) => p.includes('/.gpu-sessions/guard')), `the guard's state is listed: ${listed.join(', ')}`);
    for (const rel of Object.keys(work)) assert.ok(listed.includes(path.join(sim.home, rel)), rel);
    assert.equal(j.guard?.to, realpathSync(path.join(sim.home, 'job/guard-copy')));
    assert.equal(j.guard?.running, true);
    assert.equal(j.guard?.counted, 0, 'a --to copy counts nothing in S3');
    assert.equal(j.verdict, 'safe', j.reasons.join(','));
    assert.equal(code, 0);
    assert.equal((await guard('stop')).out.stopped, true);
    rmSync(path.join(sim.home, 'job/guard-copy'), { recursive: true, force: true });
  });

  it('counts the files the guard verified in S3 as saved (read back first), downloads what S3 does not hold as verified', async () => {
    const r = await guard('start', ['--s3', 's3://gsalv/run', '--s3-endpoint', s3.endpoint, '--interval', '2', '--yes']);
    assert.equal(r.code, 0, r.stderr);
    await waitFor(
      'every work file verified in S3',
      async () => {
        const s = (await guard('status')).out as { lastVerifiedSync: { files: number } | null; bytesAtRisk: number | null };
        return s.lastVerifiedSync && s.lastVerifiedSync.files >= 3 && s.bytesAtRisk === 0;
      },
      30_000,
      500,
    );
    dest = path.join(root, 'one');
    const a = await salvage();
    assert.equal(a.j.verdict, 'safe', a.j.reasons.join(','));
    assert.equal(a.code, 0);
    assert.equal(a.j.guard?.s3, 's3://gsalv/run/');
    assert.equal(a.j.guard?.counted, 3, JSON.stringify(a.j.guard));
    assert.equal(a.j.guard?.confirmed, 3);
    assert.equal(a.j.guard?.s3Error, null);
    for (const rel of Object.keys(work)) {
      const it = a.j.items.find((i) => i.remotePath === path.join(sim.home, rel))!;
      assert.equal(it.leftReason, 'guard-s3', rel);
      assert.equal(it.s3, 'present');
      assert.equal(it.guardS3, 'confirmed');
      assert.ok(!it.localPath || !existsSync(it.localPath), `${rel} was downloaded again`);
    }
    // S3 no longer holds what the guard verified (another upload replaced it): that file is downloaded
    const c = testS3Client(s3.endpoint);
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    await c.send(new PutObjectCommand({ Bucket: 'gsalv', Key: `run/${sim.home.slice(1)}/job/train.py`, Body: 'other bytes\n' }));
    c.destroy();
    dest = path.join(root, 'two');
    const b = await salvage();
    assert.equal(b.j.guard?.counted, 2, JSON.stringify(b.j.guard));
    assert.equal(b.j.guard?.notCounted, 1);
    // restore the first run (nothing of it downloaded) from the guard's S3 copy, each file checked against the
    // SHA-256 the guard verified: S3's train.py is no longer that copy, so it fails, named
    const rs = await cli([...base(), 'restore', a.j.dest, 'simnode', '--map', `${sim.home}/job=${sim.home}/restored`, '--yes', '--json'], {
      timeoutMs: 120_000,
      env: s3Env(),
    });
    const rj = JSON.parse(rs.stdout) as {
      fromGuard?: { fetched: number; failed: number };
      files: { failed: Array<{ path: string; reason: string }> };
    };
    assert.deepEqual(rj.fromGuard, { fetched: 2, present: 0, failed: 1 }, rs.stderr);
    for (const rel of ['out/batch_000.jsonl', 'out/batch_001.jsonl'])
      assert.equal(readFileSync(path.join(sim.home, 'restored', rel), 'utf8'), work[`job/${rel}`], rel);
    assert.equal(existsSync(path.join(sim.home, 'restored/train.py')), false);
    assert.match(rj.files.failed.find((f) => f.path.endsWith('/job/train.py'))?.reason ?? '', /not the [0-9a-f]{12}… the guard verified/);
    assert.equal(rs.code, 1);
    const train = b.j.items.find((i) => i.remotePath === path.join(sim.home, 'job/train.py'))!;
    assert.equal(train.status, 'verified');
    assert.equal(sha(readFileSync(train.localPath!)), sha(work['job/train.py']));
    assert.equal(b.j.verdict, 'safe', b.j.reasons.join(','));
    // no credential that S3 accepts here: the guard's journal alone counts, and the JSON says why
    dest = path.join(root, 'three');
    const n = await salvage([], { ...s3Env(), AWS_ACCESS_KEY_ID: 'NOTAKEY', AWS_SECRET_ACCESS_KEY: 'NOTASECRET' });
    assert.ok(n.j.guard?.s3Error, JSON.stringify(n.j.guard));
    assert.equal(n.j.guard?.confirmed, 0);
    assert.ok((n.j.guard?.counted ?? 0) >= 2, JSON.stringify(n.j.guard));
    assert.ok(n.j.items.some((i) => i.guardS3 === 'journal'));
    // --download-guarded: everything comes down as usual
    dest = path.join(root, 'four');
    const all = await salvage(['--download-guarded']);
    assert.equal(all.j.guard?.downloaded, true);
    assert.equal(all.j.guard?.counted, 0);
    for (const [rel, body] of Object.entries(work)) {
      const it = all.j.items.find((i) => i.remotePath === path.join(sim.home, rel))!;
      assert.equal(it.status, 'verified', rel);
      assert.equal(sha(readFileSync(it.localPath!)), sha(body), rel);
    }
    assert.equal(all.j.verdict, 'safe', all.j.reasons.join(','));
  });
});
