/** The guard's S3 credential (core/guard/s3Post): a POST policy only under the prefix, expiring within 7 days, signed here. */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { MAX_POLICY_S, presignPost } from '../../../src/core/guard/s3Post';

const creds = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };
const now = new Date('2026-12-04T12:00:00Z');

describe('guard S3 POST policy (core/guard/s3Post)', () => {
  it('allows keys under the prefix only, caps the expiry at 7 days, carries no secret', () => {
    const p = presignPost(creds, {
      bucket: 'b',
      prefix: 'runs/1/',
      region: 'us-east-1',
      endpoint: 'http://127.0.0.1:9000/',
      expires: new Date(now.getTime() + 30 * 86400_000),
      maxBytes: 100,
      now,
    });
    assert.equal(p.url, 'http://127.0.0.1:9000/b');
    assert.equal(p.expires, new Date(now.getTime() + MAX_POLICY_S * 1000).toISOString());
    const policy = JSON.parse(Buffer.from(p.fields.policy, 'base64').toString('utf8'));
    assert.deepEqual(policy.conditions[0], { bucket: 'b' });
    assert.deepEqual(policy.conditions[1], ['starts-with', '$key', 'runs/1/']);
    assert.deepEqual(policy.conditions[3], ['content-length-range', 0, 100]);
    assert.equal(p.fields['x-amz-credential'], 'AKIDEXAMPLE/20261204/us-east-1/s3/aws4_request');
    assert.equal(p.fields['x-amz-date'], '20261204T120000Z');
    assert.ok(!JSON.stringify(p).includes(creds.secretAccessKey));
  });

  it('the signature is SigV4 over the base64 policy (the HMAC chain of the date, region, s3, aws4_request)', () => {
    const p = presignPost(creds, {
      bucket: 'b',
      prefix: 'x/',
      region: 'eu-west-1',
      expires: new Date(now.getTime() + 3600_000),
      maxBytes: 1,
      now,
    });
    const h = (k: string | Buffer, s: string) => createHmac('sha256', k).update(s).digest();
    const k = h(h(h(h('AWS4' + creds.secretAccessKey, '20261204'), 'eu-west-1'), 's3'), 'aws4_request');
    assert.equal(p.fields['x-amz-signature'], createHmac('sha256', k).update(p.fields.policy).digest('hex'));
    assert.equal(p.url, 'https://b.s3.eu-west-1.amazonaws.com/');
  });

  it('a session token is part of the policy and the fields', () => {
    const p = presignPost(
      { ...creds, sessionToken: 'TOKEN' },
      { bucket: 'b', prefix: '', region: 'us-east-1', expires: now, maxBytes: 1, now },
    );
    assert.equal(p.fields['x-amz-security-token'], 'TOKEN');
    assert.ok(Buffer.from(p.fields.policy, 'base64').toString().includes('"x-amz-security-token":"TOKEN"'));
  });
});
