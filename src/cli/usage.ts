/**
 * The text of `gpu-sessions --help` (every command's help block, in the table's order) and of
 * `gpu-sessions CMD --help` (that command's block, the global options and its exit codes).
 */
import type { CliCommand, OptionSpec } from './command';
import { COMMANDS } from './commands';
import { exitCodesLine } from './exitCodes';

/** The options every command takes. */
export const GLOBAL_OPTIONS: Record<string, OptionSpec> = {
  'ssh-config': { type: 'string' },
  'known-hosts': { type: 'string' },
  identity: { type: 'string', multiple: true },
  'accept-new': { type: 'boolean' },
  json: { type: 'boolean' },
  roots: { type: 'string' },
  timeout: { type: 'string' },
  verbose: { type: 'boolean', short: 'v' },
  help: { type: 'boolean', short: 'h' },
};

const HEADER = `gpu-sessions — watch and salvage GPU nodes running SGLang

Usage:
`;

const NODE_NOTE = `NODE is a Host alias from ssh config or [user@]host[:port] (or ssh://[user@]host[:port]).`;

const GLOBAL_HELP = `Global options:
  --ssh-config FILE     ssh client config (default ~/.ssh/config)
  --known-hosts FILE    known_hosts file to check and append to (default ~/.ssh/known_hosts)
  --identity FILE       private key to try first (repeatable)
  --accept-new          accept and record an unknown host key (a changed key is always refused)
  --roots DIR,...       directories to scan for artifacts (default: the home, the user's provider volumes
                        such as /workspace or /data, and the SGLang servers' working directories)
  --timeout SECONDS     connect timeout (default 15)
  -v, --verbose         log connection details to stderr (salvage: also its phase timings)
  -h, --help            this help`;

const EXIT_HELP = `Exit codes: 0 ok, 2 usage or invalid profile, 3 host-key problem, 4 unreachable or auth failure,
5 salvage verdict unsafe, 6 launch refused by preflight, 7 a launched instance did not become ready (data: a file is degenerate),
8 watch --until: a node became unreachable first, 9 restore: conflicts left as they are (--force), 130 interrupted (Ctrl-C).`;

export const USAGE = `${HEADER}${COMMANDS.map((c) => c.usage).join('\n')}\n\n${NODE_NOTE}\n\n${GLOBAL_HELP}\n\n${EXIT_HELP}`;

/** One command's help: its block, what NODE is (when it takes one), the global options, its exit codes. */
export function commandUsage(c: CliCommand): string {
  const node = /\bNODE\b/.test(c.usage) ? `\n\n${NODE_NOTE}` : '';
  return `Usage:\n${c.usage}${node}\n\n${GLOBAL_HELP}\n\n${exitCodesLine(c.exitCodes)}`;
}
