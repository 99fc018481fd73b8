/**
 * Host name forms as ssh(1) computes them without the network: IP address literals in canonical form, and the
 * CanonicalizeHostname decision (applied where it needs no DNS; where it would, the name is kept and a warning says so).
 */
import * as net from 'node:net';
import { createHash } from 'node:crypto';

/** An IPv6 literal in its canonical form (`2001:DB8:0:0::1` → `2001:db8::1`), an IPv4 one as it is; else undefined. */
export function canonicalAddress(h: string): string | undefined {
  if (net.isIPv4(h)) return h;
  const zone = h.indexOf('%');
  const addr = zone >= 0 ? h.slice(0, zone) : h;
  if (!net.isIPv6(addr)) return undefined;
  try {
    const canon = new URL(`http://[${addr}]/`).hostname.slice(1, -1);
    return zone >= 0 ? canon + h.slice(zone) : canon;
  } catch {
    return h.toLowerCase();
  }
}

/** The host name ssh uses after `HostName`: address literals canonicalised, names lower-cased. */
export function sshHostName(h: string): string {
  return canonicalAddress(h) ?? h.toLowerCase();
}

export interface CanonInput {
  host: string;
  mode: string | undefined;
  proxied: boolean;
  maxDots: string | undefined;
  domains: string[] | undefined;
}

/**
 * ssh.c resolve_canonicalize without DNS: the name for the second pass, and a warning where ssh would look the
 * name up (the name is then kept, as ssh keeps it when the lookup fails and CanonicalizeFallbackLocal is on).
 */
export function canonicalizeWithoutDns(c: CanonInput): { host: string; warning?: string } {
  const mode = (c.mode ?? 'no').toLowerCase();
  if (mode === 'no' || mode === 'false') return { host: c.host };
  if (c.proxied && mode !== 'always') return { host: c.host };
  const addr = canonicalAddress(c.host);
  if (addr) return { host: addr };
  const dns = (why: string) => ({
    host: c.host,
    warning: `CanonicalizeHostname for "${c.host}" would ${why} (a DNS lookup, which GPU Sessions does not make); the name is used as it is`,
  });
  if (c.host.endsWith('.')) return dns('look the fully qualified name up');
  const maxDots = c.maxDots !== undefined && /^\d+$/.test(c.maxDots) ? Number(c.maxDots) : 1;
  if ((c.host.match(/\./g) ?? []).length > maxDots) return { host: c.host };
  const domains = (c.domains ?? []).filter((d) => d.toLowerCase() !== 'none');
  if (domains.length === 0) return { host: c.host };
  return dns(`try it in ${domains.join(', ')}`);
}

/** `%C`: the hash of `%l%h%p%r` (OpenSSH 9.2's ssh_connection_hash). */
export function connectionHash(localHost: string, host: string, port: string, user: string): string {
  return createHash('sha1').update(`${localHost}${host}${port}${user}`).digest('hex');
}

/** OpenSSH's default identity files, in its order (ssh -G lists them when none is configured). */
export const SSH_DEFAULT_IDENTITIES = [
  '~/.ssh/id_rsa',
  '~/.ssh/id_ecdsa',
  '~/.ssh/id_ecdsa_sk',
  '~/.ssh/id_ed25519',
  '~/.ssh/id_ed25519_sk',
  '~/.ssh/id_xmss',
  '~/.ssh/id_dsa',
];
