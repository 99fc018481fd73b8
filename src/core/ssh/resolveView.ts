/**
 * What the product will connect to, in `ssh -G`'s field names (the `resolve` verb, the node tooltip's "Connects to").
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { NodeSpec, SshGView } from './configTypes';
import { resolveProxyJump } from './addresses';
import { SSH_DEFAULT_IDENTITIES, SSH_GLOBAL_KNOWN_HOSTS } from './configCanon';
import { safeLocalUser } from './configExpand';
import { NodeListing, resolveNode } from './nodes';

/** The fields in the order ssh -G prints them. */
export const SSH_G_ORDER: (keyof SshGView)[] = [
  'host',
  'user',
  'hostname',
  'port',
  'identitiesonly',
  'hostkeyalias',
  'identityfile',
  'globalknownhostsfile',
  'userknownhostsfile',
  'proxycommand',
  'proxyjump',
];

function ordered(v: SshGView): SshGView {
  const o: Record<string, unknown> = {};
  for (const k of SSH_G_ORDER) if (v[k] !== undefined) o[k] = Array.isArray(v[k]) ? [...v[k]] : v[k];
  return o as unknown as SshGView;
}

/** A node's ssh -G fields; for a node from settings (not ssh config), built from its own fields the same way. */
function sshGView(node: NodeSpec, homeDir: string = os.homedir()): SshGView {
  if (node.sshG) return ordered(node.sshG);
  const kh = node.userKnownHostsFiles ?? [path.join(homeDir, '.ssh', 'known_hosts'), path.join(homeDir, '.ssh', 'known_hosts2')];
  const v: SshGView = {
    host: node.name,
    user: node.user ?? safeLocalUser(),
    hostname: node.host,
    port: String(node.port),
    identitiesonly: node.identitiesOnly ? 'yes' : 'no',
    identityfile: node.identityFiles.length ? [...node.identityFiles] : [...SSH_DEFAULT_IDENTITIES],
    globalknownhostsfile: (node.globalKnownHostsFiles ?? SSH_GLOBAL_KNOWN_HOSTS).join(' '),
    userknownhostsfile: kh.join(' '),
  };
  if (node.hostKeyAlias !== undefined) v.hostkeyalias = node.hostKeyAlias;
  if (node.proxyCommand !== undefined) v.proxycommand = node.proxyCommand;
  if (node.proxyJump !== undefined) v.proxyjump = node.proxyJump;
  return ordered(v);
}

/** `user@hostname:port` (`[v6]:port`), then ` via <ProxyJump>` or ` via ProxyCommand <command>`. */
export function connectsTo(node: NodeSpec): string {
  const v = sshGView(node);
  const host = v.hostname.includes(':') ? `[${v.hostname}]` : v.hostname;
  const via = v.proxyjump ? ` via ${v.proxyjump}` : v.proxycommand ? ` via ProxyCommand ${v.proxycommand}` : '';
  return `${v.user}@${host}:${v.port}${via}`;
}

interface Resolution {
  node: NodeSpec;
  view: SshGView;
  /** each ProxyJump hop as ssh resolves it (`ssh -G -l user -p port hop`), first hop first */
  hops: SshGView[];
  warnings: string[];
}

/** Resolves a NODE argument as the product will connect to it; undefined for an unknown node. */
export function resolveForDisplay(arg: string, listing: NodeListing): Resolution | { error: string } | undefined {
  const node = resolveNode(arg, listing);
  if (!node) return undefined;
  const warnings = [...(node.resolveWarnings ?? [])];
  let hops: SshGView[] = [];
  if (node.proxyJump) {
    const r = resolveProxyJump(listing.config, node.proxyJump);
    if (!r.hops) return { error: r.error ?? `bad ProxyJump "${node.proxyJump}"` };
    hops = r.hops.map((h) => sshGView(h));
    for (const h of r.hops) warnings.push(...(h.resolveWarnings ?? []));
  }
  return { node, view: sshGView(node), hops, warnings };
}

/** The view as ssh -G prints it: `key value` lines, identityfile once per file. */
export function sshGLines(v: SshGView): string[] {
  const out: string[] = [];
  for (const [k, val] of Object.entries(v)) {
    if (val === undefined) continue;
    if (Array.isArray(val)) for (const x of val) out.push(`${k} ${x}`);
    else out.push(`${k} ${val}`);
  }
  return out;
}
