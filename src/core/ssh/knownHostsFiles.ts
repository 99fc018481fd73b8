/** Shared defaults for building transports the way OpenSSH would. */
import * as os from 'node:os';
import * as path from 'node:path';
import type { NodeSpec } from './config';

/**
 * known_hosts files for a node: its UserKnownHostsFile(s) from ssh config, else ~/.ssh/known_hosts;
 * then the system file, read-only. New keys are appended to the first.
 */
export function defaultKnownHostsFiles(node?: NodeSpec): string[] {
  const user = node?.userKnownHostsFiles?.length ? node.userKnownHostsFiles : [path.join(os.homedir(), '.ssh', 'known_hosts')];
  return [...user, '/etc/ssh/ssh_known_hosts'];
}
