/** gpuSessions.startDemoNode / stopDemoNode: the embedded demo node (7× simulated B200) on 127.0.0.1. */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { NodeSpec } from '../../core/ssh/config';
import type { Command } from './command';

export const startDemoNode: Command = {
  id: 'gpuSessions.startDemoNode',
  async run(s) {
    const running = s.demo.current;
    if (running) {
      void vscode.window.showInformationMessage(`GPU Sessions: the demo node "${running.node.name}" is already running.`);
      return running.node.name;
    }
    return vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'GPU Sessions: starting the demo node (7× simulated B200)…' },
      async () => {
        const { startDemoNode: start } = await import('../../sim/demoServer');
        const dir = path.join(s.context.globalStorageUri.fsPath, 'demo');
        const d = await start({ dir, log: (m) => s.log.info(`demo: ${m}`) });
        const node: NodeSpec = {
          name: d.alias,
          host: '127.0.0.1',
          port: d.port,
          user: 'demo',
          identityFiles: [d.identityFile],
          source: 'demo',
          // The demo node shares this machine's process table: salvage folders found from evidence would include
          // VS Code's own folders (and offer to stop VS Code as a writer). Its work is its home, so that is its one root.
          roots: [d.home],
        };
        s.demo.set({ node, knownHostsFile: d.knownHostsFile, stop: d.stop });
        s.log.info(`Demo node on 127.0.0.1:${d.port}, host key ${d.hostKeyFingerprint}, config ${d.sshConfigFile}`);
        s.nodes.reload();
        await new Promise((r) => setTimeout(r, 2000));
        await s.fleet.refresh(node.name);
        return node.name;
      },
    );
  },
};

export const stopDemoNode: Command = {
  id: 'gpuSessions.stopDemoNode',
  async run(s) {
    const d = s.demo.current;
    if (!d) return;
    // Every loop that uses the demo node stops first: its Keep Node Salvaged watch, its live tails;
    // then it leaves the node list (the live guard and monitor of a removed node are disposed), and only then
    // are its connection and known_hosts file dropped: nothing is left to reconnect and meet an unknown key.
    const name = d.node.name;
    const t0 = Date.now();
    s.log.info(`Stopping the demo node ${name}…`);
    await s.keepSalvaged.stop(name);
    s.logViews.stopNode(name);
    s.demo.set(undefined);
    s.nodes.reload();
    s.connections.forget(d.node, d.knownHostsFile);
    await d.stop();
    s.log.info(`Demo node ${name} stopped in ${Date.now() - t0} ms.`);
  },
};
