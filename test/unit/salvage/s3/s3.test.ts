import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { GpuSessionsError } from '../../../../src/core/util/errors';
import { S3Inventory, S3Object, mappedKey, matchToS3, parseS3Url, s3Error, summarizeS3 } from '../../../../src/core/salvage/s3/s3';

const md5 = (s: string): string => createHash('md5').update(s).digest('hex');

function inv(objects: S3Object[], prefix = 'train-dflash/', truncated = false): S3Inventory {
  return {
    target: { bucket: 'bkt', prefix },
    objects,
    totalBytes: objects.reduce((a, o) => a + o.size, 0),
    pages: 1,
    truncated,
    durationMs: 1,
  };
}
const obj = (key: string, body: string, etag = md5(body)): S3Object => ({ key, size: Buffer.byteLength(body), etag, lastModified: null });

describe('s3: parseS3Url', () => {
  it('reads bucket and prefix', () => {
    assert.deepEqual(parseS3Url('s3://my-bucket/train-dflash/completions/'), { bucket: 'my-bucket', prefix: 'train-dflash/completions/' });
    assert.deepEqual(parseS3Url('s3://my-bucket'), { bucket: 'my-bucket', prefix: '' });
    assert.deepEqual(parseS3Url('s3://my-bucket/'), { bucket: 'my-bucket', prefix: '' });
    assert.deepEqual(parseS3Url('  s3://data.example-1/x  '), { bucket: 'data.example-1', prefix: 'x' });
    assert.deepEqual(parseS3Url('S3://abc/a b/c'), { bucket: 'abc', prefix: 'a b/c' });
  });

  it('is a clear undefined on garbage', () => {
    for (const bad of [
      '',
      's3://',
      's3:///x',
      's3://ab',
      'http://bucket/x',
      'bucket/x',
      's3:/bucket/x',
      's3://bu cket/x',
      's3://-bucket/x',
      's3://bucket-/',
      's3://a..b/',
      's3://192.168.1.1/x',
      `s3://${'a'.repeat(64)}/`,
      's3://bucket/x\ny',
      's3://bucket/' + 'k'.repeat(1025),
    ]) {
      assert.equal(parseS3Url(bad), undefined, JSON.stringify(bad));
    }
    assert.equal(parseS3Url(undefined as unknown as string), undefined);
  });
});

describe('s3: mappedKey', () => {
  const m = [{ remotePrefix: '/root/completions/', s3Prefix: 'completions/' }];
  it('replaces the remote prefix and joins to the target prefix', () => {
    assert.equal(mappedKey('/root/completions/batch_000123.jsonl', 'train-dflash/', m)?.key, 'train-dflash/completions/batch_000123.jsonl');
    assert.equal(mappedKey('/root/completions/batch_000123.jsonl', 'train-dflash', m)?.key, 'train-dflash/completions/batch_000123.jsonl');
    assert.equal(mappedKey('/root/completions/sub/a.jsonl', '', m)?.key, 'completions/sub/a.jsonl');
    assert.equal(mappedKey('/root/other/a.jsonl', 'train-dflash/', m), null);
    assert.equal(mappedKey('/root/completions_old/a.jsonl', 'train-dflash/', [{ remotePrefix: '/root/completions', s3Prefix: 'c' }]), null);
    assert.equal(mappedKey('/root/completions/a.jsonl', 'p/', [{ remotePrefix: '/root/completions', s3Prefix: 'c' }])?.key, 'p/c/a.jsonl');
  });

  it('takes an s3Prefix that already has the target prefix, or a leading /, from the bucket root', () => {
    assert.equal(
      mappedKey('/root/completions/a', 'train-dflash/', [{ remotePrefix: '/root/completions/', s3Prefix: 'train-dflash/completions/' }])
        ?.key,
      'train-dflash/completions/a',
    );
    assert.equal(
      mappedKey('/root/completions/a', 'train-dflash/', [{ remotePrefix: '/root/completions/', s3Prefix: '/elsewhere/' }])?.key,
      'elsewhere/a',
    );
  });

  it('prefers the longest remote prefix and maps single files', () => {
    const mm = [
      { remotePrefix: '/root/', s3Prefix: 'home/' },
      { remotePrefix: '/root/completions/', s3Prefix: 'completions/' },
      { remotePrefix: '/root/launch_all.sh', s3Prefix: 'scripts/' },
      { remotePrefix: '/root/progress.json', s3Prefix: 'meta/progress-final.json' },
    ];
    assert.equal(mappedKey('/root/completions/b.jsonl', 'p/', mm)?.key, 'p/completions/b.jsonl');
    assert.equal(mappedKey('/root/x.log', 'p/', mm)?.key, 'p/home/x.log');
    assert.equal(mappedKey('/root/launch_all.sh', 'p/', mm)?.key, 'p/scripts/launch_all.sh');
    assert.equal(mappedKey('/root/progress.json', 'p/', mm)?.key, 'p/meta/progress-final.json');
  });
});

describe('s3: matchToS3', () => {
  const a = '{"i":1}\n';
  const b = '{"i":2}\n';
  const objects = [
    obj('train-dflash/completions/batch_000001.jsonl', a),
    obj('train-dflash/completions/batch_000002.jsonl', b),
    obj('train-dflash/completions/batch_000003.jsonl', a, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'),
    obj('train-dflash/completions/batch_000004.jsonl', a, md5('x') + '-3'),
    obj('train-dflash/completions/batch_000005.jsonl', a, 'not-an-md5'),
    obj('train-dflash/completions/', ''),
  ];

  it('says present / missing / mismatch (size) / mismatch (md5) / unverified, with reasons', () => {
    const r = matchToS3(
      [
        { remotePath: '/root/completions/batch_000001.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/root/completions/batch_000099.jsonl', size: 10, md5: null },
        { remotePath: '/root/completions/batch_000002.jsonl', size: 999, md5: md5(b) },
        { remotePath: '/root/completions/batch_000003.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/root/completions/batch_000004.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/root/completions/batch_000001.jsonl', size: a.length },
        { remotePath: '/root/completions/batch_000005.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/root/completions/batch_000001.jsonl', size: a.length, md5: md5(a).toUpperCase() },
      ],
      inv(objects),
    );
    assert.deepEqual(
      r.map((x) => x.status),
      ['present', 'missing', 'mismatch', 'mismatch', 'unverified', 'unverified', 'unverified', 'present'],
    );
    assert.equal(r[0].key, 'train-dflash/completions/batch_000001.jsonl');
    assert.match(r[0].reason, /MD5/);
    assert.equal(r[1].key, null);
    assert.match(r[1].reason, /no object named batch_000099\.jsonl under s3:\/\/bkt\/train-dflash\//);
    assert.match(r[2].reason, /size differs: 999 bytes on the node, 8 bytes at s3:\/\/bkt\/train-dflash\/completions\/batch_000002\.jsonl/);
    assert.match(r[3].reason, /MD5 differs/);
    assert.match(r[4].reason, /3-part multipart upload/);
    assert.match(r[5].reason, /no MD5 from the node/);
    assert.match(r[6].reason, /not an MD5/);
  });

  it('prefers the longest common path suffix, then the matching size, then the matching MD5', () => {
    const i = inv(
      [
        obj('x/batch_1.jsonl', 'zz'),
        obj('train-dflash/old/batch_1.jsonl', 'yyy'),
        obj('train-dflash/completions/batch_1.jsonl', a),
        obj('mirror/completions/batch_1.jsonl', b),
        obj('a/run1/log.txt', 'one'),
        obj('b/run2/log.txt', 'three'),
        obj('c/run3/log.txt', 'xyz'),
        obj('d/run4/log.txt', 'abc'),
      ],
      '',
    );
    const [r1, r2, r3, r4] = matchToS3(
      [
        { remotePath: '/root/completions/batch_1.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/root/completions/batch_1.jsonl', size: b.length, md5: md5(b) },
        { remotePath: '/root/log.txt', size: 5, md5: null },
        { remotePath: '/root/log.txt', size: 3, md5: md5('abc') },
      ],
      i,
    );
    assert.equal(r1.key, 'train-dflash/completions/batch_1.jsonl'); // size+md5 among the two with 2 parts in common
    assert.equal(r1.status, 'present');
    assert.match(r1.reason, /2 trailing path parts in common/);
    assert.equal(r2.key, 'mirror/completions/batch_1.jsonl');
    assert.equal(r2.status, 'present');
    assert.equal(r3.key, 'b/run2/log.txt');
    assert.equal(r3.status, 'unverified');
    assert.match(r3.reason, /4 equally good candidates, chose the one with the same size/);
    assert.equal(r4.key, 'd/run4/log.txt');
    assert.equal(r4.status, 'present');
  });

  it('key equal to the basename matches; a partial name does not', () => {
    const i = inv([obj('launch_all.sh', 'x'), obj('p/xlaunch_tuned.sh', 'y')], '');
    const r = matchToS3(
      [
        { remotePath: '/root/launch_all.sh', size: 1, md5: md5('x') },
        { remotePath: '/root/launch_tuned.sh', size: 1, md5: md5('y') },
      ],
      i,
    );
    assert.deepEqual(
      r.map((x) => [x.status, x.key]),
      [
        ['present', 'launch_all.sh'],
        ['missing', null],
      ],
    );
  });

  it('with a mapping, only the mapped key counts', () => {
    const i = inv([obj('train-dflash/completions/batch_1.jsonl', a), obj('train-dflash/elsewhere/batch_2.jsonl', a)]);
    const mappings = [{ remotePrefix: '/root/completions/', s3Prefix: 'completions/' }];
    const r = matchToS3(
      [
        { remotePath: '/root/completions/batch_1.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/root/completions/batch_2.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/root/logs/batch_2.jsonl', size: a.length, md5: md5(a) }, // no mapping: by name
      ],
      i,
      mappings,
    );
    assert.deepEqual(
      r.map((x) => x.status),
      ['present', 'missing', 'present'],
    );
    assert.match(r[0].reason, /mapping \/root\/completions\/ → completions\//);
    assert.match(r[1].reason, /expected at s3:\/\/bkt\/train-dflash\/completions\/batch_2\.jsonl/);
    assert.match(r[1].reason, /same name is at s3:\/\/bkt\/train-dflash\/elsewhere\/batch_2\.jsonl/);
    assert.equal(r[2].key, 'train-dflash/elsewhere/batch_2.jsonl');
  });

  it('says unknown without an inventory, and notes a truncated listing', () => {
    const r = matchToS3([{ remotePath: '/root/a', size: 1 }], null);
    assert.equal(r[0].status, 'unknown');
    assert.equal(r[0].key, null);
    assert.match(r[0].reason, /not checked/);
    const t = matchToS3([{ remotePath: '/root/a', size: 1 }], inv([], '', true));
    assert.equal(t[0].status, 'missing');
    assert.match(t[0].reason, /listing stopped at 0 objects/);
  });

  it('summarizes', () => {
    const i = inv(objects);
    const r = matchToS3(
      [
        { remotePath: '/r/batch_000001.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/r/batch_000004.jsonl', size: a.length },
        { remotePath: '/r/batch_000003.jsonl', size: a.length, md5: md5(a) },
        { remotePath: '/r/nope', size: 1 },
      ],
      i,
    );
    assert.deepEqual(summarizeS3(i, r), { objects: 6, bytes: i.totalBytes, present: 1, unverified: 1, missing: 1, mismatch: 1 });
  });

  it('matches 1,805 batches against 100,000 objects quickly', () => {
    const objs: S3Object[] = [];
    for (let i = 0; i < 100_000; i++)
      objs.push({
        key: `train-dflash/completions/batch_${String(i).padStart(6, '0')}.jsonl`,
        size: 4_000_000 + i,
        etag: md5(String(i)),
        lastModified: null,
      });
    const items = Array.from({ length: 1805 }, (_, i) => ({
      remotePath: `/root/completions/batch_${String(i).padStart(6, '0')}.jsonl`,
      size: 4_000_000 + i,
      md5: md5(String(i)),
    }));
    const t0 = performance.now();
    const r = matchToS3(items, inv(objs));
    assert.ok(performance.now() - t0 < 8000, 'linear, not quadratic (bound generous for a loaded CI box)');
    assert.ok(r.every((x) => x.status === 'present'));
  });
});

describe('s3: errors', () => {
  const t = { bucket: 'bkt', prefix: 'train-dflash/' };
  const mk = (fields: Record<string, unknown>, message = 'boom'): Error => Object.assign(new Error(message), fields);

  it('names the problem and what to do', () => {
    const cases: [Error, string, RegExp[]][] = [
      [
        mk({ name: 'CredentialsProviderError' }, 'Could not load credentials from any providers'),
        'no-credentials',
        [/no AWS credentials found in the default chain/i, /AWS_PROFILE/, /AWS_ACCESS_KEY_ID/, /aws sso login/],
      ],
      [
        mk(
          { name: 'CredentialsProviderError' },
          'The SSO session associated with this profile has expired or is otherwise invalid. To refresh this SSO session run aws sso login',
        ),
        'expired-token',
        [/expired/, /aws sso login/],
      ],
      [
        mk({ name: 'ExpiredToken', Code: 'ExpiredToken', $metadata: { httpStatusCode: 400 } }, 'The provided token has expired.'),
        'expired-token',
        [/expired \(ExpiredToken\)/, /refresh/, /AWS_SESSION_TOKEN/],
      ],
      [
        mk({ name: 'ExpiredTokenException', $metadata: { httpStatusCode: 400 } }),
        'expired-token',
        [/ExpiredTokenException/, /aws sso login/],
      ],
      [
        mk({ name: 'AccessDenied', Code: 'AccessDenied', $metadata: { httpStatusCode: 403 } }, 'Access Denied'),
        'access-denied',
        [/Access denied listing s3:\/\/bkt\/train-dflash\//, /s3:ListBucket/],
      ],
      [mk({ name: 'NoSuchBucket', Code: 'NoSuchBucket', $metadata: { httpStatusCode: 404 } }), 'no-such-bucket', [/No such bucket: bkt/]],
      [mk({ name: 'InvalidAccessKeyId', $metadata: { httpStatusCode: 403 } }), 'bad-credentials', [/rejected the AWS credentials/]],
      [mk({ name: 'PermanentRedirect', $metadata: { httpStatusCode: 301 } }), 'wrong-region', [/another region/, /AWS_REGION/]],
      [mk({ code: 'ECONNREFUSED' }, 'connect ECONNREFUSED 127.0.0.1:9'), 'unreachable', [/Cannot reach/, /ECONNREFUSED/]],
      [mk({ code: 'ENOTFOUND' }, 'getaddrinfo ENOTFOUND x'), 'unreachable', [/Cannot reach/]],
      [mk({ name: 'TimeoutError' }), 'timeout', [/Timed out/]],
      [mk({ name: 'AbortError' }), 'cancelled', [/cancelled/]],
      [
        mk({ name: 'SlowDown', $metadata: { httpStatusCode: 503 } }, 'Please reduce your request rate.'),
        'other',
        [/SlowDown: Please reduce your request rate\. \(HTTP 503\)/],
      ],
    ];
    for (const [e, kind, res] of cases) {
      const g = s3Error(e, t);
      assert.ok(g instanceof GpuSessionsError);
      assert.equal(g.code, kind === 'cancelled' ? 'cancelled' : 'remote-failed', kind);
      assert.equal(g.detail?.s3, kind, g.message);
      for (const re of res) assert.match(g.message, re);
    }
  });
});

describe('s3: lazy SDK', () => {
  it('importing src/core/s3 does not load @aws-sdk/client-s3', () => {
    const mod = path.resolve(__dirname, '..', '..', '..', '..', 'src', 'core', 'salvage', 's3', 's3.js');
    const r = spawnSync(
      process.execPath,
      ['-e', `require(${JSON.stringify(mod)}); console.log(Object.keys(require.cache).filter((k) => k.includes('@aws-sdk')).length)`],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), '0');
  });
});
