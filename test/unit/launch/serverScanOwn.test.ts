import * as assert from 'node:assert/strict';
import { buildScanScript } from '../../../src/core/launch/serverScan';

describe('server scan for a restore capture (issue 39, f2)', () => {
  it('ownOnly skips another user’s processes on the node before reading them; the default scan sees them', () => {
    assert.match(buildScanScript('N', true), /\[ -O "\$d" \] \|\| continue/);
    assert.doesNotMatch(buildScanScript('N'), /\[ -O "\$d" \]/);
  });
});
