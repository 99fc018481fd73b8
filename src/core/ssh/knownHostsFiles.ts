/** Shared defaults for building transports the way OpenSSH would. */
import * as os from 'node:os';
import * as path from 'node:path';
import type { NodeSpec } from './config';
import { SSH_GLOBAL_KNOWN_HOSTS } from './configCanon';

/**
 * known_hosts files for a node: its UserKnownHostsFile(s) from ssh config, else ~/.ssh/known_hosts; then its
 * GlobalKnownHostsFile(s), else OpenSSH's system files, read-only. New keys are appended to the first.
 */
export function defaultKnownHostsFiles(node?: NodeSpec): string[] {
  const user = node?.userKnownHostsFiles?.length ? node.userKnownHostsFiles : [path.join(os.homedir(), '.ssh', 'known_hosts')];
  return [...user, ...(node?.globalKnownHostsFiles ?? SSH_GLOBAL_KNOWN_HOSTS)];
}
