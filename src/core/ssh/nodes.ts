/**
 * The list of nodes: Host aliases from ~/.ssh/config first, then `gpuSessions.nodes` entries from
 * settings (settings add to ssh config; a settings entry with the same name overrides it).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { GpuSessionsError } from '../util/errors';
import { ConfigDiagnostic, LoadedSshConfig, NodeSpec, loadSshConfig, nodeFromSetting, parseDestination } from './config';

export interface NodeListing {
  nodes: NodeSpec[];
  diagnostics: ConfigDiagnostic[];
  config: LoadedSshConfig;
}

export function defaultSshConfigFile(): string {
  return path.join(os.homedir(), '.ssh', 'config');
}

export function listNodes(
  opts: { sshConfigFile?: string; settingsNodes?: unknown[]; extra?: NodeSpec[]; homeDir?: string } = {},
): NodeListing {
  const config = loadSshConfig(opts.sshConfigFile ?? defaultSshConfigFile(), opts.homeDir ? { homeDir: opts.homeDir } : {});
  const diagnostics = [...config.diagnostics];
  const byName = new Map<string, NodeSpec>();
  for (const n of config.nodes) byName.set(n.name, n);
  (opts.settingsNodes ?? []).forEach((raw, i) => {
    const r = nodeFromSetting(raw);
    if (r.node) byName.set(r.node.name, r.node);
    else diagnostics.push({ file: 'settings: gpuSessions.nodes', line: i + 1, message: r.error ?? 'invalid entry' });
  });
  for (const n of opts.extra ?? []) byName.set(n.name, n);
  return { nodes: [...byName.values()], diagnostics, config };
}

/**
 * A NODE argument: a known node name / Host alias, or a destination as ssh(1) takes it (`[user@]host`,
 * `ssh://[user@]host[:port]`, and also `[user@]host:port`). The host is evaluated against ssh config with the
 * destination's user and port set first (they win, `Match user` and `%r` see them), so its ProxyCommand,
 * IdentitiesOnly, HostKeyAlias and UserKnownHostsFile apply as they do for `ssh user@host`.
 */
export function resolveNode(arg: string, listing: NodeListing): NodeSpec | undefined {
  refuseOptionLikeName(arg);
  const known = listing.nodes.find((n) => n.name === arg);
  if (known) return known;
  // A name our address syntax does not take (e.g. `bob@my~host`) is split as ssh(1) splits it: at the last '@'.
  const at = arg.lastIndexOf('@');
  const dest = parseDestination(arg) ?? (at > 0 ? { user: arg.slice(0, at), host: arg.slice(at + 1), port: undefined } : { host: arg });
  const node = listing.config.resolve(dest.host, { user: dest.user, port: dest.port });
  if (!node) return undefined;
  if (dest.user === undefined && dest.port === undefined && dest.host === arg) return node;
  return { ...node, name: arg, source: 'cli' };
}

/** Node names that start with '-' are refused everywhere (CLI, settings, MCP), as OpenSSH refuses them: an option. */
function refuseOptionLikeName(name: string): void {
  if (typeof name === 'string' && name.startsWith('-'))
    throw new GpuSessionsError(
      'config',
      `Refusing the node name ${JSON.stringify(name.slice(0, 80))}: a node name may not start with '-' (OpenSSH refuses it too; it would read as an option).`,
    );
}
