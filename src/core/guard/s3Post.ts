/**
 * The guard's S3 credential: a presigned POST policy (AWS Signature V4) that lets the node write
 * ONLY keys under the prefix, until it expires (at most 7 days). No key is ever sent to the node: the secret
 * signs the policy here, on the laptop, and stays here. Renewed when the guard is started again.
 */
import { createHmac } from 'node:crypto';

export const MAX_POLICY_S = 7 * 24 * 3600;

interface PostCredentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

interface PostPolicyInput {
  bucket: string;
  prefix: string;
  region: string;
  /** S3-compatible endpoint (path-style); default: the bucket's AWS virtual-hosted URL. */
  endpoint?: string;
  expires: Date;
  maxBytes: number;
  now?: Date;
}

export interface PresignedPost {
  url: string;
  /** Form fields sent with every upload (besides key, x-amz-meta-sha256 and the file). */
  fields: Record<string, string>;
  expires: string;
}

const hmac = (key: string | Buffer, s: string) => createHmac('sha256', key).update(s, 'utf8').digest();

function amzDate(d: Date): string {
  return d
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

export function presignPost(c: PostCredentials, i: PostPolicyInput): PresignedPost {
  const now = i.now ?? new Date();
  const date = amzDate(now);
  const day = date.slice(0, 8);
  const credential = `${c.accessKeyId}/${day}/${i.region}/s3/aws4_request`;
  const expires = new Date(Math.min(i.expires.getTime(), now.getTime() + MAX_POLICY_S * 1000));
  const fixed: Record<string, string> = {
    'x-amz-algorithm': 'AWS4-HMAC-SHA256',
    'x-amz-credential': credential,
    'x-amz-date': date,
    ...(c.sessionToken ? { 'x-amz-security-token': c.sessionToken } : {}),
  };
  const policy = {
    expiration: expires.toISOString(),
    conditions: [
      { bucket: i.bucket },
      ['starts-with', '$key', i.prefix],
      ['starts-with', '$x-amz-meta-sha256', ''],
      ['content-length-range', 0, i.maxBytes],
      ...Object.entries(fixed).map(([k, v]) => ({ [k]: v })),
    ],
  };
  const policyB64 = Buffer.from(JSON.stringify(policy), 'utf8').toString('base64');
  const key = hmac(hmac(hmac(hmac(`AWS4${c.secretAccessKey}`, day), i.region), 's3'), 'aws4_request');
  const signature = createHmac('sha256', key).update(policyB64, 'utf8').digest('hex');
  const url = i.endpoint
    ? `${i.endpoint.replace(/\/+$/, '')}/${encodeURIComponent(i.bucket)}`
    : `https://${i.bucket}.s3.${i.region}.amazonaws.com/`;
  return { url, fields: { ...fixed, policy: policyB64, 'x-amz-signature': signature }, expires: expires.toISOString() };
}
