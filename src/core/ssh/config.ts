/**
 * Nodes from the OpenSSH client configuration (~/.ssh/config), resolved the way `ssh -G <alias>` resolves them.
 * No `vscode` import: runs under plain Node.
 *
 * Lines are tokenised as OpenSSH's argv_split does (quotes, backslash escapes, `#` only at a word's start; one line
 * at a time, so every value keeps its file and line); this module adds line validation with diagnostics (a bad line
 * is reported and dropped instead of throwing or hiding the other hosts), `Include` expansion (globs, relative to
 * ~/.ssh, bounded, scoped to the enclosing Host/Match block as in OpenSSH), OpenSSH pattern matching, `Match`
 * evaluation that never runs `exec`, the second pass (`Match final`/`canonical`, CanonicalizeHostname without DNS),
 * command-line user/port set first (`user@host`), and token expansion (`%h` in HostName; `~`,
 * `%d %u %h %r %p %n %l %L %i %k %j %C %%` and `${ENV}` in IdentityFile and UserKnownHostsFile).
 */
export * from './configTypes';
export * from './configSyntax';
export * from './addresses';
export * from './configExpand';
export * from './configLoader';
export * from './configEval';
export * from './configCanon';
