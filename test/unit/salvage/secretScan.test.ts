/** The salvage secrets scan (core/salvage/secretScan): names the line and the kind of each secret, never its value. */
import assert from 'node:assert/strict';
import { scanSecrets } from '../../../src/core/salvage/secretScan';
import { planted } from '../../helpers/planted';

const HF_PLANTED = planted('hf_', 'AbCdEfGhIjKlMnOpQrStUvWxYz012345');

describe('salvage secrets scan (core/salvage/secretScan)', () => {
  it('the secrets scan names lines and kinds, never values', () => {
    const hits = scanSecrets(`a=1\nexport HF_TOKEN=${HF_PLANTED}\nok\naws_secret_access_key = wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEYzz\n`);
    assert.deepEqual(hits, [
      { line: 2, kind: 'huggingface-token' },
      { line: 4, kind: 'aws-secret-access-key' },
    ]);
    assert.deepEqual(scanSecrets('nothing secret here\nmax_tokens=512\n'), []);
    assert.ok(!JSON.stringify(hits).includes('hf_'));
  });
});
