/** SGLang's flag table (core/sglang/flags): argparse abbreviations, canonical spellings, boolean and secret flags. */
import assert from 'node:assert/strict';
import { canonicalFlag, isBoolFlag, isSecretFlag, knownFlags, resolveFlag } from '../../../src/core/sglang/flags';

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

describe('SGLang flags: aliases, booleans and odd spellings', () => {
  it('an abbreviation of an alias resolves to the alias; its canonical spelling is the canonical flag', () => {
    assert.equal(resolveFlag('--tensor-para'), '--tensor-parallel-size');
    assert.equal(canonicalFlag('--tensor-para'), '--tp-size');
    assert.equal(canonicalFlag('--data-parallel-size'), '--dp-size');
    // parallel.py: pp_size aliases only ["--pipeline-parallel-size"]; --pp is a prefix of --pp-size,
    // --pp-max-micro-batch-size and --pp-async-batch-depth, so argparse refuses it as ambiguous
    assert.equal(canonicalFlag('--pp'), '--pp');
    assert.equal(canonicalFlag('--pipeline-parallel-size'), '--pp-size');
    // 2026 parallel sizes and their long spellings
    assert.equal(canonicalFlag('--decode-context-parallel-size'), '--dcp-size');
    assert.equal(canonicalFlag('--attention-context-parallel-size'), '--attn-cp-size');
    assert.equal(canonicalFlag('--moe-data-parallel-size'), '--moe-dp-size');
    assert.equal(isBoolFlag('--dwdp-size'), false);
    // 2026 (0.5.20) flags: --enable-mfu-metrics takes no value; the CUDA-graph decode/prefill variants make
    // `--cuda-graph-max` ambiguous as they do to argparse, while the exact old spelling still wins
    assert.equal(isBoolFlag('--enable-mfu-metrics'), true);
    assert.equal(isBoolFlag('--cuda-graph-bs-decode'), false);
    assert.equal(resolveFlag('--cuda-graph-max'), '--cuda-graph-max');
    assert.equal(resolveFlag('--cuda-graph-max-bs'), '--cuda-graph-max-bs');
    assert.equal(resolveFlag('--cuda-graph-bs-d'), '--cuda-graph-bs-decode');
    // the prefix of an alias and of its canonical flag is one flag to argparse: the canonical spelling is taken
    assert.equal(resolveFlag('--speculative-alg'), '--speculative-algorithm');
    assert.equal(resolveFlag('--speculative-algo'), '--speculative-algo', 'an exact alias wins over a longer flag');
    assert.equal(canonicalFlag('--speculative-algo'), '--speculative-algorithm');
  });

  it('booleans take no value, abbreviated or not; value flags and unknown flags are not booleans', () => {
    assert.equal(isBoolFlag('--trust-remote-code'), true);
    assert.equal(isBoolFlag('--trust-remote'), true);
    assert.equal(isBoolFlag('--enable-dp-attention'), true);
    assert.equal(isBoolFlag('--model-path'), false);
    assert.equal(isBoolFlag('--model'), false, 'an alias of a value flag takes a value too');
    assert.equal(isBoolFlag('--no-such-flag'), false);
  });

  it('odd spellings are left as written and never throw', () => {
    for (const s of ['--', '-', '', '---tp', '--__proto__', '--constructor', '-tp', 'tp', '--TP', '--tp-size=4'])
      assert.equal(resolveFlag(s), s, JSON.stringify(s));
    assert.equal(canonicalFlag('--__proto__'), '--__proto__');
    assert.equal(isBoolFlag('--__proto__'), false);
  });

  it('secret flags by name, written with one, two or no dashes; abbreviations of secret flags too', () => {
    for (const f of ['api-key', '-api-key', '--api-key', '--hf-tok', '--admin-api']) assert.equal(isSecretFlag(f), true, f);
    for (const f of ['--tokenizer-path', 'port', '--tp', '--max-total-tokens']) assert.equal(isSecretFlag(f), false, f);
  });

  it('knownFlags: every spelling once, sorted, each with a canonical flag that is itself known', () => {
    const all = knownFlags();
    assert.equal(new Set(all).size, all.length);
    assert.deepEqual([...all], [...all].sort());
    for (const f of all) {
      assert.match(f, /^--[a-z0-9][a-z0-9-]*$/, f);
      assert.ok(all.includes(canonicalFlag(f)), f);
      assert.equal(resolveFlag(f), f, `${f} is exact`);
    }
    for (const f of ['--model-path', '--tp-size', '--api-key', '--admin-api-key', '--enable-metrics', '--log-level'])
      assert.ok(all.includes(f), f);
  });
});
