import * as assert from 'node:assert/strict';
import { buildScanScript } from '../../../src/core/launch/serverScan';

describe('server scan for a restore capture (issue 39, f2)', () => {
  it('ownOnly skips another user’s processes on the node before reading them; the default scan sees them', () => {
    const skip = /\n {2}if \[ "\$gs_own_only" = 1 \] && \[ ! -O "\$d" \]; then continue; fi\n/;
    assert.match(buildScanScript('N', true), /\ngs_own_only=1\n/);
    assert.match(buildScanScript('N', true), skip);
    assert.match(buildScanScript('N'), /\ngs_own_only=0\n/);
  });
});
