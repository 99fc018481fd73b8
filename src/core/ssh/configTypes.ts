/**
 * A node as resolved from the ssh configuration, and the diagnostics of loading it.
 */
import * as os from 'node:os';
import * as path from 'node:path';

export interface NodeSpec {
  name: string;
  host: string;
  user?: string;
  port: number;
  identityFiles: string[];
  proxyJump?: string;
  source: 'ssh-config' | 'settings' | 'cli' | 'demo' | 'local';
  roots?: string[];
  hostKeyAlias?: string;
  sourceFile?: string;
  sourceLine?: number;
  /** GlobalKnownHostsFile values from ssh config (expanded; [] for `none`); undefined when not set. */
  globalKnownHostsFiles?: string[];
  /** UserKnownHostsFile values from ssh config (expanded); undefined when not set. */
  userKnownHostsFiles?: string[];
  /**
   * ProxyCommand from ssh config (raw, tokens unexpanded) when it, not ProxyJump, took effect (`none`
   * disables it). The transport runs it as OpenSSH does (ssh/proxyCommand.ts).
   */
  proxyCommand?: string;
  /** `IdentitiesOnly yes`: offer only the configured identities (agent keys only when they match one). */
  identitiesOnly?: boolean;
  /** What `ssh -G` prints for this node (ssh config nodes and `[user@]host[:port]` arguments only). */
  sshG?: SshGView;
  /** Why the resolution may differ from ssh's: canonicalisation that would need DNS. */
  resolveWarnings?: string[];
  /** The tree group of a settings entry (`gpuSessions.nodes[].group`); ssh config nodes group by `sourceFile`. */
  group?: string;
}

/**
 * The fields of `ssh -G` that decide where and how the product connects, named and written as ssh -G prints them
 * (identityfile unexpanded, one entry per line ssh prints; userknownhostsfile expanded, space-separated).
 */
export interface SshGView {
  host: string;
  user: string;
  hostname: string;
  port: string;
  identitiesonly: 'yes' | 'no';
  hostkeyalias?: string;
  identityfile: string[];
  /** as ssh -G prints it: unexpanded, space-separated */
  globalknownhostsfile: string;
  userknownhostsfile: string;
  proxycommand?: string;
  proxyjump?: string;
}

/** Command-line settings of a destination (`user@host`, `ssh://user@host:port`): they win over the config. */
export interface CommandLineOpts {
  user?: string;
  port?: number;
}

/** A problem in a config file. `line` is 1-based; 0 means the file as a whole. `message` has no file:line prefix. */
export interface ConfigDiagnostic {
  file: string;
  line: number;
  message: string;
}

export interface LoadedSshConfig {
  nodes: NodeSpec[];
  diagnostics: ConfigDiagnostic[];
  /**
   * Effective settings for any host name, as `ssh -G name` would compute them (including names matched only by
   * wildcard Host blocks, e.g. a ProxyJump hop). undefined only for names ssh would reject (empty, whitespace).
   */
  resolve(alias: string, cli?: CommandLineOpts): NodeSpec | undefined;
}

/** ~/.ssh (or `<homeDir>/.ssh`). */
export function sshDir(homeDir: string = os.homedir()): string {
  return path.join(homeDir, '.ssh');
}
