/** The CLI arguments of `gpu-sessions salvage simnode --dest DEST …` against a simulated node's sshd. */
import type { SimNode } from './simnode';

export function salvageArgs(sim: SimNode, dest: string, ...extra: string[]): string[] {
  return ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile, 'salvage', 'simnode', '--dest', dest, ...extra];
}
