/**
 * The node guard from VS Code (issue 47, laptop side), against the demo node: Start Guard… and Stop Guard are on the
 * node's menu; started (to a folder on the node, answers given), the node gets a "Guard running" row with its last
 * verified sync and policy; stopped, the row says "Guard stopped". Its own file and its own demo node.
 */
import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import { waitFor } from '../../e2e/harness';
import { DEMO } from '../demoNode';

const EXTENSION_ID = 'gpu-sessions.gpu-sessions';

describe('Start Guard / Stop Guard in the extension host (demo node)', function () {
  this.timeout(180_000);
  let api: GpuSessionsApi;
  let copyDir = '';

  /** The Guard row under the demo node, rendered (after a refresh of the node, so that its guard is read). */
  async function guardRow(): Promise<vscode.TreeItem | undefined> {
    const roots = (await api.tree.getChildren()) ?? [];
    const node = roots.find((el) => el.type === 'node' && el.node.name === DEMO);
    if (!node) return undefined;
    for (const el of ((await api.tree.getChildren(node)) ?? []) as TreeNode[])
      if (el.type === 'info' && el.live === 'guard') return api.tree.getTreeItem(el);
    return undefined;
  }

  before(async function () {
    const ext = vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID)!;
    api = await ext.activate();
    assert.equal(await vscode.commands.executeCommand<string>('gpuSessions.startDemoNode'), DEMO);
    await waitFor('demo probe', () => api.fleet.status(DEMO).state === 'ok' && api.fleet.status(DEMO).probe, 60_000);
  });

  after(async function () {
    this.timeout(60_000);
    await vscode.commands.executeCommand('gpuSessions.stopGuard', DEMO, { assumeYes: true }).then(undefined, () => undefined);
    await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
    if (copyDir) rmSync(copyDir, { recursive: true, force: true });
  });

  it('is contributed to the node context menu', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON;
    for (const id of ['gpuSessions.startGuard', 'gpuSessions.stopGuard']) {
      assert.ok(
        pkg.contributes.commands.some((c: { command: string }) => c.command === id),
        id,
      );
      assert.ok(
        pkg.contributes.menus['view/item/context'].some(
          (m: { command: string; when: string }) => m.command === id && /viewItem =~ \/\^node\//.test(m.when),
        ),
        id,
      );
    }
  });

  it('started: a Guard running row with its policy; stopped: Guard stopped', async () => {
    // a folder outside the demo home (the demo node is this machine): the guard's mirror of the home under it
    // would otherwise sit in the folders a later salvage lists (and go past its depth bound)
    copyDir = mkdtempSync(path.join(os.tmpdir(), 'gs-guard-copy-'));
    const r = await vscode.commands.executeCommand<{ pid?: number }>('gpuSessions.startGuard', DEMO, {
      to: copyDir,
      whenDone: 'notify',
      assumeYes: true,
    });
    assert.ok(r && typeof r.pid === 'number', `started: ${JSON.stringify(r)}`);
    const row = await waitFor(
      'the Guard running row',
      async () => {
        const it = await guardRow();
        return it && it.label === 'Guard running' ? it : undefined;
      },
      // the guard's state is read with the node's probe (every 30 s): one probe, with room for a loaded machine
      90_000,
    );
    assert.match(String(row.description), /when done: notify/);
    const s = await vscode.commands.executeCommand<{ wasRunning?: boolean }>('gpuSessions.stopGuard', DEMO, { assumeYes: true });
    assert.equal(s?.wasRunning, true, JSON.stringify(s));
    await waitFor(
      'the Guard stopped row',
      async () => {
        const it = await guardRow();
        return it && it.label === 'Guard stopped' ? it : undefined;
      },
      90_000,
    );
  });
});
