/**
 * The CLI's exit codes, in one table. Codes 1-4 and 130 come from an error's kind (exitCodeFor in
 * core/util/errors); the others are a command's own verdict. Each command lists the codes it may return
 * (command.ts), with its own words where a code means something particular to it.
 */
export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  hostKey: 3,
  unreachable: 4,
  unsafe: 5,
  refused: 6,
  notReady: 7,
  /** data: a file is degenerate */
  degenerate: 7,
  unreachableFirst: 8,
  conflicts: 9,
  guardNotStarted: 10,
  interrupted: 130,
} as const;

const MEANING: Record<number, string> = {
  [EXIT.ok]: 'ok',
  [EXIT.failed]: 'other error',
  [EXIT.usage]: 'usage',
  [EXIT.hostKey]: 'host-key problem',
  [EXIT.unreachable]: 'unreachable or auth failure',
  [EXIT.interrupted]: 'interrupted (Ctrl-C)',
};

/** The codes of a command that reads nothing from a node: 0, 1, 2. */
export function localExits(own: Record<number, string> = {}): Record<number, string> {
  return { [EXIT.ok]: MEANING[EXIT.ok], [EXIT.failed]: MEANING[EXIT.failed], [EXIT.usage]: MEANING[EXIT.usage], ...own };
}

/** The codes of a command that connects to nodes: 0-4 and 130, then its own. */
export function nodeExits(own: Record<number, string> = {}): Record<number, string> {
  return { ...MEANING, ...own };
}

/** "Exit codes: 0 ok, 1 other error, ..." in ascending order. */
export function exitCodesLine(codes: Record<number, string>): string {
  const parts = Object.keys(codes)
    .map(Number)
    .sort((a, b) => a - b)
    .map((c) => `${c} ${codes[c]}`);
  return `Exit codes: ${parts.join(', ')}.`;
}
