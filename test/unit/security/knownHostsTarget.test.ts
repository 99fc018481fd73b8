import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore, refuseNonKnownHostsFile } from '../../../src/core/ssh/knownHosts';
import { ssh2Ed25519 } from '../../helpers/hostKeys';

describe('security: accepted host keys go only to a known_hosts file (a2)', () => {
  let dir: string;
  beforeEach(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gs24-kh-'))));
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('refuses a file named authorized_keys (even empty or missing), and leaves it unchanged', () => {
    const ak = path.join(dir, 'authorized_keys');
    const blob = ssh2Ed25519().blob;
    assert.throws(() => new KnownHostsStore([ak]).append('restrict', 22, blob), /authorized_keys file/);
    assert.ok(!fs.existsSync(ak));
    fs.writeFileSync(path.join(dir, 'authorized_keys2'), '');
    assert.throws(() => new KnownHostsStore([path.join(dir, 'authorized_keys2')]).append('h', 22, blob), /authorized_keys/);
    assert.equal(fs.readFileSync(path.join(dir, 'authorized_keys2'), 'utf8'), '');
  });

  it('refuses a file whose lines read as authorized_keys entries, and a link to authorized_keys', () => {
    const blob = ssh2Ed25519().blob;
    const f = path.join(dir, 'keys');
    const before = `ssh-ed25519 ${blob.toString('base64')} me@laptop\n`;
    fs.writeFileSync(f, before);
    assert.throws(() => new KnownHostsStore([f]).append('h', 22, blob), /authorized_keys entries/);
    assert.equal(fs.readFileSync(f, 'utf8'), before);
    fs.writeFileSync(f, `restrict,command="x" ssh-ed25519 ${blob.toString('base64')}\n`);
    assert.throws(() => refuseNonKnownHostsFile(f), /authorized_keys entries/);
    const ak = path.join(dir, 'authorized_keys');
    fs.writeFileSync(ak, '');
    fs.symlinkSync(ak, path.join(dir, 'known_hosts'));
    assert.throws(() => new KnownHostsStore([path.join(dir, 'known_hosts')]).append('h', 22, blob), /authorized_keys file/);
    assert.equal(fs.readFileSync(ak, 'utf8'), '');
  });

  it('still appends to a real known_hosts file; a host named like an option is written hashed', () => {
    const kh = path.join(dir, 'known_hosts');
    const a = ssh2Ed25519().blob;
    const b = ssh2Ed25519().blob;
    const store = new KnownHostsStore([kh]);
    assert.equal(store.append('gpu1', 22, a), `gpu1 ssh-ed25519 ${a.toString('base64')}`);
    const line = store.append('restrict', 22, b);
    assert.match(line, /^\|1\|/);
    assert.equal(store.check('restrict', 22, b).status, 'known');
  });
});
