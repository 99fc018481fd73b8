import { visible } from './terminal';

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
 * Characters a terminal acts on or hides when a script is shown with `cat`: C0 (tab and newline too), DEL,
 * C1, and the bidi/format controls that reorder or hide text (the set visible() escapes).
 */
const NON_PRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/;

/**
 * Bash quoting for scripts a person reads before running them (`#!/bin/bash` only: POSIX sh has no `$'…'`).
 * A string without control characters is quoted as shq() quotes it; one with any is written as ANSI-C
 * quoting, `$'…'`, with each such character as the `\xHH` escapes of its UTF-8 bytes, so `cat` of the script
 * shows every byte (no escape sequence reaches the terminal) while bash still passes the exact string.
 */
export function shqPrintable(arg: string): string {
  if (!NON_PRINTABLE.test(arg)) return shq(arg);
  let out = "$'";
  for (const ch of arg) {
    if (ch === '\\' || ch === "'") out += '\\' + ch;
    else if (NON_PRINTABLE.test(ch)) for (const b of Buffer.from(ch, 'utf8')) out += '\\x' + b.toString(16).padStart(2, '0');
    else out += ch;
  }
  return out + "'";
}

/** Quote argv for a bash script a person reads (shqPrintable) and join it into one command line. */
export function shJoinPrintable(argv: readonly string[]): string {
  return argv.map(shqPrintable).join(' ');
}

/**
 * Text for a `# …` comment in a generated script: newlines, CR and every other control character are
 * shown as `\uXXXX`, so a name from the node cannot end the comment and start a command.
 */
export function shComment(text: string): string {
  return visible(text);
}
