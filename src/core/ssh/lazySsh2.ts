/** ssh2, loaded on first use: it costs ~100 ms to require, so importing the transport stays cheap. */
export function loadSsh2(): typeof import('ssh2') {
  return require('ssh2') as typeof import('ssh2');
}

type Ssh2ClientParts = Pick<typeof import('ssh2'), 'Client' | 'OpenSSHAgent'> & {
  utils: Pick<(typeof import('ssh2'))['utils'], 'parseKey'>;
};
let ssh2Client: Ssh2ClientParts | undefined;

/**
 * What a client connection needs of ssh2 (Client, OpenSSHAgent, parseKey), from ssh2's own modules: its index
 * also loads the server, key generation, SFTP flags and the HTTP agents (node:http, node:https), about a fifth
 * of its load time, which a new `probe` process pays before it can connect. The whole package if the layout
 * ever differs.
 */
export function loadSsh2Client(): Ssh2ClientParts {
  if (ssh2Client) return ssh2Client;
  // The packaged extension (scripts/package.mjs) makes every external it requires a bundle of its own: ssh2's
  // modules required one by one would be separate copies there (a key parsed by one copy is refused by the
  // other's client), so it defines GS_SSH2_WHOLE and always takes the whole package.
  if (process.env.GS_SSH2_WHOLE === '1') return (ssh2Client = loadSsh2());
  try {
    const parts: Ssh2ClientParts = {
      Client: require('ssh2/lib/client.js') as (typeof import('ssh2'))['Client'],
      OpenSSHAgent: (require('ssh2/lib/agent.js') as typeof import('ssh2')).OpenSSHAgent,
      utils: { parseKey: (require('ssh2/lib/protocol/keyParser.js') as (typeof import('ssh2'))['utils']).parseKey },
    };
    if (typeof parts.Client !== 'function' || typeof parts.OpenSSHAgent !== 'function' || typeof parts.utils.parseKey !== 'function')
      throw new Error('unexpected ssh2 layout');
    ssh2Client = parts;
  } catch {
    ssh2Client = loadSsh2();
  }
  return ssh2Client;
}
