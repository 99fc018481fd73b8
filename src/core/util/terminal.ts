/**
 * The one sanitizer for strings that came from a node and are shown to a person: hostnames, process
 * argv, file names, symlink targets, stderr text, log lines. A node is semi-trusted: such strings may carry
 * terminal escapes (window title, OSC 8 links, clear screen), bidi overrides that reorder what is shown,
 * or markdown that turns a report into links and HTML.
 *
 * - visible(): C0/C1 control characters, DEL and bidi/format controls become `\u001b`-style escapes (valid
 *   inside JSON strings too, so the CLI can pass every line it prints, human or --json, through it).
 * - mdCode() / mdText(): markdown we write (SALVAGE.md, environment.md) holds node strings only as code
 *   spans fenced longer than any backtick run inside, or as text with markdown/HTML punctuation escaped.
 * (Secrets are another concern: util/redact.ts.)
 */

/** C0 except \t and \n, DEL, C1, and the invisible direction/format controls that reorder or hide text. */
const UNSAFE_KEEP_LINES = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g;
const UNSAFE_ALL = /[\u0000-\u001f\u007f-\u009f\u061c\u200b-\u200f\u2028\u2029\u202a-\u202e\u2060-\u2069\ufeff]/g;

const esc = (c: string) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0');

/**
 * The string with every control character made visible as `\uXXXX`. `keepLines` keeps newlines and tabs
 * (multi-line messages, log text); otherwise they are escaped too (one-line fields: names, paths, hosts).
 */
export function visible(s: string, keepLines = false): string {
  return s.replace(keepLines ? UNSAFE_KEEP_LINES : UNSAFE_ALL, esc);
}

/** True when the string holds a character visible() would escape. */
export function hasControls(s: string, keepLines = false): boolean {
  const re = keepLines ? UNSAFE_KEEP_LINES : UNSAFE_ALL;
  re.lastIndex = 0;
  const r = re.test(s);
  re.lastIndex = 0;
  return r;
}

/** SGR colour/style sequences (`ESC [ … m`), the only escapes SGLang logs legitimately carry. */
const SGR = /\u001b\[[0-9;:]*m/g;

/** A log line for a terminal without `--raw`: colour sequences dropped, every other control made visible. */
export function plainLogLine(s: string): string {
  return visible(s.replace(SGR, ''), true);
}

/** An inline markdown code span that shows `s` literally, whatever backticks it holds. */
export function mdCode(s: string): string {
  const v = visible(s);
  let longest = 0;
  for (const m of v.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  const fence = '`'.repeat(longest + 1);
  const pad = v.startsWith('`') || v.endsWith('`') || (v.startsWith(' ') && v.endsWith(' ') && v.trim()) ? ' ' : '';
  return `${fence}${pad}${v}${pad}${fence}`;
}

/**
 * Text for a markdown paragraph or table cell: controls made visible, newlines folded to spaces, and the
 * characters that start markup, links, HTML or cells backslash-escaped (`\ ` * _ [ ] < > | & # ! ~`).
 */
export function mdText(s: string): string {
  return visible(s.replace(/\r?\n|\r/g, ' ')).replace(/[\\`*_[\]<>|&#!~]/g, (c) => '\\' + c);
}

/** A code span for a GFM table cell: `|` escaped too (GFM splits cells before it parses code spans). */
export function mdCodeCell(s: string): string {
  return mdCode(s).replace(/\|/g, '\\|');
}

/** A fenced code block showing `content` literally: the fence is longer than any backtick run inside. */
export function mdFence(content: string, lang = ''): string {
  const longest = Math.max(2, ...(content.match(/`+/g) ?? []).map((m) => m.length));
  const f = '`'.repeat(longest + 1);
  return `${f}${lang}\n${visible(content.replace(/\n+$/, ''), true)}\n${f}`;
}
