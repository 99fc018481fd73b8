/** The salvage secrets scan (core/salvage/secretScan): names the line and the kind of each secret, never its value. */
import assert from 'node:assert/strict';
import { looksLikeText, scanSecrets } from '../../../../src/core/salvage/transfer/secretScan';
import { planted } from '../../../helpers/planted';

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

describe('salvage secrets scan: kinds, bounds and binary files', () => {
  it('names each kind by the line it is on; values never appear', () => {
    const key = planted('sk-', 'abcdefghijklmnopqrstuv12');
    const text = [
      '-----BEGIN OPENSSH PRIVATE KEY-----',
      'b3BlbnNzaC1rZXktdjEAAAAA',
      '-----END OPENSSH PRIVATE KEY-----',
      `OPENAI_API_KEY=${key}`,
      'url = https://bob:hunter2hunter2@example.invalid/x',
      'Authorization: Bearer abcdefghijklmnop1234',
      'plain line',
    ].join('\n');
    const hits = scanSecrets(text);
    assert.deepEqual(hits, [
      { line: 1, kind: 'private-key' },
      { line: 4, kind: 'openai-api-key' },
      { line: 5, kind: 'url-password' },
      { line: 6, kind: 'bearer-token' },
    ]);
    assert.ok(!JSON.stringify(hits).includes(key));
  });

  it('stops at max hits; empty text has none', () => {
    const text = Array.from({ length: 500 }, (_, i) => `HF_TOKEN=${HF_PLANTED}${i}`).join('\n');
    assert.equal(scanSecrets(text).length, 200);
    assert.equal(scanSecrets(text, 3).length, 3);
    assert.deepEqual(scanSecrets(''), []);
  });

  it('looksLikeText: a NUL byte in the first 8 KiB is binary; after it, text', () => {
    assert.equal(looksLikeText(Buffer.from('a=1\n')), true);
    assert.equal(looksLikeText(Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x00])), false);
    assert.equal(looksLikeText(Buffer.concat([Buffer.alloc(8192, 0x61), Buffer.from([0])])), true);
    assert.equal(looksLikeText(Buffer.alloc(0)), true);
  });
});
