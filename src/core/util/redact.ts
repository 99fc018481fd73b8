/**
 * Redaction: secrets never reach disk or logs.
 *
 * Two complementary mechanisms:
 * - by NAME: environment variables, command-line flags, `NAME=value` / `NAME: value` lines and JSON keys
 *   whose name is a secret name (`isSecretName`);
 * - by VALUE: token formats recognisable on their own (AWS access key ids and session tokens, Hugging
 *   Face, OpenAI, GitHub, PEM private keys, `user:pass@` in URLs, `Authorization: Bearer ...`).
 *
 * The name rule: a name is split into word parts on `_ - . :` (and camelCase humps); it is a secret name
 * when one part IS a secret word (KEY, TOKEN, SECRET, PASSWORD, PASSWD, PASS, PASSPHRASE, CREDENTIAL(S),
 * AUTH, AUTHORIZATION, COOKIE, PAT, APIKEY, ACCESSTOKEN, ...). Parts are compared whole, so `KEYBOARD`,
 * `TOKENS`, `TOKENIZER` and `AUTHOR` are not secret words: `--max-tokens 512`, `max_total_tokens`,
 * `--tokenizer-path` and `KEYBOARD_LAYOUT=us` stay. A few neighbours turn a secret word into a plain ML
 * or config term: `TOKEN_ID(S)`, `TOKEN_USAGE`, `EOS_TOKEN`, `PAD_TOKEN`, `MAX_TOKEN`, `KEY_VALUE`
 * (`num_key_value_heads`), `AUTH_TYPE`, `AUTH_URL`, ... (see BENIGN_AFTER / BENIGN_BEFORE).
 * `AWS_ACCESS_KEY_ID` stays secret (KEY followed by ID is not benign; TOKEN followed by ID is).
 *
 * Every regular expression here is linear: character classes are disjoint from what follows them or
 * guarded by a look-behind that stops a scan from restarting inside a run, so MBs of text take
 * milliseconds. Every function is idempotent: redacting redacted text changes nothing.
 */

export const REDACTED = '<redacted>';
/** What earlier versions wrote; still recognised as "already redacted" (idempotence on old files). */
const LEGACY_REDACTED = '[REDACTED]';

const SECRET_WORDS = new Set([
  'KEY',
  'APIKEY',
  'ACCESSKEY',
  'SECRETKEY',
  'PRIVATEKEY',
  'TOKEN',
  'APITOKEN',
  'AUTHTOKEN',
  'ACCESSTOKEN',
  'REFRESHTOKEN',
  'SECRET',
  'SECRETS',
  'PASSWORD',
  'PASSWORDS',
  'PASSWD',
  'PASS',
  'PASSPHRASE',
  'CREDENTIAL',
  'CREDENTIALS',
  'CREDS',
  'AUTH',
  'AUTHORIZATION',
  'COOKIE',
  'PAT',
]);

/** A following part that makes the secret word a harmless term, for any secret word. */
const BENIGN_AFTER_ANY = new Set([
  'TYPE',
  'TYPES',
  'LEN',
  'LENGTH',
  'COUNT',
  'NUM',
  'SIZE',
  'ENABLED',
  'DISABLED',
  'MODE',
  'METHOD',
  'NAME',
  'NAMES',
  'REQUIRED',
  'ALGORITHM',
  'FORMAT',
  'VERSION',
  'PATH',
  'DIR',
  'DIRECTORY',
]);

const BENIGN_AFTER: Record<string, Set<string>> = {
  TOKEN: new Set([
    'ID',
    'IDS',
    'USAGE',
    'COUNTS',
    'LIMIT',
    'LIMITS',
    'BUDGET',
    'RATE',
    'RATIO',
    'LEVEL',
    'THROUGHPUT',
    'INDEX',
    'IDX',
    'CAPACITY',
    'LOGPROBS',
    'POSITION',
    'POSITIONS',
    'NUMS',
  ]),
  KEY: new Set([
    'VALUE',
    'VALUES',
    'STATES',
    'STATE',
    'FRAME',
    'FRAMES',
    'COLUMN',
    'COLUMNS',
    'FIELD',
    'FIELDS',
    'BOARD',
    'LAYOUT',
    'MAP',
    'CODE',
    'CODES',
    'EVENT',
    'BINDING',
    'BINDINGS',
    'HEADS',
    'DIM',
    'PREFIX',
  ]),
  AUTH: new Set(['URL', 'URI', 'HOST', 'PORT', 'ENDPOINT', 'DOMAIN', 'PROVIDER', 'SCHEME', 'SERVER', 'REALM', 'SOCK', 'SOCKET']),
  PASS: new Set(['THROUGH', 'RATE', 'AT', 'K']),
};

const BENIGN_BEFORE: Record<string, Set<string>> = {
  TOKEN: new Set([
    'MAX',
    'MIN',
    'NUM',
    'TOTAL',
    'NEW',
    'EOS',
    'BOS',
    'PAD',
    'UNK',
    'SEP',
    'CLS',
    'MASK',
    'STOP',
    'SPECIAL',
    'FIRST',
    'LAST',
    'PER',
    'NEXT',
    'START',
    'END',
    'IMAGE',
    'VIDEO',
    'AUDIO',
    'VISION',
    'THINK',
    'DRAFT',
    'PREFILL',
    'DECODE',
    'OUTPUT',
    'INPUT',
  ]),
  KEY: new Set(['PRIMARY', 'FOREIGN', 'SORT', 'PARTITION', 'CACHE', 'DICT', 'LOOKUP', 'SHORTCUT', 'HOT', 'MONKEY', 'QUERY', 'ROUTING']),
  PASS: new Set(['BY', 'BYPASS', 'FIRST', 'SECOND', 'SINGLE', 'MULTI', 'ONE', 'TWO', 'FORWARD', 'BACKWARD']),
};

const nameCache = new Map<string, boolean>();

/** Word parts of a name: split on non-alphanumerics and camelCase humps, upper-cased. */
function nameParts(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .split(/[^A-Za-z0-9]+/)
    .filter((p) => p.length > 0)
    .map((p) => p.toUpperCase());
}

/** True when a variable, flag or key name names a secret (see the module comment for the rule). */
export function isSecretName(name: string): boolean {
  const cached = nameCache.get(name);
  if (cached !== undefined) return cached;
  const parts = nameParts(name.replace(/^-+/, ''));
  let secret = false;
  for (let i = 0; i < parts.length && !secret; i++) {
    const p = parts[i];
    if (!SECRET_WORDS.has(p)) continue;
    const next = parts[i + 1];
    const prev = parts[i - 1];
    if (next !== undefined && (BENIGN_AFTER_ANY.has(next) || BENIGN_AFTER[p]?.has(next))) continue;
    if (prev !== undefined && BENIGN_BEFORE[p]?.has(prev)) continue;
    secret = true;
  }
  if (nameCache.size > 10_000) nameCache.clear();
  nameCache.set(name, secret);
  return secret;
}

/** Values that are not secrets even under a secret name: empty, None/null, shell references. */
function isPlaceholder(v: string): boolean {
  const s = v.replace(/,$/, '').replace(/^["']|["']$/g, '');
  if (s === '' || s === REDACTED || s === LEGACY_REDACTED || s === '\\') return true;
  // Already redacted with its scheme kept (`Bearer <redacted>`).
  if (/^[A-Za-z][A-Za-z0-9-]*[ \t]+(\[REDACTED\]|<redacted>)$/.test(s)) return true;
  // A shell reference that reads the secret at run time: `"$(cat "$HOME"/...)"` (launch scripts).
  if (/^\$\(/.test(s)) return true;
  // Hints and references that name a secret without holding it: `NAME=…`, `--secret NAME=@FILE`, `<secret:NAME>`.
  if (/^(…|\.\.\.|<[^<>\s]*>|@\S*|[A-Za-z0-9_.-]+=@\S*)$/.test(s)) return true;
  if (/^(none|null|nil|undefined|true|false)$/i.test(s)) return true;
  if (/^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$/.test(s)) return true; // $VAR, ${VAR}
  if (/^\*+$/.test(s)) return true;
  return false;
}

/** Keep surrounding quotes, replace the inside. */
function redactQuoted(v: string): string {
  if (v.length >= 2 && (v[0] === '"' || v[0] === "'") && v[v.length - 1] === v[0]) return v[0] + REDACTED + v[0];
  return REDACTED;
}

export function redactEnv(env: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) {
    out[k] = isSecretName(k) && v !== '' ? REDACTED : redactText(v);
  }
  return out;
}

/** Argv with the values of secret flags (`isSecretFlag`, default: a secret name) and secret `NAME=value` words redacted. */
export function redactArgv(argv: readonly string[], isSecretFlag: (flag: string) => boolean = isSecretName): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const flag = /^(--?[A-Za-z][A-Za-z0-9_.-]*)(=([\s\S]*))?$/.exec(a);
    if (flag) {
      const name = flag[1];
      if (isSecretFlag(name)) {
        if (flag[2] !== undefined) {
          out.push(flag[3] === '' ? a : `${name}=${REDACTED}`);
          continue;
        }
        out.push(a);
        const next = argv[i + 1];
        if (next !== undefined && !next.startsWith('--')) {
          out.push(next === '' ? next : REDACTED);
          i++;
        }
        continue;
      }
      out.push(redactText(a));
      continue;
    }
    // `env HF_TOKEN=... python ...`
    const assign = /^([A-Za-z_][A-Za-z0-9_]*)=([\s\S]*)$/.exec(a);
    if (assign && isSecretName(assign[1]) && assign[2] !== '') {
      out.push(`${assign[1]}=${REDACTED}`);
      continue;
    }
    out.push(redactText(a));
  }
  return out;
}

// ------------------------------------------------------------------------------------ free text

const PEM_BEGIN = /-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY( BLOCK)?-----/g;

/** PEM private key blocks → header, [REDACTED], footer. A block without its END is redacted to the end. */
function redactPem(text: string): string {
  if (!text.includes('PRIVATE KEY')) return text;
  let out = '';
  let pos = 0;
  PEM_BEGIN.lastIndex = 0;
  for (;;) {
    PEM_BEGIN.lastIndex = pos;
    const m = PEM_BEGIN.exec(text);
    if (!m) break;
    const kind = m[1];
    const headerEnd = m.index + m[0].length;
    const endMarker = `-----END ${kind}PRIVATE KEY${m[2] ?? ''}-----`;
    const end = text.indexOf(endMarker, headerEnd);
    // A different END (another kind) still closes the block.
    if (end < 0) {
      const anyEnd = /-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----/g;
      anyEnd.lastIndex = headerEnd;
      const e2 = anyEnd.exec(text);
      if (e2) {
        out += text.slice(pos, headerEnd) + '\n' + REDACTED + '\n' + e2[0];
        pos = e2.index + e2[0].length;
        continue;
      }
      out += text.slice(pos, headerEnd) + '\n' + REDACTED + '\n';
      pos = text.length;
      break;
    }
    out += text.slice(pos, headerEnd) + '\n' + REDACTED + '\n' + endMarker;
    pos = end + endMarker.length;
  }
  return out + text.slice(pos);
}

/** PuTTY keys: `Private-Lines: N` then N base64 lines (redacted when the text holds the whole block). */
const PUTTY_PRIVATE = /(Private-Lines: *\d+\r?\n)((?:[A-Za-z0-9+/=]+(?:\r?\n|$))+)/g;

const ANY_PEM_END = /-----END [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----/;
const PEM_BEGIN_ONE = /-----BEGIN ([A-Z0-9 ]*?)PRIVATE KEY( BLOCK)?-----/;
/** What a line inside a key block looks like: base64, a PEM header (`Proc-Type:`, `DEK-Info:`, `Comment:`), or empty. */
const KEY_MATERIAL_LINE = /^\s*(?:[A-Za-z0-9+/=]*|[A-Za-z][A-Za-z0-9-]*: .*)\s*$/;

let mayRedactRe: RegExp | undefined;
/** Both cases of each ASCII letter, other characters escaped. */
const anyCase = (w: string) =>
  w.replace(/[A-Za-z]|[^A-Za-z0-9_]/g, (c) => (/[A-Za-z]/.test(c) ? `[${c.toLowerCase()}${c.toUpperCase()}]` : `\\${c}`));

/**
 * What a line needs to hold for redactText or a key block to change it: a secret word (any case; a name's
 * parts are its secret words), a rule's hint, `private` (PEM, PuTTY). `PAT` only as a whole name part
 * (nameParts: `pat_x`, `patX`, `PAT`, `PATToken`), so the `Path` in every `remotePath` is not one.
 */
export function mayRedact(): RegExp {
  if (mayRedactRe) return mayRedactRe;
  const words = [...SECRET_WORDS].filter((w) => w !== 'PAT');
  const minimal = words.filter((w) => !words.some((o) => o !== w && w.includes(o)));
  const hints = [...new Set(VALUE_RULES.flatMap((r) => r.hint ?? []))];
  const alts = [...minimal, ...hints, 'private'].map(anyCase);
  alts.push('[pP]at(?![a-z0-9])', 'PAT(?![A-Z0-9])', 'PAT(?=[A-Z][a-z])');
  return (mayRedactRe = new RegExp(alts.join('|'), 'g'));
}

/**
 * Redacts multi-line secrets that arrive one line at a time (tail, follow, MCP line arrays, the CLI's
 * output): after a line with a private key's BEGIN (PEM, OpenSSH, PGP) or PuTTY's `Private-Lines:` and no
 * END, every following line that looks like key material is `<redacted>`, until the END line (kept) or a
 * line that is not key material. Each line also goes through `redactText`.
 */
export class BlockRedactor {
  private inBlock = false;

  line(l: string): string {
    if (this.inBlock) {
      const end = ANY_PEM_END.exec(l);
      if (end) {
        this.inBlock = false;
        return (end.index > 0 ? REDACTED : '') + l.slice(end.index);
      }
      if (KEY_MATERIAL_LINE.test(l)) return REDACTED;
      this.inBlock = false;
    }
    const out = redactText(l);
    const begin = PEM_BEGIN_ONE.exec(l);
    if (begin && !ANY_PEM_END.test(l.slice(begin.index))) this.inBlock = true;
    else if (/Private-Lines: *\d+\s*$/.test(l)) this.inBlock = true;
    return out;
  }

  /** Follows a line's effect on the block state without redacting it (cheap: for lines that are dropped). */
  skip(line: string): void {
    // Key material lines are short; of a long line only its end can open a block.
    const l = line.length > 4096 ? line.slice(-512) : line;
    if (line.length > 4096) this.inBlock = false;
    if (this.inBlock) {
      const ends = l.includes('-----END') && ANY_PEM_END.test(l);
      if (!ends && KEY_MATERIAL_LINE.test(l)) return;
      this.inBlock = false;
      if (ends) return;
    }
    if (l.includes('-----BEGIN')) {
      const begin = PEM_BEGIN_ONE.exec(l);
      if (begin && !ANY_PEM_END.test(l.slice(begin.index))) this.inBlock = true;
    } else if (l.includes('Private-Lines:') && /Private-Lines: *\d+\s*$/.test(l)) this.inBlock = true;
  }

  /** Inside a key block now (the next key-material line would be redacted). */
  get inside(): boolean {
    return this.inBlock;
  }

  /**
   * A chunk of one or more lines (split on \n, each line as above). Outside a key block, a line that holds
   * none of the substrings any rule needs (mayRedact) is the same after redaction: the scan jumps from one
   * such substring to the next and runs the rules on those lines only (a 30,000-file `--json`: 360,000
   * lines, of which the 30,000 `"secrets": []` need the rules).
   */
  text(chunk: string): string {
    if (!chunk.includes('\n')) return this.line(chunk);
    const re = mayRedact();
    let out = '';
    let pos = 0;
    while (pos <= chunk.length) {
      let ls: number;
      if (this.inBlock) ls = pos;
      else {
        re.lastIndex = pos;
        const m = re.exec(chunk);
        if (!m) return out + chunk.slice(pos);
        ls = chunk.lastIndexOf('\n', m.index - 1) + 1;
        if (ls < pos) ls = pos;
        out += chunk.slice(pos, ls);
      }
      let le = chunk.indexOf('\n', ls);
      if (le < 0) le = chunk.length;
      out += this.line(chunk.slice(ls, le));
      if (le === chunk.length) break;
      out += '\n';
      pos = le + 1;
    }
    return out;
  }
}

/**
 * The kept end of a list of lines whose start was dropped: if the cut fell inside a key block, the kept
 * lines that continue it are redacted (the BEGIN line is gone, so a later redaction could not tell).
 */
export function redactAfterCut(dropped: readonly string[], kept: string[]): string[] {
  const b = new BlockRedactor();
  // A key block is at most a few hundred lines: the state at the cut depends only on the last ones dropped.
  for (const l of dropped.slice(-1000)) b.skip(l);
  if (!b.inside) return kept;
  const out = [...kept];
  for (let i = 0; i < out.length && b.inside; i++) {
    const r = b.line(out[i]);
    out[i] = r;
  }
  return out;
}

/** redactOutput with block state across calls: for a stream of lines (a tail, the CLI's stdout). */
export function outputStreamRedactor(): (text: string) => string {
  const b = new BlockRedactor();
  return (text) => scrubKnown(b.text(text));
}

interface Rule {
  /** Cheap pre-check: skip the regex when none of these substrings occurs (case-insensitive when `ci`). */
  hint?: string[];
  ci?: boolean;
  re: RegExp;
  replace: (substring: string, ...args: string[]) => string;
}

function hasHint(text: string, lower: () => string, r: Rule): boolean {
  if (!r.hint) return true;
  const t = r.ci ? lower() : text;
  return r.hint.some((h) => t.includes(h));
}

/** A secret value keeps this much of its start when the start is a fixed, public prefix. */
const keepPrefix = (prefix: string) => prefix + REDACTED;

const VALUE_RULES: Rule[] = [
  // AWS access key ids.
  { hint: ['AKIA', 'ASIA'], re: /\b(AKIA|ASIA)[A-Z0-9]{16}\b/g, replace: (_m, p) => keepPrefix(p) },
  // AWS (STS) session tokens: base64 with well-known prefixes.
  {
    hint: ['IQoJb3JpZ2luX2Vj', 'FwoGZXIvYXdzE', 'FQoGZXIvYXdzE'],
    re: /\b(IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE|FQoGZXIvYXdzE)[A-Za-z0-9/+=]{16,}/g,
    replace: (_m, p) => keepPrefix(p),
  },
  // Hugging Face.
  { hint: ['hf_'], re: /\bhf_[A-Za-z0-9]{30,}/g, replace: () => keepPrefix('hf_') },
  // OpenAI (sk-..., sk-proj-..., sk-svcacct-...) and look-alikes (Anthropic sk-ant-...).
  { hint: ['sk-'], re: /\bsk-[A-Za-z0-9_-]{20,}/g, replace: () => keepPrefix('sk-') },
  // GitHub.
  { hint: ['gh'], re: /\b(gh[pousr]_)[A-Za-z0-9]{20,}/g, replace: (_m, p) => keepPrefix(p) },
  { hint: ['github_pat_'], re: /\bgithub_pat_[A-Za-z0-9_]{20,}/g, replace: () => keepPrefix('github_pat_') },
  // Slack, GitLab: cheap to cover.
  { hint: ['xox'], re: /\b(xox[abposr]-)[A-Za-z0-9-]{10,}/g, replace: (_m, p) => keepPrefix(p) },
  { hint: ['glpat-'], re: /\bglpat-[A-Za-z0-9_-]{20,}/g, replace: () => keepPrefix('glpat-') },
  // `wandb login <40 hex>`.
  {
    hint: ['wandb'],
    re: /\b(wandb[ \t]+login(?:[ \t]+--?[A-Za-z-]+)*[ \t]+)([0-9a-f]{40})\b/g,
    replace: (_m, pre) => pre + REDACTED,
  },
  // Authorization headers (keep the scheme).
  {
    hint: ['authorization'],
    ci: true,
    re: /\b((?:Proxy-)?Authorization["']?[ \t]*[:=][ \t]*["']?)(?:(Bearer|Basic|Token|Digest|Bot|AWS4-HMAC-SHA256)[ \t]+)?([^\s"',]+)/gi,
    replace: (m, pre, scheme, tok) => (tok === REDACTED ? m : `${pre}${scheme ? scheme + ' ' : ''}${REDACTED}`),
  },
  // A bare `Bearer <token>`.
  { hint: ['bearer'], ci: true, re: /\b(Bearer)[ \t]+([A-Za-z0-9._~+/=-]{8,})/gi, replace: (_m, b) => `${b} ${REDACTED}` },
  // URLs with credentials: scheme://user:password@host.
  {
    hint: ['://'],
    re: /(?<![A-Za-z0-9+.-])([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^\s:@/]+):([^\s@/]+)@/g,
    replace: (_m, scheme, user) => `${scheme}${user}:${REDACTED}@`,
  },
];

/** JSON `"name": "value"` whose name is a secret name. */
const JSON_RULE = /"([A-Za-z0-9_.:-]{1,128})"([ \t]*:[ \t]*)"((?:[^"\\\n]|\\.)*)"/g;
/** Line-anchored `[export] NAME = value`, `NAME: value` (YAML, headers, ini, credential files). */
const LINE_RULE =
  /^([ \t]*(?:export[ \t]+|set[ \t]+|-[ \t]+)?["']?)([A-Za-z_][A-Za-z0-9_.-]*)(["']?(?:[ \t]*:|[ \t]+=|=(?=[ \t]))[ \t]*)([^\n]*)$/gm;
/** `NAME=value` anywhere (shell lines, URLs' query strings, Python reprs like `api_key='x'`). */
const INLINE_RULE = /(?<![A-Za-z0-9_.-])([A-Za-z_][A-Za-z0-9_.-]*)=("[^"\n]*"|'[^'\n]*'|[^\s"'&;|,)}\]]+(?:\][^\s"'&;|,)}\]]*)?)/g;
/** `--secret-flag value` / `--secret-flag=value` anywhere. */
const FLAG_RULE = /(?<![A-Za-z0-9_.-])(--?[A-Za-z][A-Za-z0-9_.-]*)([ \t]+|=)("[^"\n]*"|'[^'\n]*'|[^\s"']+)/g;
/** netrc: `password X` at a line start or after `login USER`. */
const NETRC_RULE = /(^[ \t]*|\blogin[ \t]+\S+[ \t]+)(password|passwd)([ \t]+)(\S+)/gim;

function redactLineValue(m: string, pre: string, name: string, sep: string, value: string): string {
  if (!isSecretName(name)) return m;
  const v = value.trim();
  if (v === '' || isPlaceholder(v)) return m;
  // A container opens here (`"secrets": [`, `password: {`): its members are lines of their own, checked one by one.
  // A JSON number or boolean under a quoted key (`"secretsFound": 2,`) is a count or a flag, not a credential.
  if (/^[[{]/.test(v) || (/["']$/.test(pre) && /^(?:-?\d+(?:\.\d+)?|true|false),?$/.test(v))) return m;
  const lead = value.slice(0, value.length - value.trimStart().length);
  const trailingComma = /,$/.test(v) && /^["']/.test(v) ? ',' : '';
  const core = trailingComma ? v.slice(0, -1) : v;
  return `${pre}${name}${sep}${lead}${redactQuoted(core)}${trailingComma}`;
}

/** Redact secrets anywhere in free text (logs, scripts, config files, command output). */
export function redactText(text: string): string {
  if (!text) return text;
  let t = redactPem(text);
  if (t.includes('Private-Lines:')) t = t.replace(PUTTY_PRIVATE, `$1${REDACTED}\n`);
  let lowerCache: string | undefined;
  const lower = () => (lowerCache ??= t.toLowerCase());
  for (const r of VALUE_RULES) {
    if (!hasHint(t, lower, r)) continue;
    r.re.lastIndex = 0;
    const next = t.replace(r.re, r.replace as (s: string, ...a: unknown[]) => string);
    if (next !== t) {
      t = next;
      lowerCache = undefined;
    }
  }
  if (t.includes('"')) {
    t = t.replace(JSON_RULE, (m, name: string, sep: string, value: string) => {
      if (!isSecretName(name) || isPlaceholder(value)) return m;
      return `"${name}"${sep}"${REDACTED}"`;
    });
  }
  if (t.includes(':') || t.includes('=')) {
    t = t.replace(LINE_RULE, redactLineValue);
  }
  if (t.includes('=')) {
    t = t.replace(INLINE_RULE, (m, name: string, value: string) => {
      if (!isSecretName(name) || isPlaceholder(value)) return m;
      return `${name}=${redactQuoted(value)}`;
    });
  }
  if (t.includes('-')) {
    t = t.replace(FLAG_RULE, (m, flag: string, sep: string, value: string) => {
      if (!isSecretName(flag) || isPlaceholder(value)) return m;
      if (sep !== '=' && value.startsWith('-')) return m;
      return `${flag}${sep}${redactQuoted(value)}`;
    });
  }
  if (/pass/i.test(t)) {
    t = t.replace(NETRC_RULE, (m, pre: string, word: string, sp: string, value: string) =>
      isPlaceholder(value) ? m : `${pre}${word}${sp}${REDACTED}`,
    );
  }
  return t;
}

/**
 * Redact a JSON-like value: object members whose key is a secret name lose their value (null, false and
 * empty strings are kept: they say "no secret set"); every other string goes through redactText.
 */
export function redactValue<T>(value: T): T {
  return redactAny(value, 0) as T;
}

function redactAny(v: unknown, depth: number): unknown {
  if (depth > 64) return v;
  if (typeof v === 'string') return redactText(v);
  if (Array.isArray(v)) {
    // An array of lines (a tail, a log excerpt) can hold a key block across elements: redact it as a block.
    const lines = new BlockRedactor();
    return v.map((x) => (typeof x === 'string' ? lines.line(x) : redactAny(x, depth + 1)));
  }
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (isSecretName(k) && x !== null && x !== undefined && x !== false && x !== '' && (typeof x === 'string' || typeof x === 'number')) {
        out[k] = typeof x === 'string' && isPlaceholder(x) ? x : REDACTED;
      } else if (isSecretName(k) && x && typeof x === 'object') {
        out[k] = REDACTED;
      } else {
        out[k] = redactAny(x, depth + 1);
      }
    }
    return out;
  }
  return v;
}

/**
 * Replace every occurrence of known secret values (collected where they were found by name) in all
 * strings of a JSON-like value: catches a secret that shows up again somewhere in a shape no pattern knows.
 */
export function scrubKnownSecrets<T>(value: T, secrets: Iterable<string>): T {
  const list = [...new Set([...secrets].filter((s) => s.length >= 6 && s !== REDACTED))].sort((a, b) => b.length - a.length);
  if (list.length === 0) return value;
  const scrub = (s: string) => {
    let out = s;
    for (const x of list) if (out.includes(x)) out = out.split(x).join(REDACTED);
    return out;
  };
  const walk = (v: unknown, depth: number): unknown => {
    if (depth > 64) return v;
    if (typeof v === 'string') return scrub(v);
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v as Record<string, unknown>)) out[scrub(k)] = walk(x, depth + 1);
      return out;
    }
    return v;
  };
  return walk(value, 0) as T;
}

// ------------------------------------------------------------------------------------ the boundary

/**
 * Secret values this process has seen by name (the value after `--api-key`, a secret environment
 * variable, a secret the user supplied for a launch). They may be kept in memory — to talk to a server
 * that enforces its key — but every text that leaves the process goes through `redactOutput`, which
 * replaces them wherever they show up, in any shape, on top of the pattern rules of redactText.
 */
const knownSecrets = new Set<string>();
const MAX_KNOWN_SECRETS = 4096;

/** Remember a secret value so that redactOutput removes it from every output. Short values (< 6) are not remembered. */
export function rememberSecret(value: string | undefined | null): void {
  if (!value || value.length < 6 || isPlaceholder(value)) return;
  if (knownSecrets.has(value)) return;
  if (knownSecrets.size >= MAX_KNOWN_SECRETS) knownSecrets.delete(knownSecrets.values().next().value as string);
  knownSecrets.add(value);
}

function scrubKnown(s: string): string {
  if (knownSecrets.size === 0) return s;
  let out = s;
  for (const x of [...knownSecrets].sort((a, b) => b.length - a.length)) if (out.includes(x)) out = out.split(x).join(REDACTED);
  return out;
}

/**
 * THE rule for everything that leaves the process (CLI stdout/stderr, the log channel, tree labels and
 * tooltips, JSON documents, profiles, scripts): secret flags' and secret variables' values, recognisable
 * tokens, and every secret value seen so far become `<redacted>`.
 */
export function redactOutput(text: string): string {
  return scrubKnown(redactText(text));
}

/** redactOutput for a JSON-like value (secret-named members lose their value; every string is redacted). */
export function redactOutputValue<T>(value: T): T {
  return scrubKnownSecrets(redactValue(value), knownSecrets);
}

/** Secret flags of an argv: `--api-key X` / `--api-key=X` → {'--api-key': 'X'} (flag as written). */
export function secretFlagValues(argv: readonly string[], isSecretFlag: (flag: string) => boolean = isSecretName): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const m = /^(--?[A-Za-z][A-Za-z0-9_.-]*)(=([\s\S]*))?$/.exec(argv[i]);
    if (!m || !isSecretFlag(m[1])) continue;
    if (m[2] !== undefined) out.set(m[1], m[3]);
    else if (argv[i + 1] !== undefined && !argv[i + 1].startsWith('--')) out.set(m[1], argv[++i]);
  }
  return out;
}
