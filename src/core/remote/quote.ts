import { visible } from '../util/terminal';

/**
 * POSIX shell quoting. Every argument we put into a remote command line goes through `shq`,
 * so names we did not write (file names, model paths, flags read from a node) cannot inject commands.
 */
export function shq(arg: string): string {
  if (arg.length > 0 && /^[A-Za-z0-9_\-+=.,/:@%]+$/.test(arg)) return arg;
  return `'${arg.replace(/'/g, `'\\''`)}'`;
}

/** Quote argv and join it into one command line. */
export function shJoin(argv: readonly string[]): string {
  return argv.map(shq).join(' ');
}

/**
 * Text for a `# …` comment in a generated script: newlines, CR and every other control character are
 * shown as `\uXXXX`, so a name from the node cannot end the comment and start a command.
 */
export function shComment(text: string): string {
  return visible(text);
}
