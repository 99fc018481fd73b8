/** gpuSessions.forgetPassphrases: delete the key passphrases kept in SecretStorage. */
import * as vscode from 'vscode';
import type { Command } from './command';

export const forgetPassphrases: Command = {
  id: 'gpuSessions.forgetPassphrases',
  async run(s) {
    await s.connections.forgetPassphrases(s.fleet.nodes().flatMap((n) => n.identityFiles));
    void vscode.window.showInformationMessage('GPU Sessions: stored key passphrases forgotten.');
  },
};
