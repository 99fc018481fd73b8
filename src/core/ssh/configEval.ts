/**
 * Evaluation with OpenSSH readconf.c semantics: Host and Match (never exec), the Match final pass, resolved nodes.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { matchPattern, matchPatternList } from './knownHosts';
import { CommandLineOpts, LoadedSshConfig, NodeSpec } from './configTypes';
import { Item, MAX_INCLUDE_DEPTH, ParsedFile, printable } from './configSyntax';
import { USER_RE, parsePort, parseProxyJump, refusedHostReason, validHost } from './addresses';
import { SSH_DEFAULT_IDENTITIES, SSH_GLOBAL_KNOWN_HOSTS, canonicalizeWithoutDns, connectionHash, sshHostName } from './configCanon';
import { expandEnv, expandPercent, expandTilde, safeLocalUser, safeUid } from './configExpand';
import { Loader } from './configLoader';

// ---------------------------------------------------------------------------------------------------------------
// Evaluation (OpenSSH readconf.c semantics)
// ---------------------------------------------------------------------------------------------------------------

interface EvalState {
  alias: string;
  localUser: string;
  final: boolean;
  wantFinal: boolean;
  /** the name Host lines are matched against: the alias, or in the final pass the resolved host name */
  hostForHost: string;
  opts: Map<string, string[]>;
  identityFiles: string[];
  firstMatch?: { file: string; line: number };
}

function currentHostName(st: EvalState): string {
  const hn = st.opts.get('hostname')?.[0];
  return hn !== undefined ? expandPercent(hn, { h: st.alias }) : st.alias;
}

function evalMatch(item: Extract<Item, { kind: 'match' }>, st: EvalState): boolean {
  let result = true;
  for (const c of item.criteria) {
    let r: boolean | undefined;
    switch (c.name) {
      case 'all':
        r = true;
        break;
      case 'canonical':
        r = st.final;
        break;
      case 'final':
        st.wantFinal = true;
        r = st.final;
        break;
      case 'host':
        r = matchPatternList(sshHostName(currentHostName(st)), c.arg!, true) === 1;
        break;
      case 'originalhost':
        r = matchPatternList(st.alias.toLowerCase(), c.arg!, true) === 1;
        break;
      case 'user':
        r = matchPatternList(st.opts.get('user')?.[0] ?? st.localUser, c.arg!, false) === 1;
        break;
      case 'localuser':
        r = matchPatternList(st.localUser, c.arg!, false) === 1;
        break;
      default:
        r = undefined; // exec, localnetwork, ...: never evaluated; the block does not apply
    }
    if (r === undefined || r === c.negated) result = false;
  }
  return result;
}

function hostLineMatches(patterns: string[], name: string): boolean {
  let active = false;
  for (const raw of patterns) {
    const negated = raw.startsWith('!');
    const p = negated ? raw.slice(1) : raw;
    if (matchPattern(name, p)) {
      if (negated) return false;
      active = true;
    }
  }
  return active;
}

function setOption(st: EvalState, key: string, args: string[]): void {
  if (key === 'identityfile' || key === 'identityfile2') {
    st.identityFiles.push(args[0]);
    return;
  }
  if (key === 'proxyjump' || key === 'proxycommand') {
    // Whichever of the two comes first wins and blocks the other (`ProxyCommand none` too); `ProxyJump none`
    // blocks a later ProxyJump but not a later ProxyCommand (ssh -G agrees).
    const pj = st.opts.get('proxyjump')?.[0];
    const blocked = st.opts.has(key) || (key === 'proxyjump' ? st.opts.has('proxycommand') : pj !== undefined && isSet(pj));
    if (!blocked) st.opts.set(key, args);
    return;
  }
  if (!st.opts.has(key)) st.opts.set(key, args);
}

function walk(loader: Loader, items: Item[], st: EvalState, active: boolean, neverMatch: boolean, stack: string[]): void {
  let act = active;
  for (const item of items) {
    switch (item.kind) {
      case 'host':
        act = !neverMatch && hostLineMatches(item.patterns, st.hostForHost);
        if (act && !st.firstMatch && !st.final) st.firstMatch = { file: item.file, line: item.line };
        break;
      case 'never':
        act = false;
        break;
      case 'match': {
        const m = evalMatch(item, st); // evaluated even when inactive: it may request the final pass
        act = !neverMatch && m;
        break;
      }
      case 'include':
        for (const t of item.targets) {
          const pf = loader.parsed.get(t);
          if (!pf || stack.includes(t) || stack.length >= MAX_INCLUDE_DEPTH) continue;
          walk(loader, pf.items, st, act, neverMatch || !act, [...stack, t]);
        }
        break;
      case 'option':
        if (act) setOption(st, item.key, item.args);
        break;
    }
  }
}

/**
 * Loads nodes from an OpenSSH client config file. Never throws: unreadable files and bad lines become diagnostics.
 * @param opts.homeDir home directory for `~`, `%d` and relative Includes (default: os.homedir())
 * @param opts.user local user name, the default remote user and `%u` (default: os.userInfo().username)
 */
export function loadSshConfig(file: string, opts: { homeDir?: string; user?: string } = {}): LoadedSshConfig {
  const homeDir = opts.homeDir ?? os.homedir();
  const localUser = opts.user ?? safeLocalUser();
  const loader = new Loader(homeDir, localUser);
  const root = path.resolve(expandTilde(file, homeDir, localUser));
  let rootFile: ParsedFile | undefined;
  try {
    rootFile = loader.load(root, []);
  } catch (err) {
    loader.diag(root, 0, `could not load (${(err as Error).message}); check the file`);
  }
  const firstListing = new Map<string, { file: string; line: number }>();
  for (const a of loader.aliases) firstListing.set(a.alias, { file: a.file, line: a.line });

  const cache = new Map<string, NodeSpec | undefined>();
  const resolve = (alias: string, cli: CommandLineOpts = {}): NodeSpec | undefined => {
    // Names ssh refuses ("hostname contains invalid characters": a leading '-', metacharacters, ',') resolve to nothing.
    if (typeof alias !== 'string' || alias === '' || refusedHostReason(alias)) return undefined;
    const key = JSON.stringify([alias, cli.user ?? null, cli.port ?? null]);
    if (cache.has(key)) return cloneNode(cache.get(key));
    let node: NodeSpec | undefined;
    try {
      node = computeNode(loader, rootFile, alias, homeDir, localUser, firstListing.get(alias), cli);
      if (node && (refusedHostReason(node.host) || node.user?.startsWith('-'))) node = undefined;
    } catch {
      node = undefined;
    }
    cache.set(key, node);
    return cloneNode(node);
  };

  const nodes: NodeSpec[] = [];
  for (const a of loader.aliases) {
    const n = resolve(a.alias);
    if (n) nodes.push(n);
  }
  return { nodes, diagnostics: loader.diagnostics, resolve };
}

function cloneNode(n: NodeSpec | undefined): NodeSpec | undefined {
  if (!n) return undefined;
  const c: NodeSpec = { ...n, identityFiles: [...n.identityFiles] };
  if (n.userKnownHostsFiles) c.userKnownHostsFiles = [...n.userKnownHostsFiles];
  if (n.globalKnownHostsFiles) c.globalKnownHostsFiles = [...n.globalKnownHostsFiles];
  if (n.roots) c.roots = [...n.roots];
  if (n.sshG) c.sshG = { ...n.sshG, identityfile: [...n.sshG.identityfile] };
  if (n.resolveWarnings) c.resolveWarnings = [...n.resolveWarnings];
  return c;
}

function computeNode(
  loader: Loader,
  rootFile: ParsedFile | undefined,
  alias: string,
  homeDir: string,
  localUser: string,
  listing: { file: string; line: number } | undefined,
  cli: CommandLineOpts,
): NodeSpec {
  const st: EvalState = { alias, localUser, final: false, wantFinal: false, hostForHost: alias, opts: new Map(), identityFiles: [] };
  // ssh(1): settings from the command line (user@, ssh://…:port) are set first, so they win and Match user sees them.
  if (cli.user !== undefined) st.opts.set('user', [cli.user]);
  if (cli.port !== undefined) st.opts.set('port', [String(cli.port)]);
  const warnings: string[] = [];
  if (rootFile) {
    walk(loader, rootFile.items, st, true, false, [rootFile.file]);
    const canon = canonicalizeWithoutDns({
      host: sshHostName(currentHostName(st)),
      mode: st.opts.get('canonicalizehostname')?.[0],
      proxied: isSet(st.opts.get('proxyjump')?.[0]) || isSet(st.opts.get('proxycommand')?.[0]),
      maxDots: st.opts.get('canonicalizemaxdots')?.[0],
      domains: st.opts.get('canonicaldomains'),
    });
    if (canon.warning) warnings.push(canon.warning);
    if (st.wantFinal || isSet(st.opts.get('canonicalizehostname')?.[0], ['no', 'false'])) {
      // ssh re-reads the config with the resolved host name; Host lines now match that name.
      st.opts.set('hostname', [canon.host.replace(/%/g, '%%')]);
      st.final = true;
      st.hostForHost = canon.host;
      walk(loader, rootFile.items, st, true, false, [rootFile.file]);
    }
  }
  return buildNode(st, alias, homeDir, localUser, listing ?? st.firstMatch, warnings);
}

function isSet(v: string | undefined, off: string[] = ['none']): boolean {
  return v !== undefined && !off.includes(v.toLowerCase());
}

function buildNode(
  st: EvalState,
  alias: string,
  homeDir: string,
  localUser: string,
  where: { file: string; line: number } | undefined,
  warnings: string[],
): NodeSpec {
  const host = sshHostName(currentHostName(st));
  const user = st.opts.get('user')?.[0] ?? localUser;
  const port = parsePort(st.opts.get('port')?.[0] ?? '') ?? 22;
  const hkaRaw = st.opts.get('hostkeyalias')?.[0];
  const hostKeyAlias = hkaRaw !== undefined ? hkaRaw.toLowerCase() : undefined;
  const pjRaw = st.opts.get('proxyjump')?.[0];
  const proxyJump = isSet(pjRaw) ? pjRaw : undefined;
  const pcRaw = st.opts.get('proxycommand')?.join(' ');
  const proxyCommand = isSet(pcRaw) ? pcRaw : undefined;
  const hops = proxyJump !== undefined ? (parseProxyJump(proxyJump).hops ?? []) : [];

  let localHost = '';
  try {
    localHost = os.hostname();
  } catch {
    /* ignore */
  }
  const tokens: Record<string, string> = {
    d: homeDir,
    u: localUser,
    h: host,
    r: user,
    p: String(port),
    n: alias,
    l: localHost,
    L: localHost.split('.')[0],
    i: safeUid(),
    k: hostKeyAlias ?? alias,
    j: hops.length ? hops[hops.length - 1].host : '',
    C: connectionHash(localHost, host, String(port), user),
  };
  const expandPath = (p: string) => expandEnv(expandPercent(expandTilde(p, homeDir, localUser), tokens));
  const rawIdentities: string[] = [];
  for (const f of st.identityFiles) if (!rawIdentities.includes(f)) rawIdentities.push(f);
  const identityFiles: string[] = [];
  for (const f of rawIdentities) {
    if (f.toLowerCase() === 'none') continue; // `IdentityFile none`: no file
    const e = expandPath(f);
    if (!identityFiles.includes(e)) identityFiles.push(e);
  }
  const ukh = st.opts.get('userknownhostsfile');
  const ukhNone = ukh !== undefined && ukh.length === 1 && ukh[0].toLowerCase() === 'none';
  const userKnownHostsFiles = ukh && !ukhNone ? ukh.map(expandPath) : undefined;
  const gkh = st.opts.get('globalknownhostsfile');
  const gkhNone = gkh !== undefined && gkh.length === 1 && gkh[0].toLowerCase() === 'none';
  const identitiesOnly = /^yes$/i.test(st.opts.get('identitiesonly')?.[0] ?? '');

  const node: NodeSpec = { name: alias, host, user, port, identityFiles, source: 'ssh-config' };
  if (proxyJump !== undefined) node.proxyJump = proxyJump;
  if (proxyCommand !== undefined) node.proxyCommand = proxyCommand;
  if (hostKeyAlias !== undefined) node.hostKeyAlias = hostKeyAlias;
  if (userKnownHostsFiles) node.userKnownHostsFiles = userKnownHostsFiles;
  if (gkh) node.globalKnownHostsFiles = gkhNone ? [] : gkh.map(expandPath);
  if (identitiesOnly) node.identitiesOnly = true;
  if (where) {
    node.sourceFile = where.file;
    node.sourceLine = where.line;
  }
  if (warnings.length) node.resolveWarnings = warnings;
  const defaultKh = ['~/.ssh/known_hosts', '~/.ssh/known_hosts2'].map(expandPath);
  node.sshG = {
    host: alias,
    user,
    hostname: host,
    port: String(port),
    identitiesonly: identitiesOnly ? 'yes' : 'no',
    identityfile: rawIdentities.length ? rawIdentities : [...SSH_DEFAULT_IDENTITIES],
    globalknownhostsfile: (gkh ?? SSH_GLOBAL_KNOWN_HOSTS).join(' '),
    userknownhostsfile: ukhNone ? 'none' : (userKnownHostsFiles ?? defaultKh).join(' '),
  };
  if (hostKeyAlias !== undefined) node.sshG.hostkeyalias = hostKeyAlias;
  if (proxyCommand !== undefined) node.sshG.proxycommand = proxyCommand;
  if (proxyJump !== undefined) node.sshG.proxyjump = proxyJump;
  return node;
}

// ---------------------------------------------------------------------------------------------------------------
// Settings
// ---------------------------------------------------------------------------------------------------------------

/**
 * Validates one `gpuSessions.nodes` entry `{name, host, user?, port?, identityFile?, proxyJump?, roots?, group?}`.
 * `identityFile` may be a string or an array of strings; `~` is expanded. The error names the bad field.
 */
export function nodeFromSetting(x: unknown): { node?: NodeSpec; error?: string } {
  if (typeof x !== 'object' || x === null || Array.isArray(x)) {
    return { error: 'each gpuSessions.nodes entry must be an object like {"name": "gpu-1", "host": "10.0.0.5", "user": "ubuntu"}' };
  }
  const o = x as Record<string, unknown>;
  const show = (v: unknown) => printable(typeof v === 'string' ? JSON.stringify(v) : String(JSON.stringify(v) ?? v), 60);

  if (typeof o.name !== 'string' || !o.name.trim() || /[\x00-\x1f\x7f]/.test(o.name)) {
    return { error: `name: expected a non-empty string, got ${show(o.name)}` };
  }
  const name = o.name.trim();
  if (name.startsWith('-'))
    return { error: `name: may not start with '-' (OpenSSH refuses such names; it would read as an option), got ${show(o.name)}` };

  if (typeof o.host !== 'string' || !o.host.trim()) return { error: `host: expected a host name or IP address, got ${show(o.host)}` };
  let host = o.host.trim();
  if (/^\[[^\]]+\]$/.test(host)) host = host.slice(1, -1);
  if (!validHost(host)) {
    return { error: `host: expected a host name or IP address (put the user in "user" and the port in "port"), got ${show(o.host)}` };
  }

  let user: string | undefined;
  if (o.user !== undefined && o.user !== null && o.user !== '') {
    if (typeof o.user !== 'string' || !USER_RE.test(o.user) || o.user.startsWith('-'))
      return { error: `user: expected a user name without spaces, got ${show(o.user)}` };
    user = o.user;
  }

  let port = 22;
  if (o.port !== undefined && o.port !== null && o.port !== '') {
    const p =
      typeof o.port === 'number'
        ? Number.isInteger(o.port)
          ? parsePort(String(o.port))
          : undefined
        : typeof o.port === 'string'
          ? parsePort(o.port.trim())
          : undefined;
    if (p === undefined) return { error: `port: expected an integer 1-65535, got ${show(o.port)}` };
    port = p;
  }

  const identityFiles: string[] = [];
  if (o.identityFile !== undefined && o.identityFile !== null && o.identityFile !== '') {
    const list = Array.isArray(o.identityFile) ? o.identityFile : [o.identityFile];
    for (const f of list) {
      if (typeof f !== 'string' || !f.trim())
        return { error: `identityFile: expected a path or a list of paths, got ${show(o.identityFile)}` };
      const e = expandTilde(f.trim(), os.homedir(), safeLocalUser());
      if (!identityFiles.includes(e)) identityFiles.push(e);
    }
  }

  let proxyJump: string | undefined;
  if (o.proxyJump !== undefined && o.proxyJump !== null && o.proxyJump !== '') {
    if (typeof o.proxyJump !== 'string') return { error: `proxyJump: expected a string like "user@bastion:22", got ${show(o.proxyJump)}` };
    const pj = parseProxyJump(o.proxyJump);
    if (pj.error) return { error: `proxyJump: ${pj.error}` };
    if (pj.hops!.length) proxyJump = o.proxyJump.trim();
  }

  let roots: string[] | undefined;
  if (o.roots !== undefined && o.roots !== null) {
    if (!Array.isArray(o.roots) || o.roots.some((r) => typeof r !== 'string' || !r.trim())) {
      return { error: `roots: expected a list of non-empty paths, got ${show(o.roots)}` };
    }
    roots = (o.roots as string[]).map((r) => r.trim());
  }

  let group: string | undefined;
  if (o.group !== undefined && o.group !== null && o.group !== '') {
    if (typeof o.group !== 'string' || !o.group.trim() || /[\x00-\x1f\x7f]/.test(o.group))
      return { error: `group: expected a group name for the tree, got ${show(o.group)}` };
    group = o.group.trim();
  }

  const node: NodeSpec = { name, host, port, identityFiles, source: 'settings' };
  if (group !== undefined) node.group = group;
  if (user !== undefined) node.user = user;
  if (proxyJump !== undefined) node.proxyJump = proxyJump;
  if (roots !== undefined) node.roots = roots;
  return { node };
}
