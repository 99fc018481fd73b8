/** end-rental's command line (issue 46): exactly one action, a sane --verify-timeout, --yes or a terminal to confirm. */
import assert from 'node:assert/strict';
import { main } from '../../../src/cli/main';

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await main(args, { out: (s) => (out += s), err: (s) => (err += s), isTTY: false });
  return { code, out, err };
}

describe('cli end-rental: usage', () => {
  it('needs exactly one of --stop, --terminate, --shutdown', async () => {
    for (const a of [[], ['--stop', '--terminate']]) {
      const r = await run(['end-rental', 'user@127.0.0.1:1', ...a]);
      assert.equal(r.code, 2, r.err);
      assert.match(r.err, /exactly one of --stop, --terminate or --shutdown/);
    }
  });
  it('--verify-timeout is 1..3600 seconds; one NODE', async () => {
    const r = await run(['end-rental', 'user@127.0.0.1:1', '--stop', '--verify-timeout', '0']);
    assert.equal(r.code, 2);
    assert.match(r.err, /--verify-timeout/);
    assert.equal((await run(['end-rental', '--stop'])).code, 2);
  });
  it('without a terminal it ends nothing unless --yes (or --dry-run): exit 2 before any connection', async () => {
    const r = await run(['end-rental', 'user@127.0.0.1:1', '--stop']);
    assert.equal(r.code, 2);
    assert.match(r.err, /pass --yes/);
  });
  it('the help names it', async () => {
    const r = await run(['--help']);
    assert.match(r.out, /gpu-sessions end-rental NODE \(--stop \| --terminate \| --shutdown\)/);
  });
});
