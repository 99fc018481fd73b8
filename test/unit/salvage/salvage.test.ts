import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ensureParent, insideDest, localRelPath, safeComponent } from '../../../src/core/salvage/paths';
import { chooseRunDir, renderServersScript, stepOf } from '../../../src/core/salvage/salvage';
import { classifySalvage } from '../../../src/core/salvage/listing';
import { parseHashList } from '../../../src/core/salvage/transfer';
import { TarEntry, TarReader } from '../../../src/core/remote/tar';
import { planted } from '../../helpers/planted';
import { server } from '../../helpers/sglangServer';

const SK_PLANTED = planted('sk-', 'abcdefghijklmnopqrstuvwxyz123456');

describe('salvage building blocks', () => {
  it('reads GNU tar streams: long names, unicode, newlines, empty files, many entries', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-tar-'));
    try {
      const names = ['plain.log', 'x'.repeat(180) + '.log', 'ünï 日本.txt', 'new\nline.log', 'empty.log', '-dash.sh', `q'"$(x).log`];
      const contents = names.map((n, i) => (n === 'empty.log' ? '' : `${i}:${n}\n`.repeat(50 + i * 100)));
      names.forEach((n, i) => writeFileSync(path.join(dir, n), contents[i]));
      const list = names.map((n) => path.join(dir, n)).join('\0') + '\0';
      const r = spawnSync('tar', ['--null', '--verbatim-files-from', '--no-recursion', '-P', '-T', '-', '-cf', '-'], {
        input: list,
        maxBuffer: 64 * 1024 * 1024,
      });
      assert.equal(r.status, 0, r.stderr.toString());
      const got = new Map<string, string>();
      let cur: TarEntry | null = null;
      let buf: Buffer[] = [];
      const reader = new TarReader({
        entry: (e) => ((cur = e), (buf = []), true),
        data: (b) => buf.push(Buffer.from(b)),
        end: () => got.set(cur!.path, Buffer.concat(buf).toString()),
      });
      // Feed in awkward chunk sizes.
      for (let i = 0; i < r.stdout.length; i += 333) reader.push(r.stdout.subarray(i, i + 333));
      assert.ok(reader.finished);
      names.forEach((n, i) => assert.equal(got.get(path.join(dir, n)), contents[i], n));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('rejects a corrupted tar header', () => {
    const bad = Buffer.alloc(1024, 0x41);
    const reader = new TarReader({ entry: () => true, data: () => undefined, end: () => undefined });
    assert.throws(() => reader.push(bad), /corrupted/);
  });

  it('maps remote paths into the salvage folder safely', () => {
    assert.equal(localRelPath('/root/logs/a.log'), 'files/root/logs/a.log');
    assert.equal(localRelPath('/root/new\nline.log'), 'files/root/new%0Aline.log');
    assert.equal(localRelPath('/root/100%.log'), 'files/root/100%25.log');
    assert.throws(() => localRelPath('/root/../etc/passwd'), /\.\./);
    assert.throws(() => localRelPath('/'), /Refusing/);
    assert.equal(safeComponent(`q'"$(x)`), `q'%22$(x)`); // `"` is not allowed in Windows names
    assert.ok(Buffer.byteLength(safeComponent('é'.repeat(300))) <= 240);
    const dest = mkdtempSync(path.join(os.tmpdir(), 'gs-dest-'));
    try {
      assert.throws(() => insideDest(dest, '../escape'), /outside/);
      assert.throws(() => insideDest(dest, '/etc/passwd'), /outside/);
      mkdirSync(path.join(dest, 'files'));
      symlinkSync('/tmp', path.join(dest, 'files', 'evil'));
      assert.throws(() => ensureParent(dest, path.join(dest, 'files', 'evil', 'x', 'y.log')), /symlink/);
      ensureParent(dest, path.join(dest, 'files', 'ok', 'deep', 'z.log'));
    } finally {
      rmSync(dest, { recursive: true, force: true });
    }
  });

  it('parses NUL-terminated sha256sum -z output', () => {
    const h = 'a'.repeat(64);
    const m = parseHashList(Buffer.from(`${h}  /r/new\nline.log\0${'b'.repeat(64)}  /r/a b\0garbage\0`), 64);
    assert.equal(m.get('/r/new\nline.log'), h);
    assert.equal(m.get('/r/a b'), 'b'.repeat(64));
    assert.equal(m.size, 2);
  });

  it('classifies what salvage considers and maps kinds to checklist steps', () => {
    assert.equal(classifySalvage('/root/completions/batch_000001.jsonl'), 'data');
    assert.equal(classifySalvage('/dev/shm/model/model-00001-of-00011.safetensors'), 'model');
    assert.equal(classifySalvage('/root/launch_tuned.sh'), 'launch-script');
    assert.equal(classifySalvage('/root/.bash_history'), 'other');
    assert.equal(classifySalvage('/workspace/Makefile'), 'other');
    assert.equal(stepOf('launch-script'), 'scripts');
    assert.equal(stepOf('progress'), 'logs');
    assert.equal(stepOf('patch'), 'configs');
    assert.equal(stepOf('data'), 'data');
  });

  it('continues the latest run folder of the node (safe or not), so a rerun transfers only what changed', () => {
    const base = mkdtempSync(path.join(os.tmpdir(), 'gs-runs-'));
    try {
      const now = new Date(2026, 10, 29, 12, 0, 0);
      const a = chooseRunDir(base, 'node/1', now);
      assert.equal(path.basename(path.dirname(a.dir)), 'node_1');
      mkdirSync(a.dir, { recursive: true });
      writeFileSync(path.join(a.dir, 'salvage-manifest.json'), JSON.stringify({ verdict: 'unsafe', finishedAt: 'x', items: [] }));
      assert.equal(chooseRunDir(base, 'node/1', new Date(2026, 10, 29, 13, 0, 0)).dir, a.dir);
      writeFileSync(path.join(a.dir, 'salvage-manifest.json'), JSON.stringify({ verdict: 'safe', finishedAt: 'x', items: [] }));
      const again = chooseRunDir(base, 'node/1', new Date(2026, 10, 29, 13, 0, 0));
      assert.equal(again.dir, a.dir);
      assert.equal(again.previous?.verdict, 'safe');
    } finally {
      rmSync(base, { recursive: true, force: true });
    }
  });

  it('writes the running servers as a script with quoted, redacted argv', () => {
    const s = renderServersScript('n', [
      server(1, 30000, ['python3', '-m', 'sglang.launch_server', '--model-path', '/m x', '--api-key', SK_PLANTED], {
        modelPath: '/m x',
        logFile: '/root/a b.log',
        cudaVisibleDevices: '0',
        gpus: [0],
      }),
    ]);
    assert.match(s, /CUDA_VISIBLE_DEVICES=0 nohup python3 -m sglang\.launch_server --model-path '\/m x' --api-key/);
    assert.ok(!s.includes(SK_PLANTED), 'the key is not in the script');
    assert.match(s, /> '\/root\/a b\.log' 2>&1 &/);
  });
});
