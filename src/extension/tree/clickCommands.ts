/**
 * Commands of tree rows without arguments (2 of 24 clicks on a live server row failed with "Actual command
 * not found, wanted to execute gpuSessions.tailLog"). VS Code keeps a row command's arguments in a cache entry that
 * dies when the row is re-rendered; a click that crosses a re-render (a loaded machine makes the window seconds
 * wide) finds it gone. A command with no arguments has no cache entry: each (node, file) gets its own command id,
 * registered once, that runs gpuSessions.tailLog as the user's action. All of them are disposed with the tree.
 */
import * as vscode from 'vscode';
import { asUserAction } from '../userAction';

/** At most this many distinct row commands are kept (servers and logs of every node); the oldest go first. */
const MAX = 512;

export class ClickCommands implements vscode.Disposable {
  private readonly ids = new Map<string, { id: string; reg: vscode.Disposable }>();
  private next = 0;

  /** The command id that tails `file` of `node` (the same id for the same pair). */
  tailLog(node: string, file: string): string {
    const key = `${node}\n${file}`;
    const have = this.ids.get(key);
    if (have) return have.id;
    const id = `gpuSessions.row.tailLog.${++this.next}`;
    const reg = vscode.commands.registerCommand(id, () =>
      asUserAction('gpuSessions.tailLog', () => vscode.commands.executeCommand('gpuSessions.tailLog', node, file)),
    );
    this.ids.set(key, { id, reg });
    if (this.ids.size > MAX) {
      const [oldKey, old] = this.ids.entries().next().value!;
      old.reg.dispose();
      this.ids.delete(oldKey);
    }
    return id;
  }

  dispose(): void {
    for (const x of this.ids.values()) x.reg.dispose();
    this.ids.clear();
  }
}
