/**
 * Nodes from the OpenSSH client configuration (~/.ssh/config), resolved the way `ssh -G <alias>` resolves them.
 * No `vscode` import: runs under plain Node.
 *
 * Lines are tokenised by the `ssh-config` library (one line at a time, so every value keeps its file and line);
 * this module adds what the library lacks: line validation with diagnostics (a bad line is reported and dropped
 * instead of throwing or hiding the other hosts), `Include` expansion (globs, relative to ~/.ssh, bounded, scoped
 * to the enclosing Host/Match block as in OpenSSH), correct OpenSSH pattern matching (the library's glob treats
 * `?` as "zero or one"), `Match` evaluation that never runs `exec`, the `Match final` second pass, and token
 * expansion (`%h` in HostName; `~`, `%d %u %h %r %p %n %l %L %i %k %j %%` and `${ENV}` in IdentityFile and
 * UserKnownHostsFile).
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse as parseSshConfigText } from 'ssh-config';
import { matchPattern, matchPatternList } from './knownHosts';

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

// ---------------------------------------------------------------------------------------------------------------
// Keywords
// ---------------------------------------------------------------------------------------------------------------

/** OpenSSH client keywords (readconf.c, through OpenSSH 10; incl. deprecated/unsupported ones ssh still accepts). */
const KNOWN_KEYWORDS = new Set(
  `host match include addkeystoagent addressfamily batchmode bindaddress bindinterface canonicaldomains
  canonicalizefallbacklocal canonicalizehostname canonicalizemaxdots canonicalizepermittedcnames casignaturealgorithms
  certificatefile channeltimeout checkhostip ciphers clearallforwardings compression connectionattempts connecttimeout
  controlmaster controlpath controlpersist dynamicforward enableescapecommandline enablesshkeysign escapechar
  exitonforwardfailure fingerprinthash forkafterauthentication forwardagent forwardx11 forwardx11timeout
  forwardx11trusted gatewayports globalknownhostsfile gssapiauthentication gssapidelegatecredentials
  gssapikeyexchange gssapiclientidentity gssapiserveridentity gssapirenewalforcesrekey gssapitrustdns
  gssapikexalgorithms hashknownhosts hostbasedacceptedalgorithms hostbasedauthentication hostbasedkeytypes
  hostkeyalgorithms hostkeyalias hostname identitiesonly identityagent identityfile identityfile2 ignoreunknown ipqos
  kbdinteractiveauthentication kbdinteractivedevices kexalgorithms knownhostscommand localcommand localforward
  loglevel logverbose macs nohostauthenticationforlocalhost numberofpasswordprompts obscurekeystroketiming
  passwordauthentication permitlocalcommand permitremoteopen pkcs11provider port preferredauthentications
  proxycommand proxyjump proxyusefdpass pubkeyacceptedalgorithms pubkeyacceptedkeytypes pubkeyauthentication
  rekeylimit remotecommand remoteforward requesttty requiredrsasize revokedhostkeys securitykeyprovider sendenv
  serveralivecountmax serveraliveinterval sessiontype setenv smartcarddevice stdinnull streamlocalbindmask
  streamlocalbindunlink stricthostkeychecking syslogfacility tag tcpkeepalive tunnel tunneldevice updatehostkeys
  user userknownhostsfile verifyhostkeydns visualhostkey xauthlocation refuseconnection warnweakcrypto
  challengeresponseauthentication skeyauthentication tisauthentication dsaauthentication keepalive protocol cipher
  fallbacktorsh globalknownhostsfile2 rhostsauthentication userknownhostsfile2 useroaming usersh useprivilegedport
  afstokenpassing kerberosauthentication kerberostgtpassing rsaauthentication rhostsrsaauthentication
  compressionlevel useblacklistedkeys protocolkeepalives setuptimeout
  usekeychain`
    .split(/\s+/)
    .filter(Boolean),
);

/** Keywords whose value is a single argument in OpenSSH (extra words are an error there). */
const SINGLE_ARG = new Set(['hostname', 'user', 'port', 'proxyjump', 'hostkeyalias', 'identityfile', 'identityfile2']);

const MATCH_NO_ARG = new Set(['all', 'canonical', 'final']);
const MATCH_WITH_ARG = new Set([
  'host',
  'originalhost',
  'user',
  'localuser',
  'exec',
  'localnetwork',
  'tagged',
  'command',
  'version',
  'sessiontype',
]);
const MATCH_EVALUATED = new Set(['all', 'canonical', 'final', 'host', 'originalhost', 'user', 'localuser']);

const MAX_INCLUDE_DEPTH = 16; // OpenSSH READCONF_MAX_DEPTH
const MAX_DIAGNOSTICS_PER_FILE = 50;

// ---------------------------------------------------------------------------------------------------------------
// Items: one validated line each
// ---------------------------------------------------------------------------------------------------------------

interface Criterion {
  name: string;
  negated: boolean;
  arg?: string;
}

type Item =
  | { kind: 'host'; file: string; line: number; patterns: string[] }
  | { kind: 'match'; file: string; line: number; criteria: Criterion[] }
  /** a Host/Match line that could not be used: the block it opens never applies */
  | { kind: 'never'; file: string; line: number }
  | { kind: 'include'; file: string; line: number; targets: string[] }
  | { kind: 'option'; file: string; line: number; key: string; args: string[] };

interface ParsedFile {
  file: string;
  items: Item[];
}

/** OpenSSH argv_split-like tokeniser: whitespace-separated, "..." and '...' quoting, \ escapes, # comments. */
function tokenize(s: string): { args: string[]; error?: string } {
  const args: string[] = [];
  let i = 0;
  while (i < s.length) {
    while (i < s.length && (s[i] === ' ' || s[i] === '\t')) i++;
    if (i >= s.length) break;
    if (s[i] === '#') break; // comment to end of line
    let arg = '';
    let quote = '';
    while (i < s.length) {
      const c = s[i];
      if (c === '\\') {
        if (i + 1 >= s.length) return { args, error: 'the line ends with a backslash' };
        const n = s[i + 1];
        if (n === '"' || n === "'" || n === '\\' || (!quote && n === ' ')) {
          arg += n;
          i += 2;
          continue;
        }
        arg += c;
        i++;
        continue;
      }
      if (!quote && (c === ' ' || c === '\t')) break;
      if (!quote && (c === '"' || c === "'")) quote = c;
      else if (quote && c === quote) quote = '';
      else arg += c;
      i++;
    }
    if (quote) return { args, error: 'unbalanced quotes' };
    args.push(arg);
  }
  return { args };
}

function printable(s: string, max = 60): string {
  const t = s.replace(/[\x00-\x1f\x7f]/g, '?');
  return t.length > max ? `${t.slice(0, max)}…` : t;
}

// ---------------------------------------------------------------------------------------------------------------
// Addresses
// ---------------------------------------------------------------------------------------------------------------

const HOSTNAME_RE = /^[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_.])?$/;
const IPV6_RE = /^[0-9A-Fa-f:.]*:[0-9A-Fa-f:.]*(?:%[A-Za-z0-9_.-]+)?$/;
const USER_RE = /^[^\s:/\x00-\x1f\x7f]+$/;

function validHost(h: string): boolean {
  return HOSTNAME_RE.test(h) || (IPV6_RE.test(h) && (h.match(/:/g) ?? []).length >= 2);
}

function parsePort(s: string): number | undefined {
  if (!/^\d{1,5}$/.test(s)) return undefined;
  const n = Number(s);
  return n >= 1 && n <= 65535 ? n : undefined;
}

/** `[user@]host[:port]`, `[user@][v6addr]:port`, bare `v6addr` (and an `ssh://` prefix); port undefined if absent. */
function parseAddress(s: string): { user?: string; host: string; port?: number } | undefined {
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
  const a = parseAddress(s);
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
    const a = parseAddress(part);
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
    const base = config.resolve(h.host);
    if (!base) return { error: `bad ProxyJump hop "${h.host}"` };
    hops.push({ ...base, name: h.host, user: h.user ?? base.user, port: h.port ?? base.port });
  }
  return { hops };
}

// ---------------------------------------------------------------------------------------------------------------
// Token expansion
// ---------------------------------------------------------------------------------------------------------------

function expandPercent(s: string, tokens: Record<string, string>): string {
  return s.replace(/%(.)/g, (m, c: string) => (c === '%' ? '%' : Object.prototype.hasOwnProperty.call(tokens, c) ? tokens[c] : m));
}

function expandTilde(p: string, homeDir: string, localUser: string): string {
  if (p === '~') return homeDir;
  if (p.startsWith('~/')) return path.join(homeDir, p.slice(2));
  const m = /^~([^/]+)(\/.*)?$/.exec(p);
  if (m && m[1] === localUser) return path.join(homeDir, m[2] ? m[2].slice(1) : '');
  return p;
}

function expandEnv(p: string): string {
  return p.replace(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g, (m, name: string) => process.env[name] ?? m);
}

function safeLocalUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return process.env.USER || process.env.USERNAME || '';
  }
}

function safeUid(): string {
  try {
    return String(os.userInfo().uid);
  } catch {
    return '';
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Include globbing
// ---------------------------------------------------------------------------------------------------------------

function hasGlob(s: string): boolean {
  return /[*?]/.test(s);
}

/** Paths matching `pattern` (`*` and `?` in any path component, like glob(3) without `[...]`), sorted. */
function globPaths(pattern: string): string[] {
  const root = path.parse(pattern).root;
  const parts = pattern
    .slice(root.length)
    .split(/[\\/]+/)
    .filter(Boolean);
  let bases = [root];
  for (let i = 0; i < parts.length; i++) {
    const seg = parts[i];
    const next: string[] = [];
    for (const b of bases) {
      if (!hasGlob(seg)) {
        next.push(path.join(b, seg));
        continue;
      }
      let names: string[];
      try {
        names = fs.readdirSync(b);
      } catch {
        continue;
      }
      for (const n of names.sort()) {
        if (n.startsWith('.') && !seg.startsWith('.')) continue; // glob(3): * and ? do not match a leading dot
        if (matchPattern(n, seg)) next.push(path.join(b, n));
      }
    }
    bases = next;
    if (bases.length === 0) break;
  }
  return bases;
}

// ---------------------------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------------------------

class Loader {
  readonly diagnostics: ConfigDiagnostic[] = [];
  readonly parsed = new Map<string, ParsedFile>();
  readonly aliases: { alias: string; file: string; line: number }[] = [];
  private readonly seenAliases = new Set<string>();
  private readonly ignoreUnknown: string[] = [];
  private readonly diagCount = new Map<string, number>();

  constructor(
    readonly homeDir: string,
    readonly localUser: string,
  ) {}

  diag(file: string, line: number, message: string): void {
    const n = (this.diagCount.get(file) ?? 0) + 1;
    this.diagCount.set(file, n);
    if (n <= MAX_DIAGNOSTICS_PER_FILE) this.diagnostics.push({ file, line, message });
    else if (n === MAX_DIAGNOSTICS_PER_FILE + 1) {
      this.diagnostics.push({ file, line, message: `more problems in this file are not listed; is it really an ssh config file?` });
    }
  }

  display(file: string): string {
    const home = this.homeDir;
    return file === home || file.startsWith(home + path.sep) ? `~${file.slice(home.length)}` : file;
  }

  /** Reads and parses `file` (and, recursively, what it includes). Returns undefined if it cannot be read. */
  load(file: string, stack: string[], from?: { file: string; line: number }): ParsedFile | undefined {
    const cached = this.parsed.get(file);
    if (cached) return cached;
    let text: string;
    try {
      const st = fs.statSync(file);
      if (st.isDirectory()) throw Object.assign(new Error('is a directory'), { code: 'EISDIR' });
      text = fs.readFileSync(file, 'utf8');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      if (from) {
        // OpenSSH silently skips Include targets that do not exist; say something only when one exists but fails.
        if (code !== 'ENOENT' && code !== 'ENOTDIR') {
          this.diag(
            from.file,
            from.line,
            `cannot read included file ${this.display(file)} (${code}); fix its permissions or remove the Include`,
          );
        }
      } else if (code === 'ENOENT') {
        this.diag(
          file,
          0,
          `${this.display(file)} does not exist; create it with Host entries, or add nodes in settings (gpuSessions.nodes)`,
        );
      } else {
        this.diag(file, 0, `cannot read ${this.display(file)} (${code}); fix its permissions or choose another ssh config file`);
      }
      return undefined;
    }
    const pf: ParsedFile = { file, items: [] };
    this.parsed.set(file, pf);
    const lines = text.replace(/^\uFEFF/, '').split('\n');
    for (let i = 0; i < lines.length; i++) {
      const item = this.parseLine(lines[i].replace(/\r$/, ''), file, i + 1, [...stack, file]);
      if (item) pf.items.push(item);
    }
    return pf;
  }

  private parseLine(text: string, file: string, line: number, stack: string[]): Item | undefined {
    const body = text.replace(/^[ \t]+/, '');
    if (body === '' || body.startsWith('#')) return undefined;
    const fail = (message: string, keyword?: string): Item | undefined => {
      const section = keyword === 'host' || keyword === 'match';
      this.diag(file, line, section ? `${message}; until it is fixed, the settings in its block are ignored` : message);
      return section ? { kind: 'never', file, line } : undefined;
    };

    // Keyword, then whitespace and/or one '=', then the arguments.
    const km = /^([^\s=]+)[ \t]*(?:=[ \t]*)?(.*)$/.exec(body);
    if (!km || !/^[A-Za-z][A-Za-z0-9]*$/.test(km[1])) {
      return fail(`not a "Keyword value" line: "${printable(body)}"; fix or remove the line`);
    }
    const keywordRaw = km[1];
    const key = keywordRaw.toLowerCase();
    const rest = km[2];
    const tok = tokenize(rest);
    if (tok.error) return fail(`${tok.error} in "${printable(body)}"; fix or remove the line`, key);
    const args = tok.args;
    if (args.length === 0 || args.every((a) => a === '')) {
      return fail(`${keywordRaw} has no value; add a value or remove the line`, key);
    }
    if (!KNOWN_KEYWORDS.has(key)) {
      if (this.ignoreUnknown.some((pl) => matchPatternList(key, pl, true) === 1)) return undefined;
      return fail(`unknown keyword "${printable(keywordRaw, 40)}"; check the spelling or remove the line (or list it in IgnoreUnknown)`);
    }
    if (SINGLE_ARG.has(key) && args.length > 1) {
      return fail(`${keywordRaw} takes one value but got ${args.length}: "${printable(rest)}"; quote the value or remove the extra words`);
    }
    if (key === 'port' && parsePort(args[0]) === undefined) {
      return fail(`bad Port "${printable(args[0], 20)}" (expected a number 1-65535); fix or remove the line`);
    }
    if (key === 'proxyjump') {
      const pj = parseProxyJump(args[0]);
      if (pj.error) return fail(`${pj.error}; fix or remove the line`);
    }
    if (key === 'host' && args.some((a) => a === '' || a === '!')) {
      return fail(`Host has an empty pattern; fix or remove the line`, key);
    }
    let criteria: Criterion[] | undefined;
    if (key === 'match') {
      const r = parseCriteria(args);
      if (r.error) return fail(`bad Match line: ${r.error}; fix or remove the line`, key);
      criteria = r.criteria!;
      const skipped = criteria.filter((c) => !MATCH_EVALUATED.has(c.name));
      if (skipped.length) {
        const names = [...new Set(skipped.map((c) => c.name))].join(', ');
        this.diag(
          file,
          line,
          `Match ${names} is not evaluated by GPU Sessions (it never runs commands or probes the network from ssh config), ` +
            `so this block is ignored here; use Host patterns or gpuSessions.nodes for settings GPU Sessions needs`,
        );
      }
    }
    if (key === 'ignoreunknown') this.ignoreUnknown.push(...args.map((a) => a.toLowerCase()));

    // Values as the ssh-config library reads them (quotes removed, multi-value keywords split).
    let values: string[];
    try {
      const cfg = parseSshConfigText(body);
      const node = cfg[0] as { param?: string; value?: unknown } | undefined;
      const v = node?.value;
      if (typeof v === 'string') values = [v];
      else if (Array.isArray(v)) values = v.map((x: { val: string }) => x.val);
      else throw new Error('no value');
      values = values.map(stripSingleQuotes);
      // ProxyCommand is a command line: keep it as written (OpenSSH passes the rest of the line to the shell).
      if (key === 'proxycommand') values = [rest.trim()];
    } catch (err) {
      return fail(`cannot parse "${printable(body)}" (${(err as Error).message}); fix or remove the line`, key);
    }

    switch (key) {
      case 'host': {
        for (const p of values) {
          if (!isPattern(p) && !this.seenAliases.has(p)) {
            this.seenAliases.add(p);
            this.aliases.push({ alias: p, file, line });
          }
        }
        return { kind: 'host', file, line, patterns: values };
      }
      case 'match':
        return { kind: 'match', file, line, criteria: criteria! };
      case 'include': {
        const targets: string[] = [];
        for (const v of values) {
          let p = expandTilde(v, this.homeDir, this.localUser);
          if (!path.isAbsolute(p)) p = path.join(sshDir(this.homeDir), p);
          const found = hasGlob(p) ? globPaths(p) : [p];
          for (const t of found) {
            if (stack.includes(t) || stack.length >= MAX_INCLUDE_DEPTH) {
              this.diag(
                file,
                line,
                `Include of ${this.display(t)} loops or nests more than ${MAX_INCLUDE_DEPTH} deep; remove the Include loop`,
              );
              continue;
            }
            if (this.load(t, stack, { file, line })) targets.push(t);
          }
        }
        return { kind: 'include', file, line, targets };
      }
      default:
        return { kind: 'option', file, line, key, args: values };
    }
  }
}

function stripSingleQuotes(v: string): string {
  return v.length >= 2 && v.startsWith("'") && v.endsWith("'") ? v.slice(1, -1) : v;
}

function isPattern(alias: string): boolean {
  return /[*?!]/.test(alias);
}

function parseCriteria(args: string[]): { criteria?: Criterion[]; error?: string } {
  const criteria: Criterion[] = [];
  for (let i = 0; i < args.length;) {
    const tok = args[i];
    const negated = tok.startsWith('!');
    const name = (negated ? tok.slice(1) : tok).toLowerCase();
    if (MATCH_NO_ARG.has(name)) {
      criteria.push({ name, negated });
      i++;
    } else if (MATCH_WITH_ARG.has(name)) {
      if (i + 1 >= args.length || args[i + 1] === '') return { error: `"${name}" needs a value` };
      criteria.push({ name, negated, arg: args[i + 1] });
      i += 2;
    } else {
      return { error: `unknown criterion "${printable(tok, 30)}"` };
    }
  }
  if (criteria.some((c) => c.name === 'all') && criteria.some((c) => !MATCH_NO_ARG.has(c.name))) {
    return { error: `"all" cannot be combined with other criteria` };
  }
  return { criteria };
}

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
        r = matchPatternList(currentHostName(st).toLowerCase(), c.arg!, true) === 1;
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
    // Whichever of the two comes first wins, and blocks the other.
    if (!st.opts.has('proxyjump') && !st.opts.has('proxycommand')) st.opts.set(key, args);
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
  const resolve = (alias: string): NodeSpec | undefined => {
    if (typeof alias !== 'string' || alias === '' || /[\s\x00-\x1f\x7f]/.test(alias)) return undefined;
    if (cache.has(alias)) return cloneNode(cache.get(alias));
    let node: NodeSpec | undefined;
    try {
      node = computeNode(loader, rootFile, alias, homeDir, localUser, firstListing.get(alias));
    } catch {
      node = undefined;
    }
    cache.set(alias, node);
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
  if (n.roots) c.roots = [...n.roots];
  return c;
}

function computeNode(
  loader: Loader,
  rootFile: ParsedFile | undefined,
  alias: string,
  homeDir: string,
  localUser: string,
  listing: { file: string; line: number } | undefined,
): NodeSpec {
  const st: EvalState = { alias, localUser, final: false, wantFinal: false, hostForHost: alias, opts: new Map(), identityFiles: [] };
  if (rootFile) {
    walk(loader, rootFile.items, st, true, false, [rootFile.file]);
    if (st.wantFinal) {
      // ssh re-reads the config with the resolved (lowercased) host name; Host lines now match that name.
      const resolved = currentHostName(st).toLowerCase();
      if (!st.opts.has('hostname')) st.opts.set('hostname', [resolved.replace(/%/g, '%%')]);
      st.final = true;
      st.hostForHost = resolved;
      walk(loader, rootFile.items, st, true, false, [rootFile.file]);
    }
  }
  const host = currentHostName(st).toLowerCase();
  const user = st.opts.get('user')?.[0] ?? localUser;
  const port = parsePort(st.opts.get('port')?.[0] ?? '') ?? 22;
  const hostKeyAlias = st.opts.get('hostkeyalias')?.[0];
  const pjRaw = st.opts.get('proxyjump')?.[0];
  const proxyJump = pjRaw !== undefined && pjRaw.toLowerCase() !== 'none' ? pjRaw : undefined;
  const pcRaw = st.opts.get('proxycommand')?.join(' ');
  const proxyCommand = pcRaw !== undefined && pcRaw.toLowerCase() !== 'none' ? pcRaw : undefined;

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
    k: hostKeyAlias ?? host,
    j: proxyJump ?? '',
  };
  const expandPath = (p: string) => expandEnv(expandPercent(expandTilde(p, homeDir, localUser), tokens));
  const identityFiles: string[] = [];
  for (const f of st.identityFiles) {
    const e = expandPath(f);
    if (!identityFiles.includes(e)) identityFiles.push(e);
  }
  const ukh = st.opts.get('userknownhostsfile');
  const userKnownHostsFiles = ukh && !(ukh.length === 1 && ukh[0].toLowerCase() === 'none') ? ukh.map(expandPath) : undefined;

  const where = listing ?? st.firstMatch;
  const node: NodeSpec = { name: alias, host, user, port, identityFiles, source: 'ssh-config' };
  if (proxyJump !== undefined) node.proxyJump = proxyJump;
  if (proxyCommand !== undefined) node.proxyCommand = proxyCommand;
  if (hostKeyAlias !== undefined) node.hostKeyAlias = hostKeyAlias;
  if (userKnownHostsFiles) node.userKnownHostsFiles = userKnownHostsFiles;
  if (/^yes$/i.test(st.opts.get('identitiesonly')?.[0] ?? '')) node.identitiesOnly = true;
  if (where) {
    node.sourceFile = where.file;
    node.sourceLine = where.line;
  }
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

  if (typeof o.host !== 'string' || !o.host.trim()) return { error: `host: expected a host name or IP address, got ${show(o.host)}` };
  let host = o.host.trim();
  if (/^\[[^\]]+\]$/.test(host)) host = host.slice(1, -1);
  if (!validHost(host)) {
    return { error: `host: expected a host name or IP address (put the user in "user" and the port in "port"), got ${show(o.host)}` };
  }

  let user: string | undefined;
  if (o.user !== undefined && o.user !== null && o.user !== '') {
    if (typeof o.user !== 'string' || !USER_RE.test(o.user))
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
