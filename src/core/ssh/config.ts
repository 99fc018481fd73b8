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
export * from './configTypes';
export * from './configSyntax';
export * from './addresses';
export * from './configExpand';
export * from './configLoader';
export * from './configEval';
export * from './configCanon';
