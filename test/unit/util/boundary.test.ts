/**
 * The redaction rule at the boundary: argv enters redacted, values stay in memory, outputs are scrubbed.
 * Cross-cutting on purpose: one secret followed from serverArgv through endpoints, the loggers and the CLI io.
 */
import assert from 'node:assert/strict';
import { redactingLogger } from '../../../src/core/util/logger';
import { REDACTED, redactOutput, redactOutputValue, rememberSecret } from '../../../src/core/util/redact';
import { serverApiKey, serverFromArgv, serverSecrets } from '../../../src/core/sglang/serverArgv';
import { authHeaders } from '../../../src/core/sglang/endpoints';
import { redactingIo } from '../../../src/cli/main';
import { planted } from '../../helpers/planted';

const SK_LIVE = planted('sk-', 'live-abcdefghijklmnopqrstuvwx');
const HF_PLANTED = planted('hf_', 'abcdefghijklmnopqrstuvwxyz0123456789');

const KEY = 'plain-key-without-any-known-shape-7f3a91';
const ADMIN = 'admin-secret-value-0c9d2e';

describe('redaction at the boundary', () => {
  it('a server parsed from argv carries no secret value; the key stays in memory', () => {
    const s = serverFromArgv({
      pid: 4242,
      ppid: 1,
      exact: true,
      argv: ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--api-k', KEY, `--admin-api-key=${ADMIN}`, '--port', '30001'],
    })!;
    assert.ok(s);
    const json = JSON.stringify(s);
    assert.ok(!json.includes(KEY) && !json.includes(ADMIN), json);
    assert.deepEqual(s.args.slice(5), ['--api-k', REDACTED, `--admin-api-key=${REDACTED}`, '--port', '30001']);
    assert.equal(s.flags['api-key'], REDACTED, 'abbreviation resolved');
    assert.equal(s.hasApiKey, true);
    assert.equal(s.port, 30001);
    assert.equal(serverApiKey(s), KEY);
    assert.equal(serverSecrets({ ...s }).get('--admin-api-key'), ADMIN, 'copies of the server find it too');
    assert.deepEqual(authHeaders(s), { Authorization: `Bearer ${KEY}` });
    // A value seen once is scrubbed from any later output, in any shape.
    assert.equal(redactOutput(`error: the server said ${KEY}!`), `error: the server said ${REDACTED}!`);
    assert.deepEqual(redactOutputValue({ a: [`x${ADMIN}y`] }), { a: [`x${REDACTED}y`] });
  });

  it('the CLI io and the loggers redact everything they write', () => {
    rememberSecret('remembered-secret-123456');
    const seen: string[] = [];
    const io = redactingIo({ out: (s) => seen.push(s), err: (s) => seen.push(s), isTTY: false });
    io.out(`--api-key ${SK_LIVE} and HF_TOKEN=${HF_PLANTED}\n`);
    io.err('boom remembered-secret-123456\n');
    const log = redactingLogger({
      trace: (m) => seen.push(m),
      info: (m) => seen.push(m),
      warn: (m) => seen.push(m),
      error: (m) => seen.push(m),
    });
    log.warn('export WANDB_API_KEY=0123456789abcdef');
    const all = seen.join('\n');
    for (const s of [SK_LIVE, HF_PLANTED, 'remembered-secret-123456', '0123456789abcdef']) assert.ok(!all.includes(s), `${s} in ${all}`);
    assert.match(all, /--api-key <redacted>/);
  });

  it('redacting is idempotent on launch-script secret references', () => {
    const line = `    --api-key "$(cat "$HOME"/'.gpu-sessions/secrets/SGLANG_API_KEY')" \\`;
    assert.equal(redactOutput(line), line);
  });
});
