/**
 * Checks that markdown we wrote holds no live markup from node strings: after removing code spans
 * (CommonMark: a run of N backticks up to the next run of exactly N) and fenced blocks, no unescaped
 * `<`, `[`, `]` or raw control characters may remain in the text. Returns the offending snippets.
 */
export function unescapedMarkup(md: string, allowed: RegExp[] = []): string[] {
  let text = md.replace(/^(`{3,})[^\n]*\n[\s\S]*?\n\1\s*$/gm, '');
  text = text.replace(/(`+)([\s\S]*?[^`])\1(?!`)/g, '');
  for (const a of allowed) text = text.replace(a, '');
  const bad: string[] = [];
  const re = /(?<!\\)[<[\]]|[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;
  for (const m of text.matchAll(re)) bad.push(JSON.stringify(text.slice(Math.max(0, m.index! - 20), m.index! + 20)));
  return bad;
}
