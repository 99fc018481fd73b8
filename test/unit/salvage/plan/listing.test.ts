/**
 * The salvage listing script run for real (sh on this machine, a temp tree), and its parser: every file
 * kind, caches summarised, git state, symlinks, bounds that make the listing incomplete, and a process
 * that writes under the folder found as a writer.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  ListingOptions,
  buildListingScript,
  isRedownloadable,
  isSecretStore,
  isSystemDir,
  parseListing,
} from '../../../../src/core/salvage/plan/listing';
import { classifyFile } from '../../../../src/core/flows/salvage';
import { SIM_SCOPE_VAR } from '../../../../src/core/node/probe';
import { planted } from '../../../helpers/planted';

const HF_PLANTED = planted('hf_', 'AbCdEfGhIjKlMnOpQrStUvWxYz012345');

function runListing(o: ListingOptions, env: Record<string, string> = {}) {
  const nonce = 'GStest0123456789';
  const r = spawnSync('sh', ['-s'], { input: buildListingScript(nonce, o), maxBuffer: 64 * 1024 * 1024, env: { ...process.env, ...env } });
  assert.equal(r.status, 0, r.stderr.toString());
  return parseListing(r.stdout.toString('utf8'), nonce, o);
}

describe('salvage listing (the real script, run locally)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-listing-'));
    const f = (rel: string, body = 'x\n') => {
      mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
      writeFileSync(path.join(dir, rel), body);
    };
    f('Makefile');
    f('notes');
    f('kernels/attn.cu');
    f('.hydra/config.yaml');
    f('.env', `HF_TOKEN=${HF_PLANTED}\n`);
    f('__pycache__/a.cpython-311.pyc', 'abc');
    f('venv/lib/python3.11/site-packages/torch/x.py', '12345');
    f('repo/.git/HEAD', 'ref: refs/heads/main\n');
    f('repo/train.py');
    f('a/b/c/d/e/deep.txt');
    symlinkSync('/etc/passwd', path.join(dir, 'link'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('lists every file (extensionless and hidden included), caches as folders with count and size, git state, symlinks', () => {
    const l = runListing({ roots: [dir] });
    const by = new Map(l.files.map((x) => [x.path.slice(dir.length + 1), x]));
    for (const rel of ['Makefile', 'notes', 'kernels/attn.cu', '.hydra/config.yaml', '.env', 'repo/train.py', 'a/b/c/d/e/deep.txt'])
      assert.ok(by.has(rel), rel);
    assert.equal(by.get('Makefile')!.kind, 'other');
    assert.equal(by.get('link')!.kind, 'symlink');
    assert.equal(by.get('link')!.linkTarget, '/etc/passwd');
    assert.equal(by.get('repo')!.kind, 'git-repo');
    assert.ok(!l.files.some((x) => x.path.includes('__pycache__') || x.path.includes('/venv/')));
    const caches = new Map(l.caches.map((c) => [c.path.slice(dir.length + 1), c]));
    assert.deepEqual(caches.get('__pycache__'), { path: path.join(dir, '__pycache__'), files: 1, bytes: 3 });
    assert.equal(caches.get('venv')!.files, 1);
    assert.equal(l.truncated, false);
    assert.deepEqual(
      l.roots.map((r) => r.path),
      [dir],
    );
    assert.match(l.roots[0].why, /--roots/);
  });

  it("pruned folders (the node guard's own, its --to copy) are never entered: a deep copy no longer hits the depth bound", () => {
    // the guard's --to copy mirrors absolute paths (DIR/<path>): inside the work's folders it is deeper than the work
    const copy = path.join(dir, 'guard copy[1]');
    const deep = path.join(copy, dir.slice(1), 'a/b/c/d/e/deep.txt');
    mkdirSync(path.dirname(deep), { recursive: true });
    writeFileSync(deep, 'x\n');
    try {
      const before = runListing({ roots: [dir], maxDepth: 8 });
      assert.equal(before.truncated, true, 'without the prune the copy takes the listing past its depth bound');
      assert.equal(before.bound, 'max-depth');
      const l = runListing({ roots: [dir], maxDepth: 8, prune: [copy] });
      assert.equal(l.truncated, false);
      assert.ok(!l.files.some((x) => x.path.startsWith(copy)), 'nothing of the copy is listed');
      assert.ok(
        l.files.some((x) => x.path === path.join(dir, 'a/b/c/d/e/deep.txt')),
        'the work is listed',
      );
      // a pruned folder is never a root either
      const r = runListing({ roots: [copy], prune: [copy] });
      assert.equal(r.files.length, 0);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  it("the providers' CLI state (~/.runpod, ~/.config/vastai) and the guard's folder are pruned by every listing", () => {
    const home = mkdtempSync(path.join(os.tmpdir(), 'gs-list-home-'));
    try {
      for (const f of [
        '.runpod/config.toml',
        '.config/vastai/vast_api_key',
        '.local/state/vastai/x',
        '.gpu-sessions/guard/journal.jsonl',
        'work/a.txt',
      ]) {
        mkdirSync(path.dirname(path.join(home, f)), { recursive: true });
        writeFileSync(path.join(home, f), 'x\n');
      }
      const l = runListing({ roots: ['~'] }, { HOME: home });
      assert.deepEqual(
        l.files.map((x) => path.relative(home, x.path)).filter((p) => !p.startsWith('..')),
        ['work/a.txt'],
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  });

  it('a hit bound makes the listing incomplete and says which', () => {
    const d = runListing({ roots: [dir], maxDepth: 3 });
    assert.equal(d.truncated, true);
    assert.equal(d.bound, 'max-depth');
    assert.ok(d.notListed >= 1);
    const n = runListing({ roots: [dir], maxFiles: 4 });
    assert.equal(n.truncated, true);
    assert.equal(n.bound, 'max-files');
  });

  it('finds a process that writes under the folder (pid, command, what it writes)', async () => {
    const out = path.join(dir, 'out.jsonl');
    const child = spawn('sh', ['-c', `exec 3>>'${out}'; exec sleep 30`], { cwd: dir, stdio: 'ignore' });
    try {
      await new Promise((r) => setTimeout(r, 300));
      const l = runListing({ roots: [dir] });
      const w = l.writers.find((x) => x.pid === child.pid);
      assert.ok(w, JSON.stringify(l.writers.map((x) => [x.pid, x.argv])));
      assert.deepEqual(w.writes, [out]);
      assert.equal(w.server, false);
    } finally {
      child.kill();
    }
  });

  it('our own operations (GPU_SESSIONS_OP in their environment) are never writers, whatever they hold open', async () => {
    const out = path.join(dir, 'ours.tmp');
    const child = spawn('sh', ['-c', `exec 3>>'${out}'; exec sleep 30`], {
      cwd: dir,
      stdio: 'ignore',
      env: { ...process.env, GPU_SESSIONS_OP: '1' },
    });
    try {
      await new Promise((r) => setTimeout(r, 300));
      const l = runListing({ roots: [dir] });
      assert.ok(!l.writers.some((x) => x.pid === child.pid), JSON.stringify(l.writers.map((x) => [x.pid, x.argv])));
    } finally {
      child.kill();
    }
  });

  it('hostile names (quotes, $(…), backquotes, tabs, newlines, globs, a leading dash) are listed as they are, never run', () => {
    const base = mkdtempSync(path.join(os.tmpdir(), 'gs-list-hostile-'));
    const root = path.join(base, `r o'o$t`);
    const names = [
      'sp ace/a b.json',
      'tab\tin/na\tme.py',
      'nl\ndir/new\nline.md',
      `q'uo"te/$(touch ${base}/pwned)/\`touch ${base}/pwned2\`.sh`,
      'back\\slash/x\\y',
      'glob*?[x]/f[1]*',
      '-dash/-n',
      'ünï/çødé.txt',
      'guard/kept.txt',
      'gu[a]rd*/pruned.txt',
      'ex cl/excluded.txt',
      'we ird/__pycache__/a.pyc',
      'mo del/model.safetensors',
    ];
    for (const n of names) {
      mkdirSync(path.dirname(path.join(root, n)), { recursive: true });
      writeFileSync(path.join(root, n), 'abc');
    }
    symlinkSync('/etc/pa sswd', path.join(root, 'li nk'));
    try {
      const o = {
        roots: [root],
        prune: [path.join(root, 'gu[a]rd*')],
        exclude: [path.join(root, 'ex cl')],
        previousModelDirs: [path.join(root, 'mo del')],
      };
      const l = runListing(o, { [SIM_SCOPE_VAR]: path.join(base, 'no-such-node') });
      const rel = l.files.map((f) => path.relative(root, f.path));
      const listed = names.filter((n) => !/^(gu\[a\]rd\*|ex cl|we ird)\//.test(n));
      assert.deepEqual(
        rel,
        [...listed, 'li nk'].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)),
      );
      assert.equal(l.files.find((f) => f.path.endsWith('/li nk'))?.linkTarget, '/etc/pa sswd');
      assert.ok(l.files.filter((f) => f.kind !== 'symlink').every((f) => f.size === 3));
      assert.deepEqual(l.caches, [{ path: path.join(root, 'we ird/__pycache__'), files: 1, bytes: 3 }]);
      assert.deepEqual(l.roots, [{ path: root, why: 'chosen with --roots' }]);
      assert.deepEqual(l.modelDirs, [path.join(root, 'mo del')]);
      assert.equal(l.truncated, false);
      assert.ok(!existsSync(path.join(base, 'pwned')) && !existsSync(path.join(base, 'pwned2')), 'no name was run');
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('folders from evidence: the home, volumes (globs), --add-root and earlier roots with hostile names', () => {
    const base = mkdtempSync(path.join(os.tmpdir(), 'gs-list-ev-'));
    const at = (rel: string) => path.join(base, rel);
    for (const f of ['ho me/w.txt', "vol'1/v.txt", 'mnt/a b/m.txt', 'mnt/c/n.txt', 'ho me/ad d/x.txt', 'pr$ev/p.txt', 'other/o.txt']) {
      mkdirSync(path.dirname(at(f)), { recursive: true });
      writeFileSync(at(f), 'x\n');
    }
    try {
      const l = runListing(
        { volumes: [at("vol'1"), at('mnt/*'), at('none')], addRoots: ['~/ad d'], previousRoots: [at('pr$ev')] },
        { HOME: at('ho me'), [SIM_SCOPE_VAR]: at('no-such-node') },
      );
      const mine = l.roots.filter((r) => r.path.startsWith(base));
      assert.deepEqual(
        mine.map((r) => [path.relative(base, r.path), r.why]),
        [
          ['ho me', `the home directory; also added with --add-root: ${at('ho me/ad d')}`],
          ['mnt/a b', 'a provider volume that belongs to you'],
          ['mnt/c', 'a provider volume that belongs to you'],
          ['pr$ev', 'found by an earlier salvage of this node'],
          ["vol'1", 'a provider volume that belongs to you'],
        ],
      );
      assert.ok(!l.files.some((f) => f.path.startsWith(at('other'))));
      assert.equal(l.home, at('ho me'));
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('system folders never count as work folders; /dev/shm entries do', () => {
    for (const p of ['/', '/usr/lib', '/proc/1', '/tmp', '/dev/shm', '/etc']) assert.equal(isSystemDir(p), true, p);
    for (const p of ['/workspace', '/tmp/run1', '/dev/shm/Qwen3-27B', '/root', '/home/u', '/mnt/data'])
      assert.equal(isSystemDir(p), false, p);
  });
});

describe('why a file stays on the node', () => {
  it('secret stores: private keys and credential files', () => {
    for (const p of [
      '/root/.ssh/id_ed25519',
      '/root/.ssh/deploy_key',
      '/root/.aws/credentials',
      '/root/.netrc',
      '/w/.git-credentials',
      '/w/id_rsa',
    ])
      assert.equal(isSecretStore(p), true, p);
    for (const p of ['/root/.ssh/id_ed25519.pub', '/root/.ssh/known_hosts', '/root/.ssh/config', '/root/.aws/config', '/w/notes'])
      assert.equal(isSecretStore(p), false, p);
  });

  it('re-downloadable weights: HF hub layout or a model folder the servers read; weights the job wrote are kept', () => {
    assert.equal(isRedownloadable('/w/hf/hub/models--Qwen--Qwen3/snapshots/abc/model.safetensors', []), true);
    assert.equal(isRedownloadable('/dev/shm/Qwen3/model-00001.safetensors', ['/dev/shm/Qwen3']), true);
    assert.equal(isRedownloadable('/w/checkpoints/step_100/model.safetensors', ['/dev/shm/Qwen3']), false);
    const f = { path: '/w/checkpoints/lora/adapter_model.safetensors', kind: 'model' as const, size: 10, mtime: '' };
    assert.deepEqual(classifyFile(f, 100, []), { leftReason: null, jobWeights: true, reason: null });
    const big = classifyFile({ ...f, size: 1000 }, 100, []);
    assert.equal(big.leftReason, 'large');
    assert.equal(big.jobWeights, true);
    assert.match(big.reason!, /NOT re-downloadable/);
  });
});
