/** The "GPU Sessions" output channel as the core's Logger; every line goes through the boundary redaction. */
import * as vscode from 'vscode';
import { type Logger, redactingLogger } from '../core/util/logger';

export function channelLogger(channel: vscode.LogOutputChannel): Logger {
  return redactingLogger({
    trace: (m) => channel.trace(m),
    info: (m) => channel.info(m),
    warn: (m) => channel.warn(m),
    error: (m) => channel.error(m),
  });
}
