/**
 * The host-key check of ONE connection, before authentication: the presented key is looked up in known_hosts
 * (changed, revoked, unknown or known, as OpenSSH decides), an unknown key is accepted only when the user says
 * so (then appended), and re-keys within the connection must present the key verified first. Never silent.
 */
import { GpuSessionsError, errorMessage } from '../util/errors';
import type { Logger } from '../util/logger';
import { HostKeyVerdict, KnownHostEntry, KnownHostsStore, describeChangedKey, fingerprintSha256, keyTypeOfBlob } from './knownHosts';

export interface HostKeyPrompt {
  host: string;
  port: number;
  keyType: string;
  fingerprint: string;
  /** Known keys of other types for this host, as "type SHA256:..." strings (usually empty). */
  otherKnown: string[];
}

interface HostKeyGateOptions {
  /** The node's name, for messages. */
  name: string;
  /** Where the key is looked up: the HostKeyAlias (OpenSSH looks it up without [alias]:port) or host:port. */
  host: string;
  port: number;
  knownHosts: KnownHostsStore;
  /** Unknown host key: ask the user; true accepts (and appends). Default: refuse. */
  confirm?: (p: HostKeyPrompt) => Promise<boolean>;
  log: Logger;
}

const HOST_KEY_ALGORITHMS = [
  'ssh-ed25519',
  'ecdsa-sha2-nistp256',
  'ecdsa-sha2-nistp384',
  'ecdsa-sha2-nistp521',
  'rsa-sha2-512',
  'rsa-sha2-256',
  'ssh-rsa',
];

export class HostKeyGate {
  /** The key verified for this connection. */
  pinned: Buffer | undefined;
  /** Why the key was refused (set before ssh2 reports its own, less precise, error). */
  error: GpuSessionsError | undefined;

  constructor(private readonly o: HostKeyGateOptions) {}

  /** Host-key algorithms to offer: the types known_hosts holds for this host first, so an honest server matches. */
  algorithms(): string[] {
    const preferred = this.o.knownHosts.preferredKeyTypes(this.o.host, this.o.port);
    const pref = preferred.flatMap((t) => (t === 'ssh-rsa' ? ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'] : [t]));
    return [...new Set([...pref.filter((t) => HOST_KEY_ALGORITHMS.includes(t)), ...HOST_KEY_ALGORITHMS])];
  }

  /** ssh2's hostVerifier: calls `verify(true)` only for a known key or one the user accepted. */
  check(key: Buffer, verify: (ok: boolean) => void): void {
    const { name } = this.o;
    // Re-keys call this again: pin the first verified key.
    if (this.pinned) {
      const same = this.pinned.equals(key);
      if (!same)
        this.error = new GpuSessionsError('host-key-changed', `${name}: the host key changed during the session; connection closed.`);
      verify(same);
      return;
    }
    // Like OpenSSH: a host known under another key type that now presents a new type counts as changed.
    let verdict: HostKeyVerdict;
    try {
      verdict = this.o.knownHosts.check(this.o.host, this.o.port, key, { otherTypeIsChanged: true });
    } catch (e) {
      this.error = new GpuSessionsError(
        'host-key-changed',
        `${name}: the server sent a malformed host key (${errorMessage(e)}). Refusing to connect.`,
      );
      verify(false);
      return;
    }
    const fp = fingerprintSha256(key);
    const kt = keyTypeOfBlob(key);
    switch (verdict.status) {
      case 'known':
        this.pinned = key;
        verify(true);
        return;
      case 'revoked':
        this.error = new GpuSessionsError(
          'host-key-revoked',
          `${name}: the host key ${kt} ${fp} is marked @revoked in ${verdict.entry.file}:${verdict.entry.line}. Refusing to connect.`,
          { fingerprint: fp },
        );
        verify(false);
        return;
      case 'changed':
        this.error = new GpuSessionsError('host-key-changed', describeChangedKey(this.o.host, this.o.port, verdict), {
          expected: verdict.expectedFingerprint,
          presented: verdict.presentedFingerprint,
          file: verdict.expected.file,
          line: verdict.expected.line,
        });
        verify(false);
        return;
      case 'unknown':
        this.askUnknown(key, kt, fp, verdict.otherKeys, verify);
        return;
    }
  }

  private askUnknown(key: Buffer, kt: string, fp: string, otherKeys: KnownHostEntry[], verify: (ok: boolean) => void): void {
    const prompt: HostKeyPrompt = {
      host: this.o.host,
      port: this.o.port,
      keyType: kt,
      fingerprint: fp,
      otherKnown: otherKeys.map((k) => `${k.keyType} ${fingerprintSha256(Buffer.from(k.keyBase64, 'base64'))} (${k.file}:${k.line})`),
    };
    const ask = this.o.confirm ?? (async () => false);
    ask(prompt).then(
      (ok) => {
        if (!ok) {
          this.error = new GpuSessionsError(
            'host-key-unknown',
            `${this.o.name}: the host key of ${prompt.port === 22 ? prompt.host : `[${prompt.host}]:${prompt.port}`} ` +
              `is not in known_hosts (${kt} ${fp}). Verify the fingerprint ` +
              `with the node's provider, then accept it (CLI: --accept-new).`,
            { fingerprint: fp },
          );
          verify(false);
          return;
        }
        try {
          const line = this.o.knownHosts.append(this.o.host, this.o.port, key);
          this.o.log.info(`Added host key to known_hosts: ${line}`);
        } catch (e) {
          this.o.log.warn(`Could not write known_hosts: ${errorMessage(e)}`);
        }
        this.pinned = key;
        verify(true);
      },
      () => verify(false),
    );
  }
}
