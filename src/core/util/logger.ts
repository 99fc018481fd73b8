import { visible } from './terminal';

/** Minimal logging interface: the extension backs it with a LogOutputChannel, the CLI with stderr. */
export interface Logger {
  trace(msg: string): void;
  info(msg: string): void;
  warn(msg: string): void;
  error(msg: string): void;
}

export const nullLogger: Logger = { trace() {}, info() {}, warn() {}, error() {} };

export function stderrLogger(verbose: boolean): Logger {
  const w = (lvl: string) => (msg: string) => process.stderr.write(`[${lvl}] ${visible(msg, true)}\n`);
  return {
    trace: verbose ? w('trace') : () => undefined,
    info: verbose ? w('info') : () => undefined,
    warn: w('warn'),
    error: verbose ? w('error') : () => undefined,
  };
}
