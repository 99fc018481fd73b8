/** The "GPU Sessions" output channel as the core's Logger; every line goes through the boundary redaction. */
import * as vscode from 'vscode';
import { type Logger, redactingLogger } from '../core/util/logger';

/** The last lines handed to the channel (after redaction), bounded: what the channel shows, readable by tests. */
export class RecentLines {
  private readonly lines: string[] = [];
  constructor(private readonly max = 5000) {}

  add(level: string, m: string): void {
    this.lines.push(`[${level}] ${m}`);
    if (this.lines.length > this.max) this.lines.splice(0, this.lines.length - this.max);
  }

  text(): string {
    return this.lines.join('\n');
  }
}

export function channelLogger(channel: vscode.LogOutputChannel, recent?: RecentLines): Logger {
  const to = (level: 'trace' | 'info' | 'warn' | 'error') => (m: string) => {
    channel[level](m);
    recent?.add(level, m);
  };
  return redactingLogger({ trace: to('trace'), info: to('info'), warn: to('warn'), error: to('error') });
}
