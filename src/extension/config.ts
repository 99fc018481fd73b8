/** The gpuSessions.* settings and the one path rule they share. */
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { isMachineSetting, machineValue } from '../core/security/settingsPolicy';

/**
 * The one accessor of gpuSessions.* settings. A setting that names a file, command, host or endpoint
 * (MACHINE_SETTINGS) is read from the user's settings only: a workspace value is refused, trusted or not.
 */
export function cfg<T>(key: string, def: T): T {
  const conf = vscode.workspace.getConfiguration('gpuSessions');
  if (isMachineSetting(key)) return machineValue<T>(conf.inspect<T>(key), def);
  return conf.get<T>(key, def);
}

/**
 * A path setting (machine-scoped): `~/` expanded; a relative path is refused (it would resolve against the
 * extension host's working folder, which a repository can be), so the caller falls back to its default.
 */
export function pathSetting(key: string, warn?: (msg: string) => void): string {
  const raw = cfg<string>(key, '');
  if (!raw) return '';
  const p = expandHome(raw);
  if (path.isAbsolute(p)) return p;
  warn?.(`gpuSessions.${key} must be an absolute path or start with ~/ (got ${JSON.stringify(raw)}); using the default`);
  return '';
}

function expandHome(p: string): string {
  return p.startsWith('~/') ? path.join(os.homedir(), p.slice(2)) : p;
}
