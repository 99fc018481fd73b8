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
  /** UserKnownHostsFile values from ssh config (expanded); undefined when not set. */
  userKnownHostsFiles?: string[];
  /**
   * ProxyCommand from ssh config (raw, tokens unexpanded) when it, not ProxyJump, took effect (`none`
   * disables it). The transport runs it as OpenSSH does (ssh/proxyCommand.ts).
   */
  proxyCommand?: string;
  /** `IdentitiesOnly yes`: offer only the configured identities (agent keys only when they match one). */
  identitiesOnly?: boolean;
  /** The tree group of a settings entry (`gpuSessions.nodes[].group`); ssh config nodes group by `sourceFile`. */
  group?: string;
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
  resolve(alias: string): NodeSpec | undefined;
}

/** ~/.ssh (or `<homeDir>/.ssh`). */
export function sshDir(homeDir: string = os.homedir()): string {
  return path.join(homeDir, '.ssh');
}

/** ~/.ssh/config (or `<homeDir>/.ssh/config`). */
export function defaultSshConfigPath(homeDir: string = os.homedir()): string {
  return path.join(sshDir(homeDir), 'config');
}
