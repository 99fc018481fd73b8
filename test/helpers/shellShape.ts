/**
 * The command skeleton of a POSIX sh script, for injection tests: the script is split into simple
 * commands (at unquoted newlines, `;`, `&`, `&&`, `||`, `|`), comments dropped, quotes honoured
 * ('…', "…", backslash, line continuations). A command injected through a value shows up as an extra
 * command; a value that stays quoted does not.
 */
export function shellCommands(script: string, commentsOut?: string[]): string[][] {
  const cmds: string[][] = [];
  let words: string[] = [];
  let w: string | null = null;
  const endWord = () => {
    if (w !== null) words.push(w);
    w = null;
  };
  const endCmd = () => {
    endWord();
    if (words.length) cmds.push(words);
    words = [];
  };
  for (let i = 0; i < script.length; i++) {
    const c = script[i];
    if (c === "'") {
      const j = script.indexOf("'", i + 1);
      if (j < 0) throw new Error('unterminated single quote');
      w = (w ?? '') + script.slice(i + 1, j);
      i = j;
    } else if (c === '"') {
      let j = i + 1;
      let v = '';
      for (; j < script.length && script[j] !== '"'; j++) {
        if (script[j] === '\\' && j + 1 < script.length) v += script[++j];
        else v += script[j];
      }
      if (j >= script.length) throw new Error('unterminated double quote');
      w = (w ?? '') + v;
      i = j;
    } else if (c === '\\') {
      if (script[i + 1] === '\n') i++;
      else w = (w ?? '') + (script[++i] ?? '');
    } else if (c === '#' && w === null) {
      const j = script.indexOf('\n', i);
      commentsOut?.push(script.slice(i, j < 0 ? script.length : j));
      i = j < 0 ? script.length : j - 1;
    } else if (c === ' ' || c === '\t') endWord();
    else if (c === '\n' || c === ';') endCmd();
    else if (c === '|' || (c === '&' && !(w !== null && w.endsWith('>')) && script[i - 1] !== '>')) {
      if (script[i + 1] === c) i++;
      endCmd();
    } else w = (w ?? '') + c;
  }
  endCmd();
  return cmds;
}

/** The skeleton to compare: each command's first word (variable assignments collapsed to `NAME=`). */
export function commandHeads(script: string): string[] {
  return shellCommands(script).map((c) => {
    const h = c[0];
    const eq = /^[A-Za-z_][A-Za-z0-9_]*=/.exec(h);
    return eq ? eq[0] : h;
  });
}

/** The script's comments as the shell sees them (a `#` that starts a word, to the end of its line). */
export function shellComments(script: string): string[] {
  const out: string[] = [];
  shellCommands(script, out);
  return out;
}
