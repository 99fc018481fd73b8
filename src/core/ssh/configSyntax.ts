/**
 * ssh_config keywords and line tokenising (readconf.c): what OpenSSH accepts, with diagnostics.
 */
// ---------------------------------------------------------------------------------------------------------------
// Keywords
// ---------------------------------------------------------------------------------------------------------------

/** OpenSSH client keywords (readconf.c, through OpenSSH 10; incl. deprecated/unsupported ones ssh still accepts). */
export const KNOWN_KEYWORDS = new Set(
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
export const SINGLE_ARG = new Set(['hostname', 'user', 'port', 'proxyjump', 'hostkeyalias', 'identityfile', 'identityfile2']);

export const MATCH_NO_ARG = new Set(['all', 'canonical', 'final']);
export const MATCH_WITH_ARG = new Set([
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
export const MATCH_EVALUATED = new Set(['all', 'canonical', 'final', 'host', 'originalhost', 'user', 'localuser']);

export const MAX_INCLUDE_DEPTH = 16; // OpenSSH READCONF_MAX_DEPTH
export const MAX_DIAGNOSTICS_PER_FILE = 50;

// ---------------------------------------------------------------------------------------------------------------
// Items: one validated line each
// ---------------------------------------------------------------------------------------------------------------

export interface Criterion {
  name: string;
  negated: boolean;
  arg?: string;
}

export type Item =
  | { kind: 'host'; file: string; line: number; patterns: string[] }
  | { kind: 'match'; file: string; line: number; criteria: Criterion[] }
  /** a Host/Match line that could not be used: the block it opens never applies */
  | { kind: 'never'; file: string; line: number }
  | { kind: 'include'; file: string; line: number; targets: string[] }
  | { kind: 'option'; file: string; line: number; key: string; args: string[] };

export interface ParsedFile {
  file: string;
  items: Item[];
}

/** OpenSSH argv_split-like tokeniser: whitespace-separated, "..." and '...' quoting, \ escapes, # comments. */
export function tokenize(s: string): { args: string[]; error?: string } {
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

export function printable(s: string, max = 60): string {
  const t = s.replace(/[\x00-\x1f\x7f]/g, '?');
  return t.length > max ? `${t.slice(0, max)}…` : t;
}
