/** The gpuSessions.* settings and the one path rule they share. */
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';

export function cfg<T>(key: string, def: T): T {
  return vscode.workspace.getConfiguration('gpuSessions').get<T>(key, def);
}

export function expandHome(p: string): string {
  return p.startsWith('~/') ? path.join(os.homedir(), p.slice(2)) : p;
}
