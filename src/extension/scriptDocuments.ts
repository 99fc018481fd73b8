/** Read-only virtual documents (scheme gpu-sessions-launch) for a rendered launch script and the node's last.sh. */
import * as vscode from 'vscode';

export const SCRIPT_SCHEME = 'gpu-sessions-launch';

/** Read-only virtual documents for the rendered script and the node's last.sh (for vscode.diff). */
export class ScriptDocuments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();
  private readonly emitter = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.emitter.event;
  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? '';
  }
  put(node: string, file: string, text: string): vscode.Uri {
    const uri = vscode.Uri.from({ scheme: SCRIPT_SCHEME, path: `/${node}/${file}`, query: String(Date.now()) });
    this.texts.set(uri.toString(), text);
    if (this.texts.size > 40) this.texts.delete(this.texts.keys().next().value as string);
    this.emitter.fire(uri);
    return uri;
  }
  dispose(): void {
    this.emitter.dispose();
  }
}
