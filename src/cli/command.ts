/**
 * One CLI command: its name, its help block (exactly as `gpu-sessions --help` prints it), its options (node:util
 * parseArgs specs), the exit codes it may return, and how it runs. The table of them is commands/index.ts; main.ts
 * parses the global options and the union of every command's options, then dispatches.
 */
import type { CliIo, GlobalOpts } from './cliNode';

export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
}

export type OptionValues = Record<string, string | boolean | string[] | undefined>;

interface CommandContext {
  /** The positionals after the command's name. */
  args: string[];
  /** Every parsed option (the union of all commands' and the global ones). */
  v: OptionValues;
  g: GlobalOpts;
  io: CliIo;
}

export interface CliCommand {
  name: string;
  /** Its lines in the help, from "  gpu-sessions NAME ..." to the end of its description; no trailing newline. */
  usage: string;
  /** The options it reads beyond the global ones. */
  options: Record<string, OptionSpec>;
  /** Exit code → meaning, for the codes this command may return (see exitCodes.ts). */
  exitCodes: Record<number, string>;
  run(ctx: CommandContext): Promise<number>;
}

/** A string option's value; undefined when not given. */
export function str(v: OptionValues, name: string): string | undefined {
  const x = v[name];
  return typeof x === 'string' ? x : undefined;
}

/** A repeatable string option's values ([] when not given). */
export function list(v: OptionValues, name: string): string[] {
  const x = v[name];
  return Array.isArray(x) ? x : [];
}

export function flag(v: OptionValues, name: string): boolean {
  return Boolean(v[name]);
}

/** `Number(value)` of an option, undefined when not given (so `--x abc` is NaN, for the caller to refuse). */
export function num(v: OptionValues, name: string): number | undefined {
  return v[name] !== undefined ? Number(v[name]) : undefined;
}
