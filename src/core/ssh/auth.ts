/**
 * Client authentication, as OpenSSH offers it: ssh-agent first (under IdentitiesOnly, only its keys that match
 * a configured identity), then each identity file in turn, encrypted ones with a passphrase the caller asks for.
 */
import { readFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ConnectConfig, ParsedKey } from 'ssh2';
import { errorMessage } from '../util/errors';
import type { Logger } from '../util/logger';
import type { NodeSpec } from './config';
import { loadSsh2Client } from './lazySsh2';

const DEFAULT_KEYS = ['id_ed25519', 'id_ecdsa', 'id_rsa'];

/** The key files to offer, in order: --identity, the node's IdentityFile(s), then the defaults unless IdentitiesOnly. */
export function identityFiles(node: NodeSpec, extra: string[] = [], homeDir = os.homedir()): string[] {
  const explicit = [...extra, ...node.identityFiles];
  const defaults = DEFAULT_KEYS.map((k) => path.join(homeDir, '.ssh', k));
  const seen = new Set<string>();
  // IdentitiesOnly: the configured identities only (OpenSSH falls back to the defaults when none is set).
  const all = node.identitiesOnly && explicit.length ? explicit : [...explicit, ...defaults];
  return all.filter((f) => (seen.has(f) ? false : (seen.add(f), true)));
}

function readOrUndefined(file: string): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch {
    return undefined;
  }
}

/**
 * Under IdentitiesOnly, an agent that lists only the keys matching an identity file (its `.pub`, or the
 * public half of an unencrypted private key), so the node never sees the agent's other keys.
 */
function restrictedAgent(socket: string, keyFiles: string[]): unknown {
  const { OpenSSHAgent, utils } = loadSsh2Client();
  const wanted = new Set<string>();
  for (const f of keyFiles) {
    for (const src of [f + '.pub', f]) {
      const text = readOrUndefined(src);
      if (!text) continue;
      const k = utils.parseKey(text);
      const key = Array.isArray(k) ? k[0] : k;
      if (key instanceof Error) continue;
      wanted.add(key.getPublicSSH().toString('base64'));
      break;
    }
  }
  const blob = (k: unknown): string => {
    const e = k as { getPublicSSH?: () => Buffer; pubKey?: ParsedKey | Buffer };
    if (typeof e.getPublicSSH === 'function') return e.getPublicSSH().toString('base64');
    if (e.pubKey && typeof (e.pubKey as ParsedKey).getPublicSSH === 'function')
      return (e.pubKey as ParsedKey).getPublicSSH().toString('base64');
    return '';
  };
  class Restricted extends OpenSSHAgent {
    override getIdentities(cb: Parameters<InstanceType<typeof OpenSSHAgent>['getIdentities']>[0]): void {
      super.getIdentities((err, keys) =>
        cb(
          err as Error,
          keys?.filter((k) => wanted.has(blob(k))),
        ),
      );
    }
  }
  return new Restricted(socket);
}

interface AuthOptions {
  node: NodeSpec;
  username: string;
  keyFiles: string[];
  /** The agent's socket (SSH_AUTH_SOCK), if any. */
  agent?: string;
  /** Encrypted key file: ask for its passphrase; undefined skips the key. */
  askPassphrase?: (keyFile: string) => Promise<string | undefined>;
  /** Called after a passphrase worked, so the caller may store it. */
  passphraseAccepted?: (keyFile: string, passphrase: string) => void;
  log: Logger;
}

/** ssh2's authHandler: one method per call, agent first, then the key files; `false` when none is left. */
export function authHandler(o: AuthOptions): ConnectConfig['authHandler'] {
  const { utils } = loadSsh2Client();
  const { username, keyFiles } = o;
  let keyIdx = 0;
  let agentTried = false;
  /** The next usable key file's key, asking for a passphrase when it is encrypted; undefined when none is left. */
  const nextKey = async (): Promise<ParsedKey | undefined> => {
    while (keyIdx < keyFiles.length) {
      const file = keyFiles[keyIdx++];
      const data = readOrUndefined(file);
      if (!data) continue;
      let parsed = utils.parseKey(data);
      if (parsed instanceof Error && /passphrase/i.test(parsed.message)) {
        const pass = o.askPassphrase ? await o.askPassphrase(file) : undefined;
        if (pass === undefined) {
          o.log.warn(`Skipping encrypted key ${file}: no passphrase given.`);
          continue;
        }
        parsed = utils.parseKey(data, pass);
        if (parsed instanceof Error) {
          o.log.warn(`Key ${file}: ${parsed.message}`);
          continue;
        }
        o.passphraseAccepted?.(file, pass);
      } else if (parsed instanceof Error) {
        o.log.warn(`Key ${file} could not be read: ${parsed.message}`);
        continue;
      }
      return Array.isArray(parsed) ? parsed[0] : parsed;
    }
    return undefined;
  };
  return ((_methodsLeft: string[] | null, _partial: boolean | null, next: (a: unknown) => void) => {
    void (async () => {
      if (!agentTried && o.agent) {
        agentTried = true;
        return next({ type: 'agent', username, agent: o.node.identitiesOnly ? restrictedAgent(o.agent, keyFiles) : o.agent });
      }
      const key = await nextKey();
      next(key ? { type: 'publickey', username, key } : false);
    })().catch((e) => {
      o.log.error(`Authentication setup failed: ${errorMessage(e)}`);
      next(false);
    });
  }) as unknown as ConnectConfig['authHandler'];
}
