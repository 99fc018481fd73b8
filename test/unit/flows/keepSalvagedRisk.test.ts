import * as assert from 'node:assert/strict';
import { unsavedBytes } from '../../../src/core/flows/keepSalvaged';
import type { SalvageItem } from '../../../src/core/salvage/salvageTypes';

const item = (o: Partial<SalvageItem>): SalvageItem =>
  ({ remotePath: '/w/x', kind: 'log', size: 0, selected: true, status: 'verified', ...o }) as SalvageItem;

describe('Keep Node Salvaged: bytes at risk (issue 43)', () => {
  it('a log that grew since its verified copy counts the bytes since that copy, not the whole file', () => {
    const log = item({ size: 3_000_000, changedAfterVerify: true, nodeSize: 3_000_512 });
    assert.equal(unsavedBytes([log]), 512);
  });
  it('a rewritten (shrunk) or unknown file counts whole; saved and unselected ones not at all', () => {
    assert.equal(unsavedBytes([item({ size: 100, changedAfterVerify: true, nodeSize: 40 })]), 100);
    assert.equal(unsavedBytes([item({ size: 100, changedAfterVerify: true })]), 100);
    assert.equal(unsavedBytes([item({ size: 100 }), item({ size: 7, selected: false, changedAfterVerify: true })]), 0);
  });
});
