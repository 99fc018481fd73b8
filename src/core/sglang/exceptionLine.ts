/**
 * The line that says what went wrong in a Python traceback: "torch.OutOfMemoryError: CUDA out of memory…",
 * not "Traceback (most recent call last):" (crash alerts quoted the header). Reads the lines after the
 * last traceback header; an exception line is the first one that is not a frame ("  File …", its code, carets).
 */
const HEADER = /Traceback \(most recent call last\):/;
const FRAME = /^\s+(File "|\S)|^\s*\^+\s*$|^\s*$/;
const EXC = /^(?:\[[^\]]*\]\s*)?([A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Warning)|[a-z_]+\.[\w.]+)(:\s.*|\s*$)/;

/** The exception line of the last traceback in `lines`, or null when there is none (or it has not been written yet). */
export function exceptionLine(lines: readonly string[]): string | null {
  let start = -1;
  for (let i = lines.length - 1; i >= 0; i--)
    if (HEADER.test(lines[i])) {
      start = i;
      break;
    }
  if (start < 0) return null;
  for (let i = start + 1; i < lines.length && i < start + 400; i++) {
    const l = lines[i];
    if (FRAME.test(l)) continue;
    if (/^During handling of the above exception|^The above exception was the direct cause/.test(l)) continue;
    if (EXC.test(l)) return l.trim();
    // a non-frame line that is no exception: a chained traceback's header is handled above; a log line: stop
    if (HEADER.test(l)) continue;
    return null;
  }
  return null;
}

/** Whether a guard message is only a traceback's header (worth replacing by the exception line). */
export function isTracebackHeader(message: string): boolean {
  return HEADER.test(message) && !/Error|Exception/.test(message.replace(HEADER, ''));
}

/**
 * A message as the tree row, tooltip and status bar show it: never the literal traceback header. A
 * header-only message becomes the exception line when it is known (read from the log), else what precedes the
 * header on its line ("Scheduler hit an exception"), else a phrase that points at the log.
 */
export function shownFailureMessage(message: string, exception?: string | null): string {
  if (!HEADER.test(message)) return message;
  if (exception) return exception;
  if (!isTracebackHeader(message))
    return message
      .replace(HEADER, '')
      .replace(/\s{2,}/g, ' ')
      .trim();
  const before = message
    .replace(HEADER, '')
    .replace(/^\s*\[[^\]]*\]\s*/, '')
    .replace(/[\s:]+$/, '')
    .trim();
  return before ? `${before} (the exception line is in the log)` : 'a Python exception (the exception line is in the log)';
}
