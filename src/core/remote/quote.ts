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
