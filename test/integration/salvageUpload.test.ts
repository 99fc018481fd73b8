/**
 * Node → S3 upload with no credentials on the node (issue 17), over a REAL OpenSSH sshd and s3rver:
 * `--upload-missing` sends the missing and mismatched completion files from the node, a large file the
 * laptop did not pull goes multipart (presigned part URLs), Debian's awscli then lists them with the right
 * sizes, and a wrapper around the node's curl records its argv and environment to prove that no credential
 * (nor even the presigned URL) reached the node's command lines or environment. On a node without curl,
 * Python's standard library uploads the same way (its argv and environment recorded too).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { salvageArgs } from '../helpers/salvageArgs';
import { S3RVER_KEY, awsCli, awsLsRecursive, createBucket, putObjects, s3Env, startS3rver } from '../helpers/s3rver';
import { SimNode, startSimNode } from '../helpers/simnode';

const CURL_WRAPPER = `#!/bin/sh
# Test wrapper: records how curl was called (argv and environment), then runs the real curl.
log="$HOME/.curl-calls.log"
{ echo "=== argv"; for a in "$@"; do printf '%s\\n' "$a"; done; echo "=== env"; env; } >> "$log"
exec /usr/bin/curl "$@"
`;

const PYTHON_WRAPPER = (log: string) => `#!/bin/sh
# Test wrapper: records how python3 was called (argv and environment), then runs the real one.
log="${log}"
{ echo "=== argv"; for a in "$@"; do printf '%s\\n' "$a"; done; echo "=== env"; env; } >> "$log"
exec /usr/bin/python3 "$@"
`;

const FLAKY_CURL = `#!/bin/sh
# Test wrapper: logs which part each call sends; while $HOME/.curl-fail-parts exists, parts after the first fail.
cfg=$(cat /dev/fd/3)
part=$(printf '%s' "$cfg" | sed -n 's/.*[?&]partNumber=\\([0-9]*\\).*/\\1/p')
echo "part \${part:-whole}" >> "$HOME/.curl-parts.log"
if [ -f "$HOME/.curl-fail-parts" ] && [ -n "$part" ] && [ "$part" -gt 1 ]; then cat >/dev/null; echo "injected failure" >&2; exit 22; fi
exec /usr/bin/curl "$@" 3<<EOF
$cfg
EOF
`;

/** What must never reach an uploader's argv or environment on the node. */
const NEVER_ON_NODE = [
  S3RVER_KEY,
  'X-Amz-Credential',
  'X-Amz-Signature',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'http://',
];

/** A PATH without curl: every system tool linked into one folder (outside the salvaged home) but curl. */
function pathWithoutCurl(): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-nocurl-'));
  chmodSync(dir, 0o755);
  for (const d of ['/usr/local/bin', '/usr/bin', '/bin'])
    for (const f of existsSync(d) ? readdirSync(d) : [])
      if (f !== 'curl' && !existsSync(path.join(dir, f))) symlinkSync(path.join(d, f), path.join(dir, f));
  return dir;
}

describe('salvage --upload-missing: node → S3 with presigned URLs (real sshd, s3rver, awscli)', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let base: string;
  const big = 'completions/hidden_states_part.bin';

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({
      gpuCount: 1,
      beforeStart: (home) => {
        writeFileSync(path.join(home, 'bin', 'curl'), CURL_WRAPPER);
        chmodSync(path.join(home, 'bin', 'curl'), 0o755);
        writeFileSync(path.join(home, big), randomBytes(12 * 1024 * 1024 + 12345));
        const env = path.join(home, '.sim', 'env.sh');
        writeFileSync(env, readFileSync(env, 'utf8') + 'export SGLANG_SIM_RUNNING=0\n');
      },
    });
    base = mkdtempSync(path.join(os.tmpdir(), 'gs-upload-'));
  });
  after(async () => {
    await sim?.stop();
    if (base) rmSync(base, { recursive: true, force: true });
  });

  const uploadArgs = (dest: string, endpoint: string) =>
    salvageArgs(
      sim,
      dest,
      '--yes',
      '--json',
      '--stop-servers',
      '--s3',
      's3://train-dflash/qwen36/',
      '--s3-endpoint',
      endpoint,
      '--upload-missing',
      '--part-size',
      '5',
      '--size-threshold',
      '8',
    );

  it('uploads missing and mismatched files from the node, multipart above the part size; S3 then holds them', async () => {
    const s3 = await startS3rver();
    try {
      const comp = path.join(sim.home, 'completions');
      const batches = readdirSync(comp)
        .filter((f) => /^batch_.*\.jsonl$/.test(f))
        .sort();
      assert.ok(batches.length >= 3);
      const [mismatched, present, ...missing] = batches;
      await putObjects(s3.endpoint, 'train-dflash', [
        { key: `qwen36/completions/${present}`, body: readFileSync(path.join(comp, present)) },
        {
          key: `qwen36/completions/${mismatched}`,
          body: Buffer.from(readFileSync(path.join(comp, mismatched)).toString('latin1').replace(/./, 'X'), 'latin1'),
        },
      ]);
      const r = await cli(uploadArgs(path.join(base, 'd'), s3.endpoint), { timeoutMs: 240_000, env: s3Env() });
      const rep = JSON.parse(r.stdout);
      const up = new Map<string, { ok: boolean; parts: number; s3Object: string; reason: string | null }>(
        rep.uploads.map((u: { remotePath: string }) => [u.remotePath, u]),
      );
      const bigPath = path.join(sim.home, big);
      const bigUp = up.get(bigPath);
      assert.ok(bigUp, `the large file was uploaded from the node: ${JSON.stringify(rep.uploads).slice(0, 800)}`);
      assert.equal(bigUp.ok, true, String(bigUp.reason));
      assert.equal(bigUp.parts, 3, 'multipart: 12 MiB in 5 MiB parts');
      const bigItem = rep.items.find((i: { remotePath: string }) => i.remotePath === bigPath);
      assert.equal(bigItem.leftReason, 'large', 'the laptop did not pull it');
      assert.equal(existsSync(path.join(rep.dest, 'files', bigPath.slice(1))), false);
      assert.equal(bigItem.s3, 'present');
      const mis = up.get(path.join(comp, mismatched))!;
      assert.equal(mis.ok, true, String(mis.reason));
      assert.equal(mis.s3Object, `qwen36/completions/${mismatched}`, 'a mismatched object is replaced at its key');
      for (const f of missing) assert.equal(up.get(path.join(comp, f))?.ok, true, f);
      assert.equal(up.has(path.join(comp, present)), false, 'what S3 already holds is not sent again');
      for (const f of [mismatched, ...missing])
        assert.equal(rep.items.find((i: { remotePath: string }) => i.remotePath === path.join(comp, f)).s3, 'present', f);
      assert.equal(rep.verdict, 'safe', JSON.stringify(rep.reasonDetails));
      // An independent client agrees on keys and sizes.
      const aws = awsCli();
      if (aws) {
        const ls = awsLsRecursive(aws, s3.endpoint, 's3://train-dflash/qwen36/');
        assert.equal(ls.keys.get(bigUp.s3Object), statSync(bigPath).size, `awscli: ${bigUp.s3Object}`);
        assert.equal(ls.keys.get(mis.s3Object), statSync(path.join(comp, mismatched)).size);
        for (const f of missing) assert.equal(ls.keys.get(up.get(path.join(comp, f))!.s3Object), statSync(path.join(comp, f)).size, f);
      }
      // Nothing but presigned URLs reached the node, and not even those through argv or environment.
      const calls = readFileSync(path.join(sim.home, '.curl-calls.log'), 'utf8');
      assert.ok((calls.match(/=== argv/g) ?? []).length >= 5, 'curl ran on the node');
      for (const bad of NEVER_ON_NODE) assert.ok(!calls.includes(bad), `${bad} reached curl's argv or environment on the node`);
    } finally {
      await s3.stop();
    }
  });

  it("a node without curl: Python's standard library uploads, multipart included; nothing secret in its argv or environment", async () => {
    const s3 = await startS3rver();
    const sshEnv = path.join(sim.home, '.ssh', 'environment');
    const envBefore = readFileSync(sshEnv, 'utf8');
    const curlLog = path.join(sim.home, '.curl-calls.log');
    const curlCalls = () => ((existsSync(curlLog) ? readFileSync(curlLog, 'utf8') : '').match(/=== argv/g) ?? []).length;
    const curlBefore = curlCalls();
    const noCurl = pathWithoutCurl();
    try {
      await createBucket(s3.endpoint, 'train-dflash');
      // The node's PATH (sshd's ~/.ssh/environment) loses curl: the wrapper goes, the system folders become one without it.
      renameSync(path.join(sim.home, 'bin', 'curl'), path.join(sim.home, 'curl-wrapper'));
      // python3 first on that PATH is a wrapper that logs outside the salvaged home.
      const pyLog = path.join(noCurl, 'python-calls.log');
      writeFileSync(pyLog, '');
      chmodSync(pyLog, 0o666);
      writeFileSync(path.join(sim.home, 'bin', 'python3'), PYTHON_WRAPPER(pyLog));
      chmodSync(path.join(sim.home, 'bin', 'python3'), 0o755);
      writeFileSync(sshEnv, envBefore.replace('/usr/local/bin:/usr/bin:/bin', noCurl));
      const r = await cli(uploadArgs(path.join(base, 'nocurl'), s3.endpoint), { timeoutMs: 240_000, env: s3Env() });
      assert.ok(r.stdout.trim(), `exit ${r.code}: ${r.stderr.slice(-1500)}`);
      const rep = JSON.parse(r.stdout);
      const bigPath = path.join(sim.home, big);
      const ups = rep.uploads as Array<{ remotePath: string; ok: boolean; parts: number; s3Object: string; reason: string | null }>;
      assert.ok(ups.length >= 4, `uploads: ${JSON.stringify(ups).slice(0, 800)}`);
      for (const u of ups) assert.equal(u.ok, true, `${u.remotePath}: ${u.reason}`);
      const bigUp = ups.find((u) => u.remotePath === bigPath)!;
      assert.equal(bigUp.parts, 3, 'multipart: 12 MiB in 5 MiB parts');
      assert.equal(curlCalls(), curlBefore, 'curl did not run');
      const aws = awsCli();
      if (aws) {
        const ls = awsLsRecursive(aws, s3.endpoint, 's3://train-dflash/qwen36/');
        for (const u of ups) assert.equal(ls.keys.get(u.s3Object), statSync(u.remotePath).size, `awscli: ${u.s3Object}`);
      }
      const calls = readFileSync(path.join(noCurl, 'python-calls.log'), 'utf8');
      assert.ok(calls.includes('http.client'), 'the upload program ran on the node');
      for (const bad of NEVER_ON_NODE) assert.ok(!calls.includes(bad), `${bad} reached python3's argv or environment on the node`);
    } finally {
      writeFileSync(sshEnv, envBefore);
      rmSync(noCurl, { recursive: true, force: true });
      rmSync(path.join(sim.home, 'bin', 'python3'), { force: true });
      if (existsSync(path.join(sim.home, 'curl-wrapper')))
        renameSync(path.join(sim.home, 'curl-wrapper'), path.join(sim.home, 'bin', 'curl'));
      await s3.stop();
    }
  });
  it('an interrupted multipart upload resumes per part: parts already sent (ETag-checked) are not sent again', async () => {
    const s3 = await startS3rver();
    const curl = path.join(sim.home, 'bin', 'curl');
    const saved = readFileSync(curl, 'utf8');
    const partsLog = path.join(sim.home, '.curl-parts.log');
    const flag = path.join(sim.home, '.curl-fail-parts');
    const bigPath = path.join(sim.home, big);
    try {
      await createBucket(s3.endpoint, 'train-dflash');
      writeFileSync(curl, FLAKY_CURL);
      writeFileSync(flag, '');
      const dest = path.join(base, 'resume');
      const r1 = await cli(uploadArgs(dest, s3.endpoint), { timeoutMs: 240_000, env: s3Env() });
      const rep1 = JSON.parse(r1.stdout);
      const up1 = rep1.uploads.find((u: { remotePath: string }) => u.remotePath === bigPath);
      assert.equal(up1?.ok, false, 'parts 2 and 3 failed');
      assert.match(up1.reason, /1 of 3 parts sent; a rerun resumes/);
      assert.ok(existsSync(path.join(rep1.dest, 'upload-parts.json')), 'the unfinished upload is kept');
      rmSync(flag);
      const r2 = await cli(uploadArgs(dest, s3.endpoint), { timeoutMs: 240_000, env: s3Env() });
      const rep2 = JSON.parse(r2.stdout);
      assert.equal(rep2.dest, rep1.dest, 'the rerun continues the folder');
      const up2 = rep2.uploads.find((u: { remotePath: string }) => u.remotePath === bigPath);
      assert.equal(up2?.ok, true, String(up2?.reason));
      assert.equal(up2.parts, 3);
      assert.equal(up2.resumedParts, 1, 'part 1 was checked and kept');
      const sent = readFileSync(partsLog, 'utf8').trim().split('\n');
      assert.equal(sent.filter((l) => l === 'part 1').length, 1, `part 1 sent once: ${sent.join(', ')}`);
      assert.equal(
        sent.filter((l) => l === 'part 2').length,
        3,
        `part 2: failed twice (one retry), then sent by the rerun: ${sent.join(', ')}`,
      );
      assert.equal(sent.filter((l) => l === 'part 3').length, 1, 'part 3: only by the rerun');
      assert.equal(existsSync(path.join(rep2.dest, 'upload-parts.json')), false, 'nothing left unfinished');
      assert.equal(rep2.items.find((i: { remotePath: string }) => i.remotePath === bigPath).s3, 'present');
      const aws = awsCli();
      if (aws) {
        const ls = awsLsRecursive(aws, s3.endpoint, 's3://train-dflash/qwen36/');
        assert.equal(ls.keys.get(up2.s3Object), statSync(bigPath).size, `awscli: ${up2.s3Object}`);
      }
    } finally {
      writeFileSync(curl, saved);
      rmSync(flag, { force: true });
      await s3.stop();
    }
  });
});
