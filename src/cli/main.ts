/**
 * gpu-sessions: the headless CLI. Calls the same core as the extension. This file parses the global options and
 * the union of every command's options, prints the help, and dispatches to the command's file (commands/, one per
 * command, each with its options, help block and exit codes; the codes are tabled in exitCodes.ts).
 */
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { errorMessage, exitCodeFor } from '../core/util/errors';
import { outputStreamRedactor, redactOutput } from '../core/util/redact';
import { visible } from '../core/util/terminal';
import { CliIo, GlobalOpts, defaultIo, usageError } from './cliNode';
import type { CliCommand, OptionSpec, OptionValues } from './command';
import { COMMANDS, findCommand } from './commands';
import { GLOBAL_OPTIONS, USAGE, commandUsage } from './usage';

/** The global options and every command's, merged; an option two commands declare differently is a bug here. */
export function allOptions(commands: readonly CliCommand[] = COMMANDS): Record<string, OptionSpec> {
  const all: Record<string, OptionSpec> = { ...GLOBAL_OPTIONS };
  for (const c of commands)
    for (const [name, spec] of Object.entries(c.options)) {
      const had = all[name];
      if (had && (had.type !== spec.type || Boolean(had.multiple) !== Boolean(spec.multiple) || had.short !== spec.short))
        throw new Error(`option --${name} of ${c.name} differs from another command's`);
      all[name] = spec;
    }
  return all;
}

const OPTIONS = allOptions();

/**
 * The CLI's boundary: everything written to stdout and stderr goes through the redaction rule, then the
 * one terminal sanitizer (strings from the node cannot move the cursor, retitle the window or reorder
 * text; its escapes are valid JSON, so --json too). `raw` (tail --raw, our cursor controls) is redacted only.
 */
export function redactingIo(io: CliIo): CliIo {
  const raw = io.raw ?? io.out;
  // Block state across writes: a private key printed line by line (tail --follow) is redacted as a block.
  const out = outputStreamRedactor();
  const err = outputStreamRedactor();
  return {
    ...io,
    out: (s) => io.out(visible(out(s), true)),
    err: (s) => io.err(visible(err(s), true)),
    raw: (s) => raw(out(s)),
  };
}

export async function main(argv: string[], rawIo: CliIo = defaultIo): Promise<number> {
  const io = redactingIo(rawIo);
  let parsed;
  try {
    parsed = parseArgs({ args: argv, allowPositionals: true, strict: true, options: OPTIONS });
  } catch (e) {
    io.err(`${errorMessage(e)}\nRun 'gpu-sessions --help' for usage.\n`);
    return 2;
  }
  const v = parsed.values as OptionValues;
  const [cmd, ...rest] = parsed.positionals;
  const help = helpText(cmd, rest, Boolean(v.help));
  if (help) {
    (help.code === 0 ? io.out : io.err)(help.text + '\n');
    return help.code;
  }
  const timeoutS = v.timeout !== undefined ? Number(v.timeout) : undefined;
  if (timeoutS !== undefined && !(timeoutS > 0)) {
    io.err(`--timeout must be a positive number of seconds.\n`);
    return 2;
  }
  const sshConfig = v['ssh-config'] as string | undefined;
  const knownHosts = v['known-hosts'] as string | undefined;
  const roots = v.roots as string | undefined;
  const g: GlobalOpts = {
    sshConfig: sshConfig ? path.resolve(sshConfig) : undefined,
    knownHosts: knownHosts ? path.resolve(knownHosts) : undefined,
    identity: ((v.identity as string[] | undefined) ?? []).map((f) => path.resolve(f)),
    acceptNew: Boolean(v['accept-new']),
    json: Boolean(v.json),
    verbose: Boolean(v.verbose),
    roots: roots ? roots.split(',').filter(Boolean) : undefined,
    timeoutS,
  };
  try {
    const command = findCommand(cmd);
    if (!command) usageError(`Unknown command "${cmd}".`);
    return await command.run({ args: rest, v, g, io });
  } catch (e) {
    io.err(`error: ${errorMessage(e)}\n`);
    return exitCodeFor(e);
  }
}

/**
 * The help to print, if the command line asks for it: `--help` (all), `CMD --help` and `help CMD` (that command's),
 * `help` (all); with no command at all, the whole help on stderr and exit 2. Null: run the command.
 */
function helpText(cmd: string | undefined, rest: string[], help: boolean): { text: string; code: number } | null {
  if (!cmd) return { text: USAGE, code: help ? 0 : 2 };
  if (help) {
    const c = findCommand(cmd);
    return { text: c ? commandUsage(c) : USAGE, code: 0 };
  }
  if (cmd !== 'help') return null;
  if (rest[0] === undefined) return { text: USAGE, code: 0 };
  const c = findCommand(rest[0]);
  return c
    ? { text: commandUsage(c), code: 0 }
    : { text: `error: Unknown command "${rest[0]}".\nRun 'gpu-sessions --help' for usage.`, code: 2 };
}

if (require.main === module) {
  // `gpu-sessions parse-log big.log | head` closes our stdout early: that is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  // Exit once stdout has drained: process.exit() drops what a pipe has not taken yet (a 400 KB `salvage --json`
  // read by a slower consumer came out cut).
  const exitAfterFlush = (code: number) =>
    process.stdout.writableLength ? process.stdout.write('', () => process.exit(code)) : process.exit(code);
  main(process.argv.slice(2)).then(
    (code) => exitAfterFlush(code),
    (e) => {
      process.stderr.write(`error: ${visible(redactOutput(errorMessage(e)), true)}\n`);
      process.exit(1);
    },
  );
}
