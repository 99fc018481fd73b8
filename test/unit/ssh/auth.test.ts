import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { authHandler, identityFiles } from '../../../src/core/ssh/auth';
import type { NodeSpec } from '../../../src/core/ssh/config';
import { nullLogger } from '../../../src/core/util/logger';

const node = (extra: Partial<NodeSpec> = {}): NodeSpec =>
  ({ name: 'n', host: '127.0.0.1', port: 22, identityFiles: [], identitiesOnly: false, ...extra }) as NodeSpec;

/** Calls the handler until it gives up, collecting what it offered. */
async function offers(h: ReturnType<typeof authHandler>): Promise<Array<{ type: string; key?: { type: string } } | false>> {
  const out: Array<{ type: string; key?: { type: string } } | false> = [];
  const call = h as unknown as (m: null, p: null, next: (a: unknown) => void) => void;
  for (let i = 0; i < 10; i++) {
    const a = await new Promise<unknown>((r) => call(null, null, r));
    out.push(a as never);
    if (a === false) break;
  }
  return out;
}

describe('ssh client authentication (core/ssh/auth)', () => {
  let dir: string;
  let plain: string;
  let locked: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-auth-'));
    plain = path.join(dir, 'id_plain');
    locked = path.join(dir, 'id_locked');
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', plain]);
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', 'correct horse', '-f', locked]);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('offers --identity, then IdentityFile, then the defaults; IdentitiesOnly drops the defaults', () => {
    const n = node({ identityFiles: ['/k/a', '/k/b'] });
    assert.deepEqual(identityFiles(n, ['/k/x', '/k/a'], '/h'), [
      '/k/x',
      '/k/a',
      '/k/b',
      '/h/.ssh/id_ed25519',
      '/h/.ssh/id_ecdsa',
      '/h/.ssh/id_rsa',
    ]);
    assert.deepEqual(identityFiles({ ...n, identitiesOnly: true }, [], '/h'), ['/k/a', '/k/b']);
    // IdentitiesOnly with nothing configured falls back to the defaults, as OpenSSH does
    assert.equal(identityFiles(node({ identitiesOnly: true }), [], '/h').length, 3);
  });

  it('unlocks an encrypted key with the passphrase asked for, and says it was accepted', async () => {
    const asked: string[] = [];
    const accepted: string[] = [];
    const h = authHandler({
      node: node(),
      username: 'u',
      keyFiles: [path.join(dir, 'missing'), locked],
      askPassphrase: async (f) => (asked.push(f), 'correct horse'),
      passphraseAccepted: (f, p) => accepted.push(`${f}:${p}`),
      log: nullLogger,
    });
    const o = await offers(h);
    assert.equal(o.length, 2);
    assert.equal((o[0] as { type: string }).type, 'publickey');
    assert.equal((o[0] as { key: { type: string } }).key.type, 'ssh-ed25519');
    assert.equal(o[1], false);
    assert.deepEqual(asked, [locked]);
    assert.deepEqual(accepted, [`${locked}:correct horse`]);
  });

  it('skips an encrypted key when the passphrase is wrong or not given, and goes on to the next key', async () => {
    for (const answer of ['wrong', undefined]) {
      const accepted: string[] = [];
      const o = await offers(
        authHandler({
          node: node(),
          username: 'u',
          keyFiles: [locked, plain],
          askPassphrase: async () => answer,
          passphraseAccepted: (f) => accepted.push(f),
          log: nullLogger,
        }),
      );
      assert.equal(o.length, 2, String(answer));
      assert.equal((o[0] as { type: string }).type, 'publickey');
      assert.equal(o[1], false);
      assert.deepEqual(accepted, []);
    }
  });

  it('tries the agent first, once', async () => {
    const o = await offers(authHandler({ node: node(), username: 'u', keyFiles: [plain], agent: '/tmp/agent.sock', log: nullLogger }));
    assert.deepEqual(
      o.map((x) => (x ? x.type : false)),
      ['agent', 'publickey', false],
    );
  });
});
