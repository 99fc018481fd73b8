/**
 * The S3 side of Salvage Node against a real S3 implementation (s3rver on 127.0.0.1, as a child process),
 * cross-checked with an independent client (Debian's awscli).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { GpuSessionsError } from '../../src/core/util/errors';
import { S3Inventory, S3Target, inventoryS3, matchToS3, summarizeS3 } from '../../src/core/salvage/s3/s3';
import { freePort } from '../helpers/sshd';
import { S3rverHandle, awsCli, awsLsRecursive, putObjects, s3Env, startS3rver } from '../helpers/s3rver';
import { planted } from '../helpers/planted';

const md5 = (b: string | Buffer): string => createHash('md5').update(b).digest('hex');
const batchKey = (i: number): string => `train-dflash/completions/batch_${String(i).padStart(6, '0')}.jsonl`;
const batchBody = (i: number): string => `{"index":${i},"completion":"${'x'.repeat(i % 211)}"}\n`;
const N = 2500;

/** AWS-related env vars that could point the SDK at real credentials or config. */
const AWS_VARS = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_SECURITY_TOKEN',
  'AWS_PROFILE',
  'AWS_DEFAULT_PROFILE',
  'AWS_REGION',
  'AWS_DEFAULT_REGION',
  'AWS_CONFIG_FILE',
  'AWS_SHARED_CREDENTIALS_FILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_ROLE_ARN',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_EC2_METADATA_DISABLED',
  'AWS_CREDENTIAL_EXPIRATION',
  'HOME',
];

/** Run fn with exactly these AWS vars (others removed), restoring process.env afterwards. */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = new Map<string, string | undefined>();
  for (const k of new Set([...AWS_VARS, ...Object.keys(vars)])) saved.set(k, process.env[k]);
  for (const k of AWS_VARS) delete process.env[k];
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of saved) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

async function rejectsWith(p: Promise<unknown>, check: (e: GpuSessionsError) => void): Promise<void> {
  try {
    await p;
  } catch (e) {
    assert.ok(e instanceof GpuSessionsError, `expected a GpuSessionsError, got ${String(e)}`);
    check(e);
    return;
  }
  assert.fail('expected a rejection');
}

describe('s3 (s3rver on loopback)', function () {
  this.timeout(120_000);
  let srv: S3rverHandle;
  let home: string;
  let env: Record<string, string>;
  let t: S3Target;

  before(async () => {
    srv = await startS3rver();
    home = mkdtempSync(path.join(os.tmpdir(), 'gs-s3home-'));
    env = { ...s3Env(srv.endpoint), HOME: home };
    t = { bucket: 'salvage', prefix: 'train-dflash/', endpoint: srv.endpoint };
    const objs: { key: string; body: string }[] = [];
    for (let i = 0; i < N; i++) objs.push({ key: batchKey(i), body: batchBody(i) });
    for (let i = 0; i < 30; i++) objs.push({ key: `other/logs/gpu${i}.log`, body: `log ${i}\n` });
    // not `train-dflash-old/`: s3rver walks directories in file-name order ('train-dflash' < 'train-dflash-old'),
    // not key order ('train-dflash-old/' < 'train-dflash/'), and so loses such keys after the first page (awscli too)
    for (let i = 0; i < 7; i++) objs.push({ key: `train-dflash2/batch_${i}.jsonl`, body: 'old\n' });
    objs.push({ key: 'train-dflash/launch_all.sh', body: '#!/bin/bash\n' });
    await putObjects(srv.endpoint, 'salvage', objs);
  });

  after(async () => {
    await srv?.stop();
    if (home) rmSync(home, { recursive: true, force: true });
  });

  const inv = (target: S3Target, opts?: Parameters<typeof inventoryS3>[1]): Promise<S3Inventory> =>
    withEnv(env, () => inventoryS3(target, opts));

  it(`lists ${N.toLocaleString('en-US')} objects across pages, and awscli sees the same keys and sizes`, async function () {
    const seen: number[] = [];
    const r = await inv(t, { onPage: (n) => seen.push(n) });
    assert.equal(r.objects.length, N + 1);
    assert.ok(r.pages >= 3, `pages ${r.pages}`);
    assert.deepEqual(seen, [1000, 2000, N + 1]);
    assert.equal(r.truncated, false);
    let bytes = Buffer.byteLength('#!/bin/bash\n');
    for (let i = 0; i < N; i++) bytes += Buffer.byteLength(batchBody(i));
    assert.equal(r.totalBytes, bytes);
    const o = r.objects.find((x) => x.key === batchKey(123))!;
    assert.equal(o.size, Buffer.byteLength(batchBody(123)));
    assert.equal(o.etag, md5(batchBody(123)));
    assert.ok(o.lastModified && !isNaN(Date.parse(o.lastModified)));
    assert.deepEqual(r.target, t);
    assert.ok(r.durationMs >= 0);

    const aws = awsCli();
    if (!aws) {
      console.log('      (skipped the awscli cross-check: `aws` is not installed; apt-get install -y awscli)');
      return;
    }
    const ls = awsLsRecursive(aws, srv.endpoint, 's3://salvage/train-dflash/', home);
    assert.equal(ls.keys.size, r.objects.length);
    for (const x of r.objects) assert.equal(ls.keys.get(x.key), x.size, x.key);
  });

  it('filters by prefix as S3 does (a plain string prefix)', async () => {
    const other = await inv({ ...t, prefix: 'other/' });
    assert.equal(other.objects.length, 30);
    assert.equal(other.pages, 1);
    assert.ok(other.objects.every((o) => o.key.startsWith('other/logs/')));
    const noSlash = await inv({ ...t, prefix: 'train-dflash' });
    assert.equal(noSlash.objects.length, N + 1 + 7); // train-dflash2/ too, like `aws s3 ls --recursive`
    const all = await inv({ ...t, prefix: '' });
    assert.equal(all.objects.length, N + 1 + 7 + 30);
    const none = await inv({ ...t, prefix: 'nothing/' });
    assert.deepEqual([none.objects.length, none.totalBytes, none.pages, none.truncated], [0, 0, 1, false]);
  });

  it('stops at maxObjects with truncated=true, and not when the listing ends there', async () => {
    const a = await inv(t, { maxObjects: 1500 });
    assert.deepEqual([a.objects.length, a.pages, a.truncated], [1500, 2, true]);
    const b = await inv(t, { maxObjects: 2000 });
    assert.deepEqual([b.objects.length, b.pages, b.truncated], [2000, 2, true]);
    const c = await inv(t, { maxObjects: N + 1 });
    assert.deepEqual([c.objects.length, c.pages, c.truncated], [N + 1, 3, false]);
  });

  it('is abortable', async () => {
    const ac = new AbortController();
    await rejectsWith(inv(t, { signal: ac.signal, onPage: () => ac.abort() }), (e) => {
      assert.equal(e.code, 'cancelled');
      assert.match(e.message, /cancelled/);
    });
    await rejectsWith(inv(t, { signal: AbortSignal.abort() }), (e) => assert.equal(e.code, 'cancelled'));
  });

  it('matches the node against the real inventory: present, missing, mismatch (size and MD5), unverified', async () => {
    const r = await inv(t);
    const node = (i: number, over: Partial<{ size: number; md5: string | null }> = {}) => ({
      remotePath: `/root/completions/batch_${String(i).padStart(6, '0')}.jsonl`,
      size: Buffer.byteLength(batchBody(i)),
      md5: md5(batchBody(i)),
      ...over,
    });
    const items = [
      node(1),
      node(1804),
      node(N + 10), // never uploaded
      node(2, { size: 5 }), // truncated copy on the node
      node(3, { md5: md5('something else of the same size?') }),
      node(4, { md5: null }),
      { remotePath: '/root/launch_all.sh', size: 12, md5: md5('#!/bin/bash\n') },
    ];
    const m = matchToS3(items, r);
    assert.deepEqual(
      m.map((x) => x.status),
      ['present', 'present', 'missing', 'mismatch', 'mismatch', 'unverified', 'present'],
    );
    assert.equal(m[0].key, batchKey(1));
    assert.equal(m[6].key, 'train-dflash/launch_all.sh');
    assert.match(m[3].reason, /size differs/);
    assert.match(m[4].reason, /MD5 differs/);

    // a multipart upload's ETag (`<md5 of part md5s>-N`): s3rver never makes one, so add it to the inventory
    const withMultipart: S3Inventory = {
      ...r,
      objects: [
        ...r.objects,
        { key: 'train-dflash/shards/big.tar', size: 3 * 8 * 1024 * 1024, etag: `${md5('parts')}-3`, lastModified: null },
      ],
    };
    const [mp] = matchToS3([{ remotePath: '/root/shards/big.tar', size: 3 * 8 * 1024 * 1024, md5: md5('whole') }], withMultipart);
    assert.equal(mp.status, 'unverified');
    assert.match(mp.reason, /multipart/);

    const s = summarizeS3(r, m);
    assert.deepEqual(s, { objects: N + 1, bytes: r.totalBytes, present: 3, unverified: 1, missing: 1, mismatch: 2 });

    assert.deepEqual(
      matchToS3(items, null).map((x) => x.status),
      items.map(() => 'unknown'),
    );
  });

  it('mapping vs suffix matching', async () => {
    const r = await inv({ ...t, prefix: '' });
    const item = { remotePath: '/root/completions/batch_000007.jsonl', size: Buffer.byteLength(batchBody(7)), md5: md5(batchBody(7)) };
    const [bySuffix] = matchToS3([item], r);
    assert.equal(bySuffix.status, 'present');
    assert.equal(bySuffix.key, batchKey(7));
    const [mapped] = matchToS3([item], r, [{ remotePrefix: '/root/completions/', s3Prefix: 'train-dflash/completions/' }]);
    assert.equal(mapped.status, 'present');
    assert.match(mapped.reason, /mapping/);
    const [wrongMap] = matchToS3([item], r, [{ remotePrefix: '/root/completions/', s3Prefix: 'elsewhere/' }]);
    assert.equal(wrongMap.status, 'missing');
    assert.match(wrongMap.reason, /expected at s3:\/\/salvage\/elsewhere\/batch_000007\.jsonl/);
    assert.match(wrongMap.reason, /same name is at s3:\/\/salvage\/train-dflash\/completions\/batch_000007\.jsonl/);
  });

  it('endpoint down → a clear error', async () => {
    const port = await freePort(); // nothing listens there
    const endpoint = `http://127.0.0.1:${port}`;
    await rejectsWith(inv({ ...t, endpoint }), (e) => {
      assert.equal(e.code, 'remote-failed');
      assert.equal(e.detail?.s3, 'unreachable');
      assert.match(e.message, new RegExp(`Cannot reach ${endpoint.replace(/\./g, '\\.')}`));
      assert.match(e.message, /ECONNREFUSED/);
      assert.match(e.message, /check the endpoint URL/);
    });
  });

  it('no such bucket → a clear error', async () => {
    await rejectsWith(inv({ ...t, bucket: 'no-such-bucket-here' }), (e) => {
      assert.equal(e.detail?.s3, 'no-such-bucket');
      assert.match(e.message, /No such bucket: no-such-bucket-here/);
    });
  });

  it('wrong credentials → a clear error that does not show them', async () => {
    const key = planted('AKIA', 'WRONGKEY0000TEST');
    const secret = 'wrong-secret-never-to-be-printed';
    await rejectsWith(
      withEnv({ ...env, AWS_ACCESS_KEY_ID: key, AWS_SECRET_ACCESS_KEY: secret }, () => inventoryS3(t)),
      (e) => {
        assert.equal(e.code, 'remote-failed');
        assert.equal(e.detail?.s3, 'bad-credentials');
        assert.match(e.message, /rejected the AWS credentials/);
        const all = e.message + JSON.stringify(e.detail);
        assert.ok(!all.includes(key) && !all.includes(secret), all);
      },
    );
  });

  it('no credentials in the default chain → a clear error, quickly (no IMDS wait)', async () => {
    const t0 = performance.now();
    // an empty HOME (no ~/.aws), no AWS_* credentials, IMDS off so nothing leaves loopback
    await rejectsWith(
      withEnv({ HOME: home, AWS_REGION: 'us-east-1', AWS_EC2_METADATA_DISABLED: 'true' }, () => inventoryS3(t)),
      (e) => {
        assert.equal(e.code, 'remote-failed');
        assert.equal(e.detail?.s3, 'no-credentials');
        assert.match(e.message, /no AWS credentials found in the default chain/i);
        assert.match(e.message, /AWS_PROFILE/);
        assert.match(e.message, /AWS_ACCESS_KEY_ID/);
        assert.match(e.message, /aws sso login/);
      },
    );
    assert.ok(performance.now() - t0 < 10_000);
  });

  it('an unknown profile → the same clear no-credentials error', async () => {
    await rejectsWith(
      withEnv({ HOME: home, AWS_REGION: 'us-east-1', AWS_EC2_METADATA_DISABLED: 'true' }, () =>
        inventoryS3({ ...t, profile: 'no-such-profile' }),
      ),
      (e) => {
        assert.equal(e.detail?.s3, 'no-credentials');
        assert.match(e.message, /aws sso login --profile no-such-profile/);
      },
    );
  });
});
