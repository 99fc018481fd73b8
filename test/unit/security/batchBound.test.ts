/**
 * Many tar entries each just under their own limit (security finding 6 of turn 3): 30 files listed at 7 B, a
 * wrapped `tar` sending 63 MiB for each. The batch as a whole may bring its listed bytes plus one slack: the
 * stream is closed soon after, and the disk holds no more than that.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { BATCH_SLACK_BYTES, batchBudget, entryLimit } from '../../../src/core/salvage/transfer/transfer';
import { downloadBatch } from '../../../src/core/salvage/transfer/batchReceive';
import type { ExecResult, ExecStream, Transport } from '../../../src/core/ssh/transport';
import { tarHeader } from '../../helpers/tarCraft';

const MiB = 1024 * 1024;
const ENTRY = 63 * MiB;

/** A node whose tar sends ENTRY bytes for every file it is asked for, whatever their size. */
function bloatingNode(files: string[]): Transport & { sent: number; closed: boolean } {
  const node = {
    label: 'fake',
    sent: 0,
    closed: false,
    state: 'connected' as const,
    async exec(): Promise<ExecResult> {
      // the node's hash list: none matches what it sends
      return {
        stdout: Buffer.from(files.map((f) => `${'0'.repeat(64)}  ${f}\0`).join('')),
        stderr: Buffer.alloc(0),
        code: 0,
        truncated: false,
      };
    },
    async stream(): Promise<ExecStream> {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      let finish: (d: { code: number | null }) => void = () => undefined;
      const done = new Promise<{ code: number | null }>((r) => (finish = r));
      const block = Buffer.alloc(MiB, 0x41);
      let file = 0;
      let left = 0;
      const pump = () => {
        if (node.closed) return;
        if (left === 0) {
          if (file === files.length) {
            stdout.end(Buffer.alloc(1024));
            return finish({ code: 0 });
          }
          const h = tarHeader({ name: files[file++].slice(1), type: '0', size: ENTRY });
          node.sent += h.length;
          stdout.write(h);
          left = ENTRY;
        }
        const n = Math.min(left, block.length);
        left -= n;
        node.sent += n;
        if (stdout.write(block.subarray(0, n))) setImmediate(pump);
        else stdout.once('drain', pump);
      };
      setImmediate(pump);
      return {
        stdout,
        stderr,
        done,
        close() {
          node.closed = true;
          stdout.end();
          finish({ code: null });
        },
      };
    },
    connectTcp: () => Promise.reject(new Error('no')),
    describe: () => ({}),
    onStateChange: () => () => undefined,
    dispose: () => undefined,
  };
  return node as never;
}

function duBytes(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true }))
    if (e.isFile()) n += fs.statSync(path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size;
  return n;
}

describe('security: a tar batch is bounded as a whole (many entries each under their own limit)', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-batchbound-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('the budget is the listed bytes plus one slack, not one slack per file', () => {
    const items = Array.from({ length: 30 }, () => ({ size: 7 }));
    assert.ok(ENTRY < entryLimit(7), 'each entry is under its own limit');
    assert.ok(batchBudget(items) < BATCH_SLACK_BYTES + 2 * MiB, `budget ${batchBudget(items)}`);
    assert.equal(batchBudget([{ size: 5 * 1024 * MiB }]) - batchBudget([{ size: 0 }]), 5 * 1024 * MiB);
  });

  it('30 files listed at 7 B, 63 MiB sent for each: the stream is closed after about one slack, little on disk', async () => {
    const files = Array.from({ length: 30 }, (_, i) => `/home/u/many/f${i}.txt`);
    const node = bloatingNode(files);
    const results: Array<{ remotePath: string; ok: boolean; reason?: string | null }> = [];
    const dest = path.join(dir, 'dest');
    fs.mkdirSync(dest);
    let peak = 0;
    const timer = setInterval(() => (peak = Math.max(peak, duBytes(dest))), 50);
    try {
      await downloadBatch(
        node,
        dest,
        files.map((f) => ({ remotePath: f, localPath: f.slice(1), size: 7 })),
        () => undefined,
        (r) => results.push(r),
      ).catch(() => undefined);
    } finally {
      clearInterval(timer);
    }
    peak = Math.max(peak, duBytes(dest));
    console.log(`      sent ${(node.sent / MiB).toFixed(1)} MiB, peak ${(peak / MiB).toFixed(1)} MiB on disk; ${results[0]?.reason}`);
    assert.ok(node.closed, 'the stream was closed');
    const limit = batchBudget(files.map(() => ({ size: 7 }))) + 8 * MiB; // what was in flight when it closed
    assert.ok(node.sent <= limit, `the node sent ${(node.sent / MiB).toFixed(0)} MiB (limit ${(limit / MiB).toFixed(0)} MiB)`);
    assert.ok(peak <= limit, `${(peak / MiB).toFixed(0)} MiB on disk at the peak`);
    assert.equal(
      results.filter((r) => r.ok).length,
      0,
      'nothing verified: ' + JSON.stringify(results.filter((r) => r.ok).map((r) => r.remotePath)),
    );
  });
});
