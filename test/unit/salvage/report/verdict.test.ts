import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { Salvager } from '../../../../src/core/flows/salvage';
import { ExecFakeTransport, execResult } from '../../../helpers/fakeTransport';
import { itemOf } from '../../../helpers/salvageManifest';

describe('the verdict (verdict)', () => {
  let base: string;
  beforeEach(() => (base = mkdtempSync(path.join(os.tmpdir(), 'gs-verdict-'))));
  afterEach(() => rmSync(base, { recursive: true, force: true }));

  const salvager = () => {
    const sv = new Salvager({
      node: 'gpu-1',
      transport: new ExecFakeTransport(() => execResult('')),
      base,
      now: new Date(2026, 10, 29, 12),
    });
    mkdirSync(sv.dir, { recursive: true });
    return sv;
  };

  it('safe only when every selected item is verified; writes the manifest and SALVAGE.md', () => {
    const sv = salvager();
    sv.manifest.items.push(
      itemOf('/root/out/a.jsonl'),
      itemOf('/root/big.bin', { selected: false, leftReason: 'large', status: 'skipped' }),
    );
    sv.finish();
    assert.equal(sv.manifest.verdict, 'safe');
    assert.deepEqual(sv.manifest.reasons, []);
    assert.deepEqual(
      sv.manifest.leftByChoice.map((l) => l.remotePath),
      ['/root/big.bin'],
    );
    assert.equal(JSON.parse(readFileSync(path.join(sv.dir, 'salvage-manifest.json'), 'utf8')).verdict, 'safe');
    assert.match(readFileSync(path.join(sv.dir, 'SALVAGE.md'), 'utf8'), /Safe to shut down/);
  });

  it('names each reason: failed items, items not saved, writers still running', () => {
    const sv = salvager();
    sv.manifest.items.push(
      itemOf('/root/out/a.jsonl', { status: 'failed', reason: 'hash mismatch' }),
      itemOf('/root/out/b.jsonl', { status: 'pending' }),
    );
    sv.manifest.writers.push({ pid: 9, command: 'python3 -m sglang.launch_server', writes: ['/root/out/a.jsonl'], server: true });
    sv.finish();
    assert.equal(sv.manifest.verdict, 'unsafe');
    assert.deepEqual(sv.manifest.reasons, ['still-running', 'failed-items', 'lost-items']);
    assert.deepEqual(
      sv.manifest.lost.map((l) => l.remotePath),
      ['/root/out/a.jsonl', '/root/out/b.jsonl'],
    );
    assert.match(sv.manifest.reasonDetails[0].message, /1 SGLang server\(s\) still running/);
  });

  it('a file in S3 is not lost, and one gone from the node after it was saved does not count', () => {
    const sv = salvager();
    sv.manifest.items.push(
      itemOf('/root/out/a.jsonl', { status: 'failed', s3: 'present' }),
      itemOf('/root/out/b.jsonl', { status: 'pending', goneFromNode: true }),
    );
    sv.finish();
    assert.deepEqual(sv.manifest.lost, []);
    assert.deepEqual(sv.manifest.reasons, ['failed-items']);
  });

  // a salvage that listed nothing proves nothing (nothing-listed)
  it('no work folder found: unsafe, nothing-listed, said in the manifest, SALVAGE.md and the reason', () => {
    const sv = salvager();
    sv.finish();
    assert.equal(sv.manifest.verdict, 'unsafe');
    assert.deepEqual(sv.manifest.reasons, ['nothing-listed']);
    assert.match(sv.manifest.reasonDetails[0].message, /no work folder was found on the node.*--roots or --add-root/);
    const onDisk = JSON.parse(readFileSync(path.join(sv.dir, 'salvage-manifest.json'), 'utf8')) as { verdict: string; reasons: string[] };
    assert.equal(onDisk.verdict, 'unsafe');
    assert.deepEqual(onDisk.reasons, ['nothing-listed']);
    assert.match(readFileSync(path.join(sv.dir, 'SALVAGE.md'), 'utf8'), /Not safe to shut down — nothing was listed/);
  });

  it('folders found but no file in them (a server command line alone is no file): unsafe, naming the folders', () => {
    const sv = salvager();
    sv.manifest.roots.push({ path: '/root/job', why: 'cwd' });
    sv.manifest.items.push(itemOf('/proc/9/cmdline', { kind: 'server-cmdline' }));
    sv.finish();
    assert.equal(sv.manifest.verdict, 'unsafe');
    assert.deepEqual(sv.manifest.reasons, ['nothing-listed']);
    assert.match(sv.manifest.reasonDetails[0].message, /no file under the work's folders \(\/root\/job\)/);
  });

  it('one file listed, even one left on the node by choice, is evidence: the other rules decide', () => {
    const sv = salvager();
    sv.manifest.roots.push({ path: '/root', why: 'home' });
    sv.manifest.items.push(itemOf('/root/.cache/pip/x.whl', { kind: 'cache', selected: false, leftReason: 'cache', status: 'skipped' }));
    sv.finish();
    assert.equal(sv.manifest.verdict, 'safe');
    assert.deepEqual(sv.manifest.reasons, []);
  });
});
