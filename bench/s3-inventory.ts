/**
 * S3 inventory: our `inventoryS3` vs Debian's awscli `aws s3 ls --recursive`, side by side on the same
 * loopback s3rver holding 10,000 objects (10 ListObjectsV2 pages). Goal: ours ≤ 1.0× awscli.
 *
 * Run:  npx tsc -p . && node out/bench/s3-inventory.js
 *       (BENCH_OBJECTS=10000 BENCH_RUNS=3 to change the size and the number of runs; needs `aws`, else
 *        only our numbers are printed: apt-get install -y awscli)
 *
 * Rows:
 *  - `aws s3 ls --recursive`          : new Python process + the listing (what a person types)
 *  - `inventoryS3` (new node process) : node start + loading @aws-sdk/client-s3 + the listing (what a CLI run pays)
 *  - `inventoryS3` (in process, warm) : the listing alone, SDK already loaded (what the extension pays after the first)
 * Objects are written straight into s3rver's on-disk layout (seconds for 10,000; PUTs would take ~20 s),
 * then both clients must see exactly the same keys and sizes before anything is timed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { inventoryS3, S3Target } from '../src/core/salvage/s3/s3';
import { awsCli, awsLsRecursive, s3Env, seedOnDisk, startS3rver } from '../test/helpers/s3rver';

const OBJECTS = Number(process.env.BENCH_OBJECTS ?? 10_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const fmt = (ms: number): string => ms.toFixed(0);

async function main(): Promise<void> {
  const srv = await startS3rver();
  const home = mkdtempSync(path.join(os.tmpdir(), 'gs-s3bench-'));
  const env = { ...s3Env(srv.endpoint), HOME: home, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' };
  const saved = { ...process.env };
  Object.assign(process.env, env);
  try {
    const t0 = performance.now();
    const objs = Array.from({ length: OBJECTS }, (_, i) => ({
      key: `train-dflash/completions/batch_${String(i).padStart(6, '0')}.jsonl`,
      body: `{"index":${i},"completion":"${'x'.repeat(i % 997)}"}\n`,
    }));
    seedOnDisk(srv.dir, 'bench', objs);
    const seedMs = performance.now() - t0;
    const target: S3Target = { bucket: 'bench', prefix: 'train-dflash/', endpoint: srv.endpoint };
    const url = 's3://bench/train-dflash/';

    // correctness first: both clients see the same thing
    const first = await inventoryS3(target);
    if (first.objects.length !== OBJECTS || first.truncated)
      throw new Error(`inventoryS3 saw ${first.objects.length} objects, expected ${OBJECTS}`);
    const aws = awsCli();
    if (aws) {
      const ls = awsLsRecursive(aws, srv.endpoint, url, home);
      if (ls.keys.size !== OBJECTS) throw new Error(`aws s3 ls saw ${ls.keys.size} objects, expected ${OBJECTS}`);
      for (const o of first.objects) if (ls.keys.get(o.key) !== o.size) throw new Error(`aws and ours disagree on ${o.key}`);
    }

    const child = path.resolve(__dirname, '..', 'src', 'core', 'salvage', 's3.js');
    const childScript = `require(${JSON.stringify(child)}).inventoryS3(${JSON.stringify(target)}).then((r) => { if (r.objects.length !== ${OBJECTS}) process.exit(3); }, (e) => { console.error(e.message); process.exit(2); })`;
    const awsT: number[] = [];
    const procT: number[] = [];
    const warmT: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      if (aws) awsT.push(awsLsRecursive(aws, srv.endpoint, url, home).ms);

      let s = performance.now();
      const r = spawnSync(process.execPath, ['-e', childScript], {
        encoding: 'utf8',
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
      });
      if (r.status !== 0) throw new Error(`inventoryS3 in a child failed (${r.status}): ${r.stderr}`);
      procT.push(performance.now() - s);

      s = performance.now();
      const inv = await inventoryS3(target);
      warmT.push(performance.now() - s);
      if (inv.objects.length !== OBJECTS) throw new Error('short listing');
    }

    const a = aws ? median(awsT) : NaN;
    const ratio = (ms: number): string => (aws ? `${(ms / a).toFixed(2)}×` : 'n/a (no aws)');
    const awsVersion = aws ? spawnSync(aws, ['--version'], { encoding: 'utf8' }).stdout.trim().split(' ')[0] : 'not installed';
    console.log(
      `\nS3 inventory of ${OBJECTS.toLocaleString('en-US')} objects (${first.pages} pages, ${(first.totalBytes / 1e6).toFixed(1)} MB) on loopback s3rver 3.7.1, ` +
        `median of ${RUNS} (node ${process.version}, ${awsVersion}; seeded on disk in ${fmt(seedMs)} ms)\n`,
    );
    console.log('| client | ms (median) | runs (ms) | ratio to awscli |');
    console.log('| --- | ---: | --- | ---: |');
    if (aws) console.log(`| \`aws s3 ls --recursive\` (Debian awscli) | ${fmt(a)} | ${awsT.map(fmt).join(', ')} | 1.00× |`);
    console.log(`| \`inventoryS3\`, new node process | ${fmt(median(procT))} | ${procT.map(fmt).join(', ')} | ${ratio(median(procT))} |`);
    console.log(`| \`inventoryS3\`, in process (warm) | ${fmt(median(warmT))} | ${warmT.map(fmt).join(', ')} | ${ratio(median(warmT))} |`);
    if (aws) {
      const worst = Math.max(median(procT), median(warmT)) / a;
      console.log(`\nGoal ours ≤ 1.0× awscli: ${worst <= 1 ? 'met' : 'NOT met'} (worst row ${worst.toFixed(2)}×).`);
    }
  } finally {
    for (const k of Object.keys(env)) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    await srv.stop();
    rmSync(home, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
