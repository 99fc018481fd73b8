/**
 * Loading ssh_config files: Include expansion (bounded, scoped to its Host/Match block), every line validated.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { matchPatternList } from './knownHosts';
import { ConfigDiagnostic, sshDir } from './configTypes';
import {
  Criterion,
  Item,
  KNOWN_KEYWORDS,
  MATCH_EVALUATED,
  MATCH_NO_ARG,
  MATCH_WITH_ARG,
  MAX_DIAGNOSTICS_PER_FILE,
  MAX_INCLUDE_DEPTH,
  ParsedFile,
  SINGLE_ARG,
  printable,
  tokenize,
} from './configSyntax';
import { parsePort, parseProxyJump, refusedHostReason } from './addresses';
import { expandTilde, globPaths, hasGlob } from './configExpand';

// ---------------------------------------------------------------------------------------------------------------
// Loading
// ---------------------------------------------------------------------------------------------------------------

export class Loader {
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
    if (NONE_ALONE.has(key) && args.length > 1 && args.some((a) => a.toLowerCase() === 'none')) {
      return fail(`${keywordRaw} "none" must appear alone (ssh refuses the whole file for this line); fix or remove the line`);
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

    // Values as OpenSSH tokenises them (argv_split: quotes, backslash escapes, `#` only at a word's start); a
    // ProxyCommand is the rest of the line as written (OpenSSH passes it to the shell).
    const values = key === 'proxycommand' ? [rest.trim()] : args;

    switch (key) {
      case 'host': {
        for (const p of values) {
          if (!isPattern(p) && !this.seenAliases.has(p)) {
            this.seenAliases.add(p);
            const refused = refusedHostReason(p);
            if (refused) {
              this.diag(file, line, `"${printable(p, 40)}" is not listed as a node: ssh refuses it (${refused})`);
              continue;
            }
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

/** Keywords whose `none` must be their only value (readconf.c). */
const NONE_ALONE = new Set(['userknownhostsfile', 'globalknownhostsfile', 'canonicaldomains', 'setenv', 'sendenv']);

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
