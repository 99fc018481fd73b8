/**
 * The list of nodes: Host aliases from ~/.ssh/config first, then `gpuSessions.nodes` entries from
 * settings (settings add to ssh config; a settings entry with the same name overrides it).
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { GpuSessionsError } from '../util/errors';
import { ConfigDiagnostic, LoadedSshConfig, NodeSpec, loadSshConfig, nodeFromSetting, parseNodeAddress } from './config';

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

/** A NODE argument: a known node name / Host alias, or `[user@]host[:port]`. */
export function resolveNode(arg: string, listing: NodeListing): NodeSpec | undefined {
  refuseOptionLikeName(arg);
  const known = listing.nodes.find((n) => n.name === arg);
  if (known) return known;
  const viaConfig = listing.config.resolve(arg);
  if (viaConfig && (viaConfig.host !== arg || !/[@:]/.test(arg))) return viaConfig;
  const addr = parseNodeAddress(arg);
  if (!addr) return undefined;
  const base = listing.config.resolve(addr.host);
  return {
    name: arg,
    host: base?.host ?? addr.host,
    user: addr.user ?? base?.user,
    port: /:\d+$/.test(arg) || arg.startsWith('[') ? addr.port : (base?.port ?? addr.port),
    identityFiles: base?.identityFiles ?? [],
    proxyJump: base?.proxyJump,
    source: 'cli',
  };
}

/** Node names that start with '-' are refused everywhere (CLI, settings, MCP), as OpenSSH refuses them: an option. */
export function refuseOptionLikeName(name: string): void {
  if (typeof name === 'string' && name.startsWith('-'))
    throw new GpuSessionsError(
      'config',
      `Refusing the node name ${JSON.stringify(name.slice(0, 80))}: a node name may not start with '-' (OpenSSH refuses it too; it would read as an option).`,
    );
}
