/** e2: keep-salvaged's append path writes at most m − n bytes, whatever the node sends. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import { downloadAppend } from '../../../src/core/salvage/transfer/transfer';
import type { ExecResult, ExecStream, Transport } from '../../../src/core/ssh/transport';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

/** A node whose `head` ignores -c: the append stream sends 'X' forever until the channel is closed. */
function endlessNode(base: Buffer, appended: Buffer): Transport & { sent: number; closed: boolean } {
  const node = {
    label: 'fake',
    sent: 0,
    closed: false,
    state: 'connected' as const,
    async exec(command: string): Promise<ExecResult> {
      // prefix hashes: of the first n bytes, and of the first m bytes (as the node would print them)
      const out = `${sha(base)}  -\n${sha(Buffer.concat([base, appended]))}  -\n`;
      assert.match(command, /sha256sum/);
      return { stdout: Buffer.from(out), stderr: Buffer.alloc(0), code: 0, truncated: false };
    },
    async stream(): Promise<ExecStream> {
      const stdout = new PassThrough();
      const stderr = new PassThrough();
      let finish: (d: { code: number | null }) => void = () => undefined;
      const done = new Promise<{ code: number | null }>((r) => (finish = r));
      const chunk = Buffer.concat([appended, Buffer.alloc(1024 * 1024, 0x58)]);
      const pump = () => {
        if (node.closed) return;
        if (node.sent > 2 * 1024 ** 3) return finish({ code: 0 }); // safety stop for a broken implementation
        node.sent += chunk.length;
        stdout.write(chunk);
        setImmediate(pump);
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

describe('security: the append path of continuous salvage is bounded (e2)', () => {
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs24-append-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('a 12-byte log that grew by 6 bytes: 18 bytes on disk and verified, the endless stream cut and closed', async () => {
    const base = Buffer.from('hello world\n');
    const appended = Buffer.from('more!\n');
    fs.mkdirSync(path.join(dir, 'files'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'files', 'a.log'), base);
    const node = endlessNode(base, appended);
    const r = await downloadAppend(
      node,
      dir,
      { remotePath: '/root/a.log', localPath: 'files/a.log', size: 18, baseSize: 12, baseSha256: sha(base) },
      () => undefined,
    );
    assert.ok(node.closed, 'the channel was closed');
    assert.ok(node.sent < 64 * 1024 * 1024, `the node sent ${node.sent} bytes before we closed`);
    assert.equal(r.appended, 6);
    assert.ok(r.ok, r.reason ?? '');
    assert.equal(fs.statSync(path.join(dir, 'files', 'a.log')).size, 18);
    // no partial file left that grew with the stream
    for (const f of fs.readdirSync(path.join(dir, 'files'))) assert.ok(fs.statSync(path.join(dir, 'files', f)).size <= 18, f);
  });
});
