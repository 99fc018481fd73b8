/** ssh2, loaded on first use: it costs ~100 ms to require, so importing the transport stays cheap. */
export function loadSsh2(): typeof import('ssh2') {
  return require('ssh2') as typeof import('ssh2');
}
