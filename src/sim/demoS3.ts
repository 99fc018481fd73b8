/**
 * The demo's S3: s3rver on 127.0.0.1 in this process, with a bucket that already holds part of the
 * demo node's completion batches (as in the seeds, where 1,805 batches were already safe in S3).
 * s3rver is a development dependency; without it the demo simply skips the S3 step.
 */
import { readdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

interface DemoS3 {
  endpoint: string;
  bucket: string;
  prefix: string;
  uploaded: string[];
  stop(): Promise<void>;
}

export async function startDemoS3(home: string, log: (m: string) => void): Promise<DemoS3 | null> {
  let S3rver: new (o: Record<string, unknown>) => { run(): Promise<{ port: number }>; close(): Promise<void> };
  try {
    S3rver = require('s3rver');
  } catch {
    log('s3rver is not installed (npm install); the demo skips the S3 check.');
    return null;
  }
  // The demo's fake S3 accepts only its own fixed test credentials; they are set for this process only.
  process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
  process.env.AWS_REGION = 'us-east-1';
  // The SDK's Node 20 end-of-support notice is noise in a demo.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
  delete process.env.AWS_SESSION_TOKEN;
  delete process.env.AWS_PROFILE;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-demo-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, directory: dir, silent: true });
  const addr = await server.run();
  const endpoint = `http://127.0.0.1:${addr.port}`;
  const bucket = 'demo-train-dflash';
  const prefix = 'qwen36-27b/';

  const { S3Client, CreateBucketCommand, PutObjectCommand } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  const client = new S3Client({
    endpoint,
    forcePathStyle: true,
    region: 'us-east-1',
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
    requestChecksumCalculation: 'WHEN_REQUIRED',
  });
  await client.send(new CreateBucketCommand({ Bucket: bucket }));
  const compDir = path.join(home, 'completions');
  const batches = readdirSync(compDir)
    .filter((f) => /^batch_.*\.jsonl$/.test(f))
    .sort();
  // Everything but the newest batch is already uploaded; the newest exists only on the node.
  const uploaded = batches.slice(0, Math.max(0, batches.length - 1));
  for (const f of uploaded) {
    await client.send(
      new PutObjectCommand({ Bucket: bucket, Key: `${prefix}completions/${f}`, Body: readFileSync(path.join(compDir, f)) }),
    );
  }
  client.destroy();
  return {
    endpoint,
    bucket,
    prefix,
    uploaded,
    stop: async () => {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
