/** gpuSessions.showProbe: the node's latest probe as a JSON document. */
import * as vscode from 'vscode';
import { redactOutputValue } from '../../core/util/redact';
import type { Command } from './command';

export const showProbe: Command = {
  id: 'gpuSessions.showProbe',
  async run(s, el?: unknown) {
    const name = s.resolver.nameOf(el, { nodeElementOnly: true });
    const p = name ? s.fleet.status(name).probe : undefined;
    if (!p) return;
    const doc = await vscode.workspace.openTextDocument({ language: 'json', content: JSON.stringify(redactOutputValue(p), null, 2) });
    await vscode.window.showTextDocument(doc, { preview: true });
  },
};
