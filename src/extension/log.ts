/** The "GPU Sessions" output channel as the core's Logger. */
import * as vscode from 'vscode';
import type { Logger } from '../core/util/logger';

export function channelLogger(channel: vscode.LogOutputChannel): Logger {
  return {
    trace: (m) => channel.trace(m),
    info: (m) => channel.info(m),
    warn: (m) => channel.warn(m),
    error: (m) => channel.error(m),
  };
}
