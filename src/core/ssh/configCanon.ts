/**
 * Host name forms as ssh(1) computes them without the network: IP address literals in canonical form, and the
 * CanonicalizeHostname decision (applied where it needs no DNS; where it would, the name is kept and a warning says so).
 */
import * as net from 'node:net';
import { createHash } from 'node:crypto';

/** An IPv4 address as inet_aton(3) reads it (1 to 4 parts, decimal, octal with a leading 0, hex with 0x). */
function inetAton(h: string): string | undefined {
  const parts = h.split('.');
  if (parts.length > 4 || parts.some((p) => p === '')) return undefined;
  const nums: number[] = [];
  for (const p of parts) {
    const n = /^0x[0-9a-f]*$/i.test(p)
      ? parseInt(p.slice(2) || '0', 16)
      : /^0[0-7]*$/.test(p)
        ? parseInt(p, 8)
        : /^[1-9]\d*$/.test(p)
          ? Number(p)
          : NaN;
    if (!Number.isFinite(n)) return undefined;
    nums.push(n);
  }
  const last = nums.pop()!;
  if (nums.some((n) => n > 255) || last >= 2 ** (8 * (4 - nums.length))) return undefined;
  let v = last;
  nums.forEach((n, i) => (v += n * 2 ** (8 * (3 - i))));
  return [24, 16, 8, 0].map((sh) => Math.floor(v / 2 ** sh) % 256).join('.');
}

/** An IPv6 address as glibc's inet_ntop prints it (longest zero run of 2+ compressed; v4-mapped in dotted form). */
function inetNtop6(h: string): string | undefined {
  if (!net.isIPv6(h)) return undefined;
  let norm: string;
  try {
    norm = new URL(`http://[${h}]/`).hostname.slice(1, -1);
  } catch {
    return undefined;
  }
  const [head, tail] = norm.includes('::') ? norm.split('::') : [norm, undefined];
  const hw = head ? head.split(':') : [];
  const tw = tail ? tail.split(':') : [];
  const words = [...hw, ...Array(8 - hw.length - tw.length).fill('0'), ...tw].map((w) => parseInt(w, 16));
  let best = { base: -1, len: 0 };
  let cur = { base: -1, len: 0 };
  words.forEach((w, i) => {
    if (w === 0) {
      cur = cur.base === -1 ? { base: i, len: 1 } : { base: cur.base, len: cur.len + 1 };
      if (cur.len > best.len) best = { ...cur };
    } else cur = { base: -1, len: 0 };
  });
  if (best.len < 2) best = { base: -1, len: 0 };
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (best.base !== -1 && i >= best.base && i < best.base + best.len) {
      if (i === best.base) out += ':';
      continue;
    }
    if (i !== 0) out += ':';
    if (i === 6 && best.base === 0 && (best.len === 6 || (best.len === 5 && words[5] === 0xffff))) {
      out += `${words[6] >> 8}.${words[6] & 255}.${words[7] >> 8}.${words[7] & 255}`;
      break;
    }
    out += words[i].toString(16);
  }
  if (best.base !== -1 && best.base + best.len === 8) out += ':';
  return out;
}

/** An address literal as getnameinfo(NI_NUMERICHOST) prints it (`2001:DB8:0:0::1` → `2001:db8::1`); else undefined. */
export function canonicalAddress(h: string): string | undefined {
  return h.includes(':') ? inetNtop6(h) : inetAton(h);
}

/**
 * The host name ssh uses after `HostName` (ssh.c): lower-cased unless it looks like an address (a ':' or '%', or
 * only digits and dots); then an address literal is replaced by its canonical form where that differs in more
 * than case (`2001:DB8:0:0::1` → `2001:db8::1`, `10.0.0.01` → `10.0.0.1`; `2001:DB8::1` stays as written).
 */
export function sshHostName(h: string): string {
  const host = /[:%]/.test(h) || /^[0-9.]+$/.test(h) ? h : h.toLowerCase();
  const c = canonicalAddress(host);
  return c !== undefined && c.toLowerCase() !== host.toLowerCase() ? c : host;
}

interface CanonInput {
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
  if (canonicalAddress(c.host) !== undefined) return { host: sshHostName(c.host) };
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

/** OpenSSH's default GlobalKnownHostsFile (read-only system files). */
export const SSH_GLOBAL_KNOWN_HOSTS = ['/etc/ssh/ssh_known_hosts', '/etc/ssh/ssh_known_hosts2'];
