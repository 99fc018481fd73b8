/**
 * A command: its id (as contributed in package.json) and what it does, given the services. Each
 * command lives in its own file under commands/ and is listed once in commands/index.ts.
 */
import * as vscode from 'vscode';
import type { Services } from '../services';
import { asUserAction } from '../userAction';

export interface Command {
  readonly id: string;
  run(s: Services, ...args: any[]): unknown;
}

export function registerCommands(s: Services, commands: readonly Command[]): vscode.Disposable[] {
  return commands.map((c) => vscode.commands.registerCommand(c.id, (...args: unknown[]) => asUserAction(c.id, () => c.run(s, ...args))));
}
