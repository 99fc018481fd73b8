/** Minimal logging interface: the extension backs it with a LogOutputChannel, the CLI with stderr. */
import { redactOutput } from './redact';
import { visible } from './terminal';

export interface Logger {
  trace(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export const nullLogger: Logger = { trace() {}, info() {}, warn() {}, error() {} };

/** A logger whose every message goes through the boundary redaction (secrets never reach a log in clear). */
export function redactingLogger(l: Logger): Logger {
  return {
    trace: (m) => l.trace(redactOutput(m)),
    info: (m) => l.info(redactOutput(m)),
    warn: (m) => l.warn(redactOutput(m)),
    error: (m) => l.error(redactOutput(m)),
  };
}

export function stderrLogger(verbose: boolean): Logger {
  const w = (lvl: string) => (msg: string) => process.stderr.write(`[${lvl}] ${visible(redactOutput(msg), true)}\n`);
  return {
    trace: verbose ? w('trace') : () => undefined,
    info: verbose ? w('info') : () => undefined,
    warn: w('warn'),
    error: verbose ? w('error') : () => undefined,
  };
}
