/**
 * Inside the real extension host, on the demo node (issue 43, item 1): the record a salvage keeps for a later move
 * holds exactly the servers the tree shows for the node — never another process on the machine that looks like an
 * SGLang server — and Move Job plans from that record (its run and target given as answers instead of the pickers).
 */
import * as assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as os from 'node:os';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import type { LaunchProfile } from '../../../src/core/launch/profile';
import type { RestoreResult } from '../../../src/core/flows/restore';
import { profileGroups } from '../../../src/core/flows/restore';
import { DEMO, withDemoNode } from '../demoNode';

const OTHER_PORT = 39_998;

/** The ports a captured group's servers listen on (per-gpu: one a GPU from basePort; single: basePort). */
function portsOf(g: LaunchProfile, gpuCount: number): number[] {
  if (g.layout === 'single') return [g.basePort];
  const n = Array.isArray(g.gpus) ? g.gpus.length : gpuCount;
  return Array.from({ length: n }, (_, k) => g.basePort + k);
}

describe('Move Job: the salvage record holds exactly the tree’s servers (issue 43, item 1)', function () {
  this.timeout(300_000);
  let api: GpuSessionsApi;
  let startedDemo = false;
  const children = async (el?: TreeNode) => ((await api.tree.getChildren(el)) ?? []) as TreeNode[];

  before(async function () {
    ({ api, started: startedDemo } = await withDemoNode());
  });

  after(async function () {
    this.timeout(60_000);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors').then(undefined, () => undefined);
    if (startedDemo) await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  it('another SGLang-looking process on the machine is neither in the tree nor in the record; Move Job plans from the record', async () => {
    // another "SGLang server" on the same machine: outside the demo's folder, a port the demo does not use
    const other = spawn(
      'python3',
      [
        '-c',
        'import time; time.sleep(240)',
        '-m',
        'sglang.launch_server',
        '--model-path',
        '/nonexistent/other-model',
        '--port',
        String(OTHER_PORT),
      ],
      { cwd: os.tmpdir(), stdio: 'ignore' },
    );
    try {
      await api.fleet.refresh(DEMO);
      const node = (await children()).find((el) => el.type === 'node' && el.node.name === DEMO)!;
      const servers = (await children(node)).find((el) => el.type === 'group' && el.group === 'servers');
      const treePorts = (await children(servers)).flatMap((el) => (el.type === 'server' ? [el.server.port] : [])).sort((a, b) => a - b);
      assert.ok(treePorts.length >= 1, 'the tree lists the demo servers');
      assert.ok(!treePorts.includes(OTHER_PORT), 'the other process is not a server row');

      type Manifest = { dest: string; verdict: string; restore?: { profile?: unknown } };
      const m = await vscode.commands.executeCommand<Manifest>('gpuSessions.salvageNode', DEMO, { assumeYes: true });
      assert.ok(m, 'salvageNode returns the manifest');
      const groups = profileGroups(m.restore?.profile);
      const gpuCount = api.fleet.status(DEMO).probe?.gpus.length ?? 0;
      const recorded = groups.flatMap((g) => portsOf(g, gpuCount)).sort((a, b) => a - b);
      console.log(`      tree: ${treePorts.join(' ')}; record: ${groups.length} group(s), ports ${recorded.join(' ')}`);
      assert.deepEqual(recorded, treePorts, 'the record holds exactly the servers the tree shows');
      const models = groups.map((g) => g.modelPath);
      assert.ok(!models.includes('/nonexistent/other-model'), `the other process is not recorded: ${models.join(', ')}`);

      // Move Job from that record onto the demo itself, planned only: its servers still hold the GPUs, so the plan
      // may move the files only, but it never asks for more GPUs than the recorded servers use.
      const plan = await vscode.commands.executeCommand<RestoreResult | undefined>('gpuSessions.moveJob', undefined, {
        run: m.dest,
        target: DEMO,
        groups: groups.map((_, i) => i),
        planOnly: true,
      });
      assert.ok(plan, 'Move Job returns its plan');
      assert.ok(plan.mapped.length > 0, 'the plan maps the run’s folders onto the target');
      const asked = Number(/needs (\d+) GPU/.exec(JSON.stringify(plan))?.[1] ?? 0);
      assert.ok(asked <= treePorts.length, `the plan asks for ${asked} GPU(s) for ${treePorts.length} server(s)`);
      console.log(`      plan: ${plan.mapped.length} folder(s) mapped, ${plan.files.toUpload ?? 0} file(s) to send`);
      // the review is an untitled document: closed without a save prompt for the suites that follow
      if (vscode.window.activeTextEditor?.document.isUntitled)
        await vscode.commands.executeCommand('workbench.action.revertAndCloseActiveEditor');
    } finally {
      other.kill('SIGKILL');
    }
  });
});
