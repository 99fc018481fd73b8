/**
 * Host, port and user validation, ProxyJump parsing and resolution against the loaded configuration.
 */
import { LoadedSshConfig, NodeSpec } from './configTypes';
import { printable } from './configSyntax';

// ---------------------------------------------------------------------------------------------------------------
// Addresses
// ---------------------------------------------------------------------------------------------------------------

const HOSTNAME_RE = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?$/;
const IPV6_RE = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%[A-Za-z0-9_.-]+)?$/;
export const USER_RE = /^[^\s:/\x00-\x1f\x7f]+$/;

export function validHost(h: string): boolean {
  return HOSTNAME_RE.test(h) || (IPV6_RE.test(h) && (h.match(/:/g) ?? []).length >= 2);
}

/**
 * Why ssh(1) refuses a destination host name ("hostname contains invalid characters": a leading '-', shell
 * metacharacters, a comma, whitespace or control characters), or undefined when it accepts it.
 */
export function refusedHostReason(h: string): string | undefined {
  if (h.startsWith('-')) return "it starts with '-'";
  const bad = /['`"$\\;&<>|(){},\s\x00-\x1f\x7f]/.exec(h);
  return bad ? `it contains ${JSON.stringify(bad[0])}` : undefined;
}

export function parsePort(s: string): number | undefined {
  if (!/^\d{1,5}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 && n <= 65535 ? n : undefined;
}

/**
 * `[user@]host[:port]`, `[user@][v6addr]:port`, bare `v6addr` (and an `ssh://` prefix); port undefined if absent.
 * The user is what precedes the last '@', as ssh(1) splits it; the host keeps its case (Host lines match it
 * case-insensitively, HostName is lower-cased after evaluation).
 */
export function parseDestination(s: string): { user?: string; host: string; port?: number } | undefined {
  if (typeof s !== 'string') return undefined;
  let t = s.trim();
  if (!t || /\s/.test(t)) return undefined;
  if (/^ssh:\/\//i.test(t)) t = t.slice(6).replace(/\/$/, '');
  const at = t.lastIndexOf('@');
  let user: string | undefined;
  if (at >= 0) {
    user = t.slice(0, at);
    t = t.slice(at + 1);
    if (!user || !USER_RE.test(user)) return undefined;
  }
  let host: string;
  let port: number | undefined;
  if (t.startsWith('[')) {
    const m = /^\[([^\]]+)\](?::(\d+))?$/.exec(t);
    if (!m) return undefined;
    host = m[1];
    if (m[2] !== undefined) {
      port = parsePort(m[2]);
      if (port === undefined) return undefined;
    }
  } else if ((t.match(/:/g) ?? []).length >= 2) {
    host = t; // bare IPv6 address, no port
    if (!IPV6_RE.test(host)) return undefined;
  } else {
    const colon = t.indexOf(':');
    if (colon >= 0) {
      port = parsePort(t.slice(colon + 1));
      if (port === undefined) return undefined;
      host = t.slice(0, colon);
    } else host = t;
  }
  if (!host || !validHost(host)) return undefined;
  return { user, host, port };
}

/** `[user@]host[:port]`, also `[::1]:2222` and bare `::1`. Port defaults to 22. undefined for garbage. */
export function parseNodeAddress(s: string, defaults: { user?: string } = {}): { user?: string; host: string; port: number } | undefined {
  const a = parseDestination(s);
  if (!a) return undefined;
  return { user: a.user ?? defaults.user, host: a.host, port: a.port ?? 22 };
}

/**
 * Splits a ProxyJump value into hops (`[user@]host[:port]` or `ssh://[user@]host[:port]`, comma-separated).
 * `none` gives no hops. A hop's port is undefined when not given (the hop's own ssh config then applies).
 */
export function parseProxyJump(s: string): { hops?: { user?: string; host: string; port?: number }[]; error?: string } {
  const t = (s ?? '').trim();
  if (t.toLowerCase() === 'none') return { hops: [] };
  if (!t) return { error: 'empty ProxyJump' };
  const hops: { user?: string; host: string; port?: number }[] = [];
  for (const part of t.split(',')) {
    const a = parseDestination(part);
    if (!a) return { error: `bad ProxyJump hop "${printable(part.trim())}" (expected [user@]host[:port])` };
    hops.push(a);
  }
  return { hops };
}

/**
 * The hops of `proxyJump`, each resolved through ssh config like `ssh -J` does (config for the hop's host name,
 * with an explicit user/port in the hop taking precedence), first hop first.
 */
export function resolveProxyJump(config: LoadedSshConfig, proxyJump: string): { hops?: NodeSpec[]; error?: string } {
  const p = parseProxyJump(proxyJump);
  if (!p.hops) return { error: p.error };
  const hops: NodeSpec[] = [];
  for (const h of p.hops) {
    // Evaluated as `ssh -l user -p port host` (what ssh runs for the hop): the hop's user and port win over the
    // config and `Match user` sees them.
    const base = config.resolve(h.host, { user: h.user, port: h.port });
    if (!base) return { error: `bad ProxyJump hop "${h.host}"` };
    hops.push({ ...base, name: h.host });
  }
  return { hops };
}
