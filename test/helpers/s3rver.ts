/**
 * s3rver 3.7.1 as a child process on 127.0.0.1, for integration tests and benchmarks.
 *
 * Traps (see shared/reference/toolchain-notes.md, "S3 server for tests"):
 *  - on Node >= 17 s3rver answers HTTP 500 to every ListObjectsV2 page after the first (its continuation
 *    tokens use DES): the child runs with NODE_OPTIONS=--openssl-legacy-provider;
 *  - the SDK adds checksums to uploads by default (>= 3.729) and s3rver then stores the aws-chunked framing
 *    inside the object: uploads here use requestChecksumCalculation 'WHEN_REQUIRED'.
 *
 * The child listens on port 0 and prints its address; it exits when its stdin closes, so it never outlives
 * the test process even when that one is killed.
 */
import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as http from 'node:http';
import * as os from 'node:os';
import * as path from 'node:path';
import type { S3Client } from '@aws-sdk/client-s3';

export const S3RVER_KEY = 'S3RVER';

export interface S3rverHandle {
  /** http://127.0.0.1:PORT */
  endpoint: string;
  port: number;
  /** s3rver's data directory (removed by stop()). */
  dir: string;
  pid: number;
  stop(): Promise<void>;
}

const CHILD_SCRIPT = `
const S3rver = require(process.env.S3RVER_MODULE);
process.stdin.on('close', () => process.exit(0));
process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
new S3rver({ address: '127.0.0.1', port: 0, directory: process.env.S3RVER_DIR, silent: true })
  .run()
  .then((a) => process.stdout.write(JSON.stringify({ port: a.port }) + '\\n'))
  .catch((e) => { process.stderr.write(String(e && e.stack || e) + '\\n'); process.exit(1); });
`;

/** Env vars for the SDK and awscli talking to s3rver (never real credentials). */
export function s3Env(_endpoint?: string): Record<string, string> {
  return {
    AWS_ACCESS_KEY_ID: S3RVER_KEY,
    AWS_SECRET_ACCESS_KEY: S3RVER_KEY,
    AWS_REGION: 'us-east-1',
    AWS_DEFAULT_REGION: 'us-east-1',
    // never reach for 169.254.169.254 from a test
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_PAGER: '',
  };
}

/** Any HTTP answer counts: s3rver is up. */
function answers(endpoint: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get(endpoint + '/', { timeout: 1000 }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

export async function startS3rver(): Promise<S3rverHandle> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-s3rver-'));
  const child: ChildProcess = spawn(process.execPath, ['-e', CHILD_SCRIPT], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: {
      ...process.env,
      NODE_OPTIONS: [process.env.NODE_OPTIONS ?? '', '--openssl-legacy-provider'].join(' ').trim(),
      S3RVER_MODULE: require.resolve('s3rver'),
      S3RVER_DIR: dir,
    },
  });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(t);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const port = await new Promise<number>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`s3rver did not start within 20 s: ${stderr}`)), 20_000);
      child.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        const nl = out.indexOf('\n');
        if (nl >= 0) {
          clearTimeout(timer);
          try {
            resolve(JSON.parse(out.slice(0, nl)).port);
          } catch (e) {
            reject(e);
          }
        }
      });
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`s3rver exited with ${code} before listening: ${stderr}`));
      });
    });
    const endpoint = `http://127.0.0.1:${port}`;
    const t0 = Date.now();
    while (!(await answers(endpoint))) {
      if (Date.now() - t0 > 10_000) throw new Error(`s3rver on ${endpoint} does not answer: ${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return { endpoint, port, dir, pid: child.pid!, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** An SDK client for s3rver with explicit test credentials (independent of process.env). */
export function testS3Client(endpoint: string): S3Client {
  const { S3Client } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  // no "SDK releases after January 2027 need Node >= 22" warning in test output
  const quiet = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';
  const had = quiet in process.env;
  process.env[quiet] ??= 'true';
  try {
    return newTestClient(S3Client, endpoint);
  } finally {
    if (!had) delete process.env[quiet];
  }
}

function newTestClient(S3Client: typeof import('@aws-sdk/client-s3').S3Client, endpoint: string): S3Client {
  return new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3RVER_KEY, secretAccessKey: S3RVER_KEY },
    // otherwise s3rver stores the aws-chunked framing inside the object
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

export async function createBucket(endpoint: string, bucket: string, client?: S3Client): Promise<void> {
  const { CreateBucketCommand } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  const c = client ?? testS3Client(endpoint);
  try {
    await c.send(new CreateBucketCommand({ Bucket: bucket }));
  } catch (e) {
    const name = (e as { name?: string }).name;
    if (name !== 'BucketAlreadyOwnedByYou' && name !== 'BucketAlreadyExists') throw e;
  } finally {
    if (!client) c.destroy();
  }
}

/** Upload objects with real PutObject requests (32 in flight), creating the bucket if needed. */
export async function putObjects(
  endpoint: string,
  bucket: string,
  objs: { key: string; body: Buffer | string }[],
  concurrency = 32,
): Promise<void> {
  const { PutObjectCommand } = require('@aws-sdk/client-s3') as typeof import('@aws-sdk/client-s3');
  const c = testS3Client(endpoint);
  try {
    await createBucket(endpoint, bucket, c);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < objs.length) {
        const o = objs[next++];
        const body = typeof o.body === 'string' ? Buffer.from(o.body) : o.body;
        await c.send(new PutObjectCommand({ Bucket: bucket, Key: o.key, Body: body, ContentLength: body.length }));
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, objs.length) }, worker));
  } finally {
    c.destroy();
  }
}

/**
 * Write objects straight into s3rver's on-disk layout (FilesystemStore: `<bucket>/<dirs>/<name>._S3rver_object`
 * plus `.md5` and `._S3rver_metadata.json`), exactly what its PutObject writes. Much faster than HTTP for
 * tens of thousands of objects; s3rver reads the disk on every request, so it sees them at once.
 */
export function seedOnDisk(dir: string, bucket: string, objs: { key: string; body: Buffer | string }[]): void {
  const made = new Set<string>();
  for (const o of objs) {
    const parts = o.key.split('/');
    const name = parts.pop()!;
    const d = path.join(dir, bucket, ...parts);
    if (!made.has(d)) {
      mkdirSync(d, { recursive: true });
      made.add(d);
    }
    const body = typeof o.body === 'string' ? Buffer.from(o.body) : o.body;
    const base = path.join(d, `${name}._S3rver_`);
    writeFileSync(base + 'object', body);
    writeFileSync(base + 'object.md5', createHash('md5').update(body).digest('hex'));
    writeFileSync(base + 'metadata.json', JSON.stringify({ 'content-type': 'application/octet-stream' }, null, 2));
  }
  mkdirSync(path.join(dir, bucket), { recursive: true });
}

/** Debian's awscli (/usr/bin/aws) when installed, else an `aws` on PATH, else null. */
export function awsCli(): string | null {
  if (existsSync('/usr/bin/aws')) return '/usr/bin/aws';
  const r = spawnSync('aws', ['--version'], { encoding: 'utf8' });
  return r.status === 0 ? 'aws' : null;
}

/** `aws s3 ls --recursive` parsed into key → size, with s3Env and an empty HOME. */
/** `aws s3 ls --recursive` with a throwaway HOME (removed afterwards unless the caller gave one). */
export function awsLsRecursive(aws: string, endpoint: string, s3url: string, home?: string): { keys: Map<string, number>; ms: number } {
  const own = home === undefined ? mkdtempSync(path.join(os.tmpdir(), 'gs-awshome-')) : null;
  const t0 = performance.now();
  let r;
  try {
    r = spawnSync(aws, ['--endpoint-url', endpoint, 's3', 'ls', '--recursive', s3url], {
      encoding: 'utf8',
      maxBuffer: 512 * 1024 * 1024,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home ?? own!, ...s3Env(endpoint) },
    });
  } finally {
    if (own) rmSync(own, { recursive: true, force: true });
  }
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`aws s3 ls failed (${r.status}): ${r.stderr}`);
  const keys = new Map<string, number>();
  for (const line of r.stdout.split('\n')) {
    // 2024-01-01 12:00:00       1234 some/key
    const m = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\s+(\d+) (.*)$/.exec(line);
    if (m) keys.set(m[2], Number(m[1]));
  }
  return { keys, ms };
}
