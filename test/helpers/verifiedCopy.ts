import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Transport } from '../../src/core/ssh/transport';
import { downloadOne } from '../../src/core/salvage/transfer/transfer';

const hex = (algo: string, b: Buffer) => createHash(algo).update(b).digest('hex');

/**
 * Downloads `remotePath` (holding `bytes`) to `dest`/files/big.bin with MD5 asked for and checks it: verified against
 * the node, every byte reported, the local copy identical.
 */
export async function downloadVerified(t: Transport, dest: string, remotePath: string, bytes: Buffer): Promise<void> {
  let seen = 0;
  const local = path.join(dest, 'files/big.bin');
  const r = await downloadOne(t, dest, { remotePath, localPath: 'files/big.bin', size: bytes.length }, (n) => (seen += n), undefined, {
    md5: true,
  });
  assert.equal(r.ok, true, r.reason ?? '');
  assert.equal(r.bytes, bytes.length);
  assert.equal(seen, bytes.length);
  assert.equal(r.sha256, hex('sha256', bytes));
  assert.equal(r.remoteSha256, hex('sha256', bytes), "the node's hash");
  assert.equal(r.md5, hex('md5', bytes));
  assert.ok(readFileSync(local).equals(bytes));
}
