import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { HostKeyGate, HostKeyPrompt } from '../../../src/core/ssh/hostKeyGate';
import { KnownHostsStore } from '../../../src/core/ssh/knownHosts';
import { nullLogger } from '../../../src/core/util/logger';
import { ssh2Ed25519 } from '../../helpers/hostKeys';

const verdict = (g: HostKeyGate, key: Buffer) => new Promise<boolean>((r) => g.check(key, r));

describe('host-key gate of one connection (core/ssh/hostKeyGate)', () => {
  let dir: string;
  let file: string;
  const known = ssh2Ed25519();
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-gate-'));
    file = path.join(dir, 'known_hosts');
    writeFileSync(file, `[127.0.0.1]:2222 ${known.line}\n`);
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const gate = (confirm?: (p: HostKeyPrompt) => Promise<boolean>) =>
    new HostKeyGate({ name: 'n', host: '127.0.0.1', port: 2222, knownHosts: new KnownHostsStore([file]), confirm, log: nullLogger });

  it('accepts the known key, pins it, and refuses a different key at a re-key', async () => {
    const g = gate();
    assert.equal(await verdict(g, known.blob), true);
    assert.ok(g.pinned?.equals(known.blob));
    assert.equal(await verdict(g, ssh2Ed25519().blob), false);
    assert.equal(g.error?.code, 'host-key-changed');
    assert.match(g.error!.message, /changed during the session/);
  });

  it('offers the known key type first', () => {
    assert.equal(gate().algorithms()[0], 'ssh-ed25519');
    assert.ok(gate().algorithms().includes('rsa-sha2-512'));
  });

  it('refuses an unknown key unless the user accepts it; an accepted key is appended', async () => {
    const other = ssh2Ed25519();
    const port = (p: number) =>
      new HostKeyGate({ name: 'n', host: '127.0.0.1', port: p, knownHosts: new KnownHostsStore([file]), log: nullLogger });
    const silent = port(2223);
    assert.equal(await verdict(silent, other.blob), false);
    assert.equal(silent.error?.code, 'host-key-unknown');
    assert.match(silent.error!.message, /--accept-new/);
    assert.ok(!readFileSync(file, 'utf8').includes('2223'), 'nothing written without a yes');
    let asked: HostKeyPrompt | undefined;
    const yes = new HostKeyGate({
      name: 'n',
      host: '127.0.0.1',
      port: 2223,
      knownHosts: new KnownHostsStore([file]),
      confirm: async (p) => ((asked = p), true),
      log: nullLogger,
    });
    assert.equal(await verdict(yes, other.blob), true);
    assert.match(asked!.fingerprint, /^SHA256:/);
    assert.ok(readFileSync(file, 'utf8').includes('[127.0.0.1]:2223'));
  });

  it('refuses a changed key with both fingerprints, and never asks', async () => {
    let asked = false;
    const g = gate(async () => ((asked = true), true));
    assert.equal(await verdict(g, ssh2Ed25519().blob), false);
    assert.equal(g.error?.code, 'host-key-changed');
    assert.equal(asked, false);
    assert.ok(g.error?.detail);
  });
});
