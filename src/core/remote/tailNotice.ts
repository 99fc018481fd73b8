/**
 * GNU tail notices on stderr (LC_ALL=C): missing, gone, appeared, replaced, truncated.
 */
// ---------------------------------------------------------------------------------------------------------
// GNU tail's notices on stderr (LC_ALL=C)

type TailNoticeKind = 'missing' | 'gone' | 'appeared' | 'replaced' | 'truncated' | 'error';

const NOTICES: Array<[RegExp, TailNoticeKind]> = [
  [/^tail: cannot open (.+) for reading: No such file or directory$/, 'missing'],
  [/^tail: (.+) has become inaccessible: No such file or directory$/, 'gone'],
  [/^tail: (.+) has appeared;\s+following new file$/, 'appeared'],
  [/^tail: (.+) has been replaced;\s+following new file$/, 'replaced'],
  [/^tail: (.+): file truncated$/, 'truncated'],
  [/^tail: (.+) has been replaced with an untailable (?:file|remote file).*$/, 'error'],
  [/^tail: cannot open (.+) for reading: .*$/, 'error'],
  [/^tail: (.+) has become inaccessible: .*$/, 'error'],
  [/^tail: error reading (.+): .*$/, 'error'],
  [/^tail: (.+): cannot follow end of this type of file.*$/, 'error'],
];

/** Parse one stderr line of GNU tail; `name` is the file name as tail quoted it. Null: not a notice about a file. */
export function parseTailNotice(line: string): { kind: TailNoticeKind; name: string } | null {
  if (!line.startsWith('tail: ') || line.length > 16384) return null;
  for (const [re, kind] of NOTICES) {
    const m = re.exec(line);
    if (m) return { kind, name: m[1] };
  }
  return null;
}

/** Does `quoted` (as GNU tail printed it) name `name`? tail quotes with the shell-escape style. */
export function quotedNameIs(quoted: string, name: string): boolean {
  return (
    quoted === name ||
    quoted === `'${name}'` ||
    quoted === `"${name}"` ||
    quoted === `'${name.replace(/'/g, `'\\''`)}'` ||
    quoted === `\u2018${name}\u2019`
  );
}
