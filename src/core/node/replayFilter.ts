/**
 * The lines a restarted tail sends again. The monitor restarts its one tail whenever the set of logs changes (a
 * server gone, one back); the new tail starts with the last lines of every log, and for a log it followed
 * before those are lines the live guard has already judged. Read again, an old traceback is a second crash of a
 * server that is starting (crashed → starting → crashed), and an old launch line a restart that never happened.
 *
 * `ReplayFilter` keeps the last lines delivered per log and, while a restarted tail sends its backlog, holds that
 * log's lines; when the backlog ends it lets through only those after the last line already delivered. A log
 * whose last delivered lines are not in the backlog (truncated, replaced) is delivered whole. Nothing here
 * imports vscode.
 */

/** Lines remembered per log (enough to recognise where the re-sent backlog ends). */
const KEEP_LINES = 32;
/** Logs remembered (a node can name many; the least recently fed goes). */
const KEEP_FILES = 256;
/** Lines held per log while a backlog is pending (a tail sends at most its initial lines, then live ones). */
const HOLD_LINES = 4096;

/**
 * The lines of `backlog` after the end of `history` (the last lines delivered earlier): the latest position in
 * `backlog` where the end of `history` lines up. No overlap: the whole backlog.
 */
export function afterReplayed(history: readonly string[], backlog: readonly string[]): string[] {
  const n = history.length;
  if (n === 0) return backlog.slice();
  const last = history[n - 1];
  for (let j = backlog.length - 1; j >= 0; j--) {
    if (backlog[j] !== last) continue;
    let ok = true;
    for (let m = 1; m <= j && m < n; m++) {
      if (backlog[j - m] !== history[n - 1 - m]) {
        ok = false;
        break;
      }
    }
    if (ok) return backlog.slice(j + 1);
  }
  return backlog.slice();
}

export class ReplayFilter {
  private readonly recent = new Map<string, string[]>();
  /** logs whose restarted tail is still sending its backlog: the lines held */
  private readonly held = new Map<string, string[]>();

  constructor(private readonly deliver: (file: string, line: string) => void) {}

  /** A new tail starts for these logs: hold the lines of those already followed until `backlogDone()`. */
  tailStarting(files: readonly string[]): void {
    this.flush();
    for (const f of files) if (this.recent.has(f)) this.held.set(f, []);
  }

  /** One line from the tail. */
  line(file: string, line: string): void {
    const h = this.held.get(file);
    if (h) {
      h.push(line);
      if (h.length >= HOLD_LINES) this.flushFile(file);
      return;
    }
    this.pass(file, line);
  }

  /** The new tail's backlog is over (or it failed): deliver what was held, less the lines delivered before. */
  backlogDone(): void {
    this.flush();
  }

  private flush(): void {
    for (const f of [...this.held.keys()]) this.flushFile(f);
  }

  private flushFile(file: string): void {
    const h = this.held.get(file) ?? [];
    this.held.delete(file);
    for (const l of afterReplayed(this.recent.get(file) ?? [], h)) this.pass(file, l);
  }

  private pass(file: string, line: string): void {
    let r = this.recent.get(file);
    if (!r) {
      r = [];
      if (this.recent.size >= KEEP_FILES) this.recent.delete(this.recent.keys().next().value!);
    } else this.recent.delete(file); // re-inserted below: most recently fed last
    this.recent.set(file, r);
    r.push(line);
    if (r.length > KEEP_LINES) r.shift();
    this.deliver(file, line);
  }
}
