/** SGLang's flag table (core/sglang/flags): argparse abbreviations, canonical spellings, boolean and secret flags. */
import assert from 'node:assert/strict';
import { canonicalFlag, isSecretFlag, resolveFlag } from '../../../src/core/sglang/flags';

describe('SGLang flags (core/sglang/flags)', () => {
  it('resolves argparse abbreviations against the known flags', () => {
    assert.equal(resolveFlag('--mem-frac'), '--mem-fraction-static');
    assert.equal(resolveFlag('--api-k'), '--api-key');
    assert.equal(resolveFlag('--tp'), '--tp');
    assert.equal(canonicalFlag('--tp'), '--tp-size');
    assert.equal(canonicalFlag('--expert-parallel-size'), '--ep-size');
    assert.equal(resolveFlag('--enable-m'), '--enable-m', 'ambiguous (metrics, mixed-chunk, memory-saver...) stays as written');
    assert.equal(resolveFlag('--no-such-flag'), '--no-such-flag');
    for (const f of ['--api-key', '--api-k', '--admin-api-key', '--hf-token', '--ssl-keyfile-password', '--my-secret', '--db-password'])
      assert.equal(isSecretFlag(f), true, f);
    for (const f of ['--max-total-tokens', '--tokenizer-path', '--ssl-keyfile', '--speculative-eagle-topk', '--kv-cache-dtype'])
      assert.equal(isSecretFlag(f), false, f);
  });
});
