import assert from 'node:assert/strict';
import { parseHashList } from '../../../../src/core/salvage/transfer/transfer';

describe("salvage transfer: the node's hashes", () => {
  it('parses NUL-terminated sha256sum -z output', () => {
    const h = 'a'.repeat(64);
    const m = parseHashList(Buffer.from(`${h}  /r/new\nline.log\0${'b'.repeat(64)}  /r/a b\0garbage\0`), 64);
    assert.equal(m.get('/r/new\nline.log'), h);
    assert.equal(m.get('/r/a b'), 'b'.repeat(64));
    assert.equal(m.size, 2);
  });
});
