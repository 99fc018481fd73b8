/**
 * OpenSSH known_hosts handling for host key verification (no `vscode` import: runs under plain Node).
 *
 * Semantics follow OpenSSH (hostfile.c / match.c) unless noted:
 * - The lookup name is `host` for port 22 and `[host]:port` otherwise, lowercased (ssh lowercases the host).
 *   A `[host]:22` entry therefore does NOT match a connection to port 22, exactly as with ssh.
 *   With HostKeyAlias, look up the alias with port 22 (ssh uses the alias verbatim, without a port).
 * - Plain host fields are comma-separated patterns with `*` / `?` wildcards; a matching `!pattern` vetoes the line.
 * - Hashed host fields are `|1|base64(salt)|base64(HMAC-SHA1(key=salt, data=lookupName))`.
 * - `@cert-authority` lines are never a match: ssh2 negotiates no host-certificate algorithms, so a CA line cannot
 *   vouch for a plain host key. They are ignored for verdicts (callers may want to tell the user so).
 * - `@revoked`: a presented key equal to the key of ANY `@revoked` line is refused, whatever its host field says.
 *   This is deliberately stricter (fail-closed) than OpenSSH, which only honours `@revoked` lines whose host
 *   field matches.
 * - 'changed' is reported when the host has an entry of the SAME key type with a different key (and no entry with
 *   the presented key). NOTE: OpenSSH 9.x is stricter: any known key for the host that differs from the presented
 *   one (even of another type) yields "REMOTE HOST IDENTIFICATION HAS CHANGED". Pass `{ otherTypeIsChanged: true }`
 *   to `checkHostKey` / `KnownHostsStore.check` to get that behaviour; without it a key of a new type is
 *   'unknown' with `otherKeys` listing what was known, and callers must not accept it silently.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { shq } from '../util/quote';

export interface KnownHostEntry {
  file: string;
  /** 1-based line number in `file` */
  line: number;
  marker: '' | '@revoked' | '@cert-authority';
  /** raw host field: comma-separated patterns, or a hashed `|1|salt|hmac` field */
  hosts: string;
  keyType: string;
  keyBase64: string;
  /** the whole line as read (without the line terminator) */
  raw: string;
}

export type HostKeyVerdict =
  | { status: 'known'; entry: KnownHostEntry }
  | { status: 'unknown'; otherKeys: KnownHostEntry[] }
  | { status: 'changed'; expected: KnownHostEntry; expectedFingerprint: string; presentedFingerprint: string }
  | { status: 'revoked'; entry: KnownHostEntry };

interface CheckOptions {
  /**
   * OpenSSH behaviour: a host that has known keys, none equal to the presented one, is 'changed' even when the
   * known keys are of other types. Default false: such a key is 'unknown' with `otherKeys` set.
   */
  otherTypeIsChanged?: boolean;
}

// ---------------------------------------------------------------------------------------------------------------
// OpenSSH pattern matching (match.c)
// ---------------------------------------------------------------------------------------------------------------

/**
 * OpenSSH `match_pattern`: `*` matches any run of characters (also empty), `?` exactly one character, everything
 * else literally; case-sensitive; the whole string must match. Iterative (no exponential backtracking).
 */
export function matchPattern(s: string, pattern: string): boolean {
  let si = 0;
  let pi = 0;
  let starP = -1;
  let starS = 0;
  while (si < s.length) {
    if (pi < pattern.length && pattern[pi] === '*') {
      starP = pi++;
      starS = si;
    } else if (pi < pattern.length && (pattern[pi] === '?' || pattern[pi] === s[si])) {
      pi++;
      si++;
    } else if (starP >= 0) {
      pi = starP + 1;
      si = ++starS;
    } else {
      return false;
    }
  }
  while (pi < pattern.length && pattern[pi] === '*') pi++;
  return pi === pattern.length;
}

/**
 * OpenSSH `match_pattern_list`: comma-separated patterns, each optionally negated with a leading `!`.
 * Returns 1 for a positive match, -1 when a negated pattern matches (which vetoes everything), 0 otherwise.
 * With `lower`, the patterns are lowercased (the caller lowercases `s` where OpenSSH does).
 */
export function matchPatternList(s: string, list: string, lower = false): 1 | 0 | -1 {
  let positive = false;
  for (let sub of list.split(',')) {
    let negated = false;
    if (sub.startsWith('!')) {
      negated = true;
      sub = sub.slice(1);
    }
    if (lower) sub = sub.toLowerCase();
    if (matchPattern(s, sub)) {
      if (negated) return -1;
      positive = true;
    }
  }
  return positive ? 1 : 0;
}

// ---------------------------------------------------------------------------------------------------------------
// Key blobs and fingerprints
// ---------------------------------------------------------------------------------------------------------------

/** First SSH string of a public key blob (RFC 4253 §6.6), e.g. 'ssh-ed25519'. Throws on a malformed blob. */
export function keyTypeOfBlob(blob: Buffer): string {
  if (!Buffer.isBuffer(blob) || blob.length < 4) throw new Error('malformed SSH public key blob (too short)');
  const len = blob.readUInt32BE(0);
  if (len < 1 || len > 64 || 4 + len > blob.length) throw new Error('malformed SSH public key blob (bad key type length)');
  const type = blob.subarray(4, 4 + len).toString('latin1');
  if (!/^[A-Za-z0-9@._+-]+$/.test(type)) throw new Error('malformed SSH public key blob (bad key type)');
  return type;
}

/** `SHA256:` + unpadded base64 of SHA-256(blob), as `ssh-keygen -l` prints it. */
export function fingerprintSha256(keyBlob: Buffer): string {
  return 'SHA256:' + createHash('sha256').update(keyBlob).digest('base64').replace(/=+$/, '');
}

/** Strict base64 decode (canonical encoding only); undefined when `s` is not valid base64. */
function decodeBase64Strict(s: string): Buffer | undefined {
  if (s.length === 0 || s.length % 4 !== 0 || !/^[A-Za-z0-9+/]+={0,2}$/.test(s)) return undefined;
  const b = Buffer.from(s, 'base64');
  return b.toString('base64') === s ? b : undefined;
}

/** Number of SSH strings (after the type) in a well-formed public key blob of a known type. */
const KEY_FIELDS: Record<string, number> = {
  'ssh-ed25519': 1,
  'ssh-rsa': 2,
  'ssh-dss': 4,
  'ecdsa-sha2-nistp256': 2,
  'ecdsa-sha2-nistp384': 2,
  'ecdsa-sha2-nistp521': 2,
  'sk-ssh-ed25519@openssh.com': 2,
  'sk-ecdsa-sha2-nistp256@openssh.com': 3,
  'ssh-ed448': 1,
};

/** Whether `blob` is a complete sequence of SSH strings (with the right count for known key types). */
function wellFormedBlob(blob: Buffer, keyType: string): boolean {
  let off = 0;
  let count = 0;
  while (off < blob.length) {
    if (off + 4 > blob.length) return false;
    const len = blob.readUInt32BE(off);
    off += 4 + len;
    if (off > blob.length) return false;
    count++;
  }
  const want = KEY_FIELDS[keyType];
  if (want !== undefined && count !== want + 1) return false;
  if (keyType === 'ssh-ed25519' && blob.length !== 4 + 11 + 4 + 32) return false;
  return count >= 2;
}

function entryBlob(entry: KnownHostEntry): Buffer | undefined {
  return decodeBase64Strict(entry.keyBase64);
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------------------------

/**
 * Parses known_hosts text. Comments, blank lines and malformed lines (bad marker, missing fields, invalid base64,
 * a truncated key blob, a blob whose embedded type differs from the key type field, a bad `|1|` hash) are skipped,
 * as OpenSSH skips them. Never throws.
 */
export function parseKnownHosts(text: string, file: string): KnownHostEntry[] {
  const out: KnownHostEntry[] = [];
  if (typeof text !== 'string') return out;
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i].endsWith('\r') ? lines[i].slice(0, -1) : lines[i];
    const entry = parseLine(raw, file, i + 1);
    if (entry) out.push(entry);
  }
  return out;
}

function parseLine(raw: string, file: string, line: number): KnownHostEntry | undefined {
  const body = raw.replace(/^[ \t]+/, '');
  if (body === '' || body.startsWith('#')) return undefined;
  const fields = body.split(/[ \t]+/).filter((f) => f !== '');
  let marker: KnownHostEntry['marker'] = '';
  if (fields[0].startsWith('@')) {
    if (fields[0] === '@revoked' || fields[0] === '@cert-authority') marker = fields[0];
    else return undefined; // unknown marker: OpenSSH rejects the line
    fields.shift();
  }
  if (fields.length < 3) return undefined;
  const [hosts, keyType, keyBase64] = fields;
  if (!/^[A-Za-z0-9@._+-]{1,64}$/.test(keyType)) return undefined;
  const blob = decodeBase64Strict(keyBase64);
  if (!blob) return undefined;
  let embedded: string;
  try {
    embedded = keyTypeOfBlob(blob);
  } catch {
    return undefined;
  }
  if (embedded !== keyType || !wellFormedBlob(blob, keyType)) return undefined;
  if (hosts.startsWith('|') && !parseHashedHost(hosts)) return undefined; // bad hash: OpenSSH skips the line
  return { file, line, marker, hosts, keyType, keyBase64, raw };
}

function parseHashedHost(field: string): { salt: Buffer; hash: Buffer } | undefined {
  // |1|salt|hash
  const parts = field.split('|');
  if (parts.length !== 4 || parts[0] !== '' || parts[1] !== '1') return undefined;
  const salt = decodeBase64Strict(parts[2]);
  const hash = decodeBase64Strict(parts[3]);
  if (!salt || !hash || salt.length !== 20 || hash.length !== 20) return undefined;
  return { salt, hash };
}

// ---------------------------------------------------------------------------------------------------------------
// Matching and verdicts
// ---------------------------------------------------------------------------------------------------------------

/**
 * The name OpenSSH looks up in known_hosts: lowercased `host` for port 22, `[host]:port` otherwise.
 * For a HostKeyAlias, pass the alias with port 22.
 */
export function knownHostsLookupName(host: string, port: number): string {
  const h = host.toLowerCase();
  return port === 22 ? h : `[${h}]:${port}`;
}

/** Whether a known_hosts entry's host field matches `host` on `port` (markers are not considered here). */
export function hostMatches(entry: KnownHostEntry, host: string, port: number): boolean {
  const name = knownHostsLookupName(host, port);
  const field = entry.hosts;
  if (field.startsWith('|')) {
    const h = parseHashedHost(field);
    if (!h) return false;
    const mac = createHmac('sha1', h.salt).update(name).digest();
    return timingSafeEqual(mac, h.hash);
  }
  return matchPatternList(name, field, true) === 1;
}

/**
 * Verdict for `keyBlob` presented by `host`:`port` (see the module comment for the exact rules).
 * Throws if `keyBlob` is not a well-formed SSH public key blob (callers must treat that as a rejection).
 */
export function checkHostKey(
  entries: KnownHostEntry[],
  host: string,
  port: number,
  keyBlob: Buffer,
  opts: CheckOptions = {},
): HostKeyVerdict {
  const presentedType = keyTypeOfBlob(keyBlob);
  // 1. Revoked, whatever else matches (and whatever host field the @revoked line has: fail-closed).
  for (const e of entries) {
    if (e.marker !== '@revoked') continue;
    const b = entryBlob(e);
    if (b && b.equals(keyBlob)) return { status: 'revoked', entry: e };
  }
  const forHost = entries.filter((e) => e.marker === '' && hostMatches(e, host, port));
  // 2. The exact key is known for this host.
  for (const e of forHost) {
    const b = entryBlob(e);
    if (b && b.equals(keyBlob)) return { status: 'known', entry: e };
  }
  // 3. A different key of the same type (or, OpenSSH-style, of any type) is known for this host.
  const sameType = forHost.find((e) => e.keyType === presentedType);
  const expected = sameType ?? (opts.otherTypeIsChanged ? forHost[0] : undefined);
  if (expected) {
    const eb = entryBlob(expected);
    return {
      status: 'changed',
      expected,
      expectedFingerprint: eb ? fingerprintSha256(eb) : '(unreadable key)',
      presentedFingerprint: fingerprintSha256(keyBlob),
    };
  }
  // 4. Unknown; report keys of other types so the caller can warn like OpenSSH.
  return { status: 'unknown', otherKeys: forHost.filter((e) => e.keyType !== presentedType) };
}

// ---------------------------------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------------------------------

function assertValidHostPort(host: string, port: number): void {
  if (typeof host !== 'string' || host.length === 0 || host.length > 1024) throw new Error(`invalid host name "${host}"`);
  // Anything that would change the meaning of a known_hosts line: separators, patterns, markers, hashes, brackets.
  if (/[\s,#*?!|@[\]\\"'\x00-\x1f\x7f]/.test(host)) throw new Error(`invalid host name "${host}" for known_hosts`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`invalid port ${port}`);
}

/**
 * One OpenSSH known_hosts line (without newline): `host` (port 22) or `[host]:port`, key type, base64 key;
 * with `hashed`, the host field is `|1|salt|HMAC-SHA1(salt, name)` like `HashKnownHosts yes` writes it.
 */
export function knownHostLine(host: string, port: number, keyBlob: Buffer, opts: { hashed?: boolean } = {}): string {
  assertValidHostPort(host, port);
  const keyType = keyTypeOfBlob(keyBlob);
  const name = knownHostsLookupName(host, port);
  let field = name;
  if (opts.hashed) {
    const salt = randomBytes(20);
    const mac = createHmac('sha1', salt).update(name).digest();
    field = `|1|${salt.toString('base64')}|${mac.toString('base64')}`;
  }
  return `${field} ${keyType} ${keyBlob.toString('base64')}`;
}

// ---------------------------------------------------------------------------------------------------------------
// Store
// ---------------------------------------------------------------------------------------------------------------

/** Algorithm names (for ssh2's `algorithms.serverHostKey`) that produce a host key of `keyType`. */
function hostKeyAlgorithmsForKeyType(keyType: string): string[] {
  if (keyType === 'ssh-rsa') return ['rsa-sha2-512', 'rsa-sha2-256', 'ssh-rsa'];
  return [keyType];
}

/** authorized_keys option keywords (sshd(8) AUTHORIZED_KEYS FILE FORMAT), as the first word of a line. */
const AUTHORIZED_KEYS_OPTION = new RegExp(
  '^(?:agent-forwarding|cert-authority|command=|environment=|expiry-time=|from=|no-agent-forwarding|no-port-forwarding|' +
    'no-pty|no-user-rc|no-x11-forwarding|permitlisten=|permitopen=|port-forwarding|principals=|pty|no-touch-required|' +
    'verify-required|restrict|tunnel=|user-rc|x11-forwarding)',
  'i',
);
const KEY_TYPE_WORD = /^(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-|sk-)/;

/**
 * Accepted host keys are written only to a known_hosts file: a file named authorized_keys*, or one with a
 * line that reads as an authorized_keys entry (starts with a key type, or with an option then a key type),
 * is refused — a hostile setting pointing the store at ~/.ssh/authorized_keys would otherwise plant a login key.
 */
export function refuseNonKnownHostsFile(file: string): void {
  let real = file;
  try {
    real = fs.realpathSync(file); // a dotfile manager's link is fine; what it points at is checked
  } catch {
    // missing: checked by name only
  }
  if (/^authorized_keys/i.test(path.basename(file)) || /^authorized_keys/i.test(path.basename(real)))
    throw new Error(`Refusing to write a host key to ${file}: it is an authorized_keys file, not a known_hosts file`);
  let text: string;
  try {
    const fd = fs.openSync(real, fs.constants.O_RDONLY);
    try {
      const buf = Buffer.alloc(Math.min(fs.fstatSync(fd).size, 16 << 20));
      fs.readSync(fd, buf, 0, buf.length, 0);
      text = buf.toString('utf8');
    } finally {
      fs.closeSync(fd);
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    throw err;
  }
  for (const raw of text.split('\n')) {
    const words = raw.trim().split(/[ \t]+/);
    if (!words[0] || words[0].startsWith('#')) continue;
    if (KEY_TYPE_WORD.test(words[0]) || (AUTHORIZED_KEYS_OPTION.test(words[0]) && words.slice(1).some((w) => KEY_TYPE_WORD.test(w))))
      throw new Error(`Refusing to write a host key to ${file}: its lines read as authorized_keys entries, not known_hosts`);
  }
}

export class KnownHostsStore {
  /** Problems met by the last `load()` other than missing files (e.g. a permission error), for logging. */
  lastLoadErrors: { file: string; message: string }[] = [];
  private readonly files: string[];
  private readonly hashNewEntries: boolean;

  /**
   * @param files first file is the one `append` writes to; the others are read-only (e.g. /etc/ssh/ssh_known_hosts)
   * @param opts.hashNewEntries write hashed host names (like `HashKnownHosts yes`); default false
   */
  constructor(files: string[], opts: { hashNewEntries?: boolean } = {}) {
    this.files = [...files];
    this.hashNewEntries = !!opts.hashNewEntries;
  }

  /** The files, in order (worker threads build their own store from them: same files, same checks). */
  get paths(): string[] {
    return [...this.files];
  }

  /** Reads all files afresh (missing files are skipped). */
  load(): KnownHostEntry[] {
    const entries: KnownHostEntry[] = [];
    const errors: { file: string; message: string }[] = [];
    for (const file of this.files) {
      let text: string;
      try {
        text = fs.readFileSync(file, 'utf8');
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && code !== 'ENOTDIR') errors.push({ file, message: (err as Error).message });
        continue;
      }
      entries.push(...parseKnownHosts(text, file));
    }
    this.lastLoadErrors = errors;
    return entries;
  }

  check(host: string, port: number, keyBlob: Buffer, opts?: CheckOptions): HostKeyVerdict {
    return checkHostKey(this.load(), host, port, keyBlob, opts);
  }

  /**
   * Appends a line for `host`:`port` to the first file and returns it (without newline). Creates the parent
   * directory (0700) and the file (0600) if missing, and first terminates an unterminated last line.
   */
  append(host: string, port: number, keyBlob: Buffer): string {
    const file = this.files[0];
    if (!file) throw new Error('KnownHostsStore has no file to append to');
    // A host named like an authorized_keys option (`restrict`, `from=…`) is written hashed, so the line can
    // never read as a login key wherever it ends up.
    const hashed = this.hashNewEntries || AUTHORIZED_KEYS_OPTION.test(knownHostsLookupName(host, port));
    const line = knownHostLine(host, port, keyBlob, { hashed });
    refuseNonKnownHostsFile(file);
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_APPEND | fs.constants.O_CREAT, 0o600);
    try {
      const size = fs.fstatSync(fd).size;
      let prefix = '';
      if (size > 0) {
        const last = Buffer.alloc(1);
        fs.readSync(fd, last, 0, 1, size - 1);
        if (last[0] !== 0x0a) prefix = '\n';
      }
      fs.writeSync(fd, `${prefix}${line}\n`);
    } finally {
      fs.closeSync(fd);
    }
    return line;
  }

  /** Key types already known for the host, in file order (put these first when negotiating, like OpenSSH). */
  preferredKeyTypes(host: string, port: number): string[] {
    const types: string[] = [];
    for (const e of this.load()) {
      if (e.marker === '' && hostMatches(e, host, port) && !types.includes(e.keyType)) types.push(e.keyType);
    }
    return types;
  }

  /**
   * `preferredKeyTypes` mapped to ssh2 host key algorithm names (an `ssh-rsa` key becomes
   * rsa-sha2-512, rsa-sha2-256, ssh-rsa, since servers may refuse SHA-1 signatures).
   */
  preferredHostKeyAlgorithms(host: string, port: number): string[] {
    const algs: string[] = [];
    for (const t of this.preferredKeyTypes(host, port)) {
      for (const a of hostKeyAlgorithmsForKeyType(t)) if (!algs.includes(a)) algs.push(a);
    }
    return algs;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------------------------------

/** Multi-line warning like OpenSSH's "REMOTE HOST IDENTIFICATION HAS CHANGED", with what to do. */
export function describeChangedKey(host: string, port: number, v: Extract<HostKeyVerdict, { status: 'changed' }>): string {
  const name = knownHostsLookupName(host, port);
  const e = v.expected;
  const lines = [
    `WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED for ${name}!`,
    'IT IS POSSIBLE THAT SOMEONE IS DOING SOMETHING NASTY!',
    'Someone could be eavesdropping on you right now (man-in-the-middle attack)!',
    'It is also possible that a host key has just been changed (for example the node was re-provisioned).',
    `The host presented a key with fingerprint ${v.presentedFingerprint}.`,
    `known_hosts expects the ${e.keyType} key with fingerprint ${v.expectedFingerprint}`,
    `  (offending entry: ${e.file}:${e.line}).`,
    'The connection was refused. If you know the change is expected, remove the old entry with',
    `  ssh-keygen -f ${shq(e.file)} -R ${shq(name)}`,
    `(or delete line ${e.line} of ${e.file}), then connect again and confirm the new fingerprint out of band.`,
  ];
  return lines.join('\n');
}
