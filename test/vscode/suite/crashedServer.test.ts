/**
 * Inside the real extension host, on the demo node (issue 43, items 7 and 8):
 *  - a serving server's row is not re-rendered for its figures alone within FIGURES_MS (each render closes its open
 *    tooltip), and its tooltip's State line leaves the figures (queue included) to the Health line;
 *  - a crashed server stays listed under Servers (state crashed, the exception line, never the traceback's
 *    header), with Restart Server first on its menu and on its alert; Restart Server starts the command line it
 *    ran with again.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import { itemSignature, shapeOf } from '../../../src/extension/tree/liveRender';
import { EXTENSION_ID, waitFor } from '../../e2e/harness';
import { tooltipText } from '../treeText';
import { DEMO, demoHome, simFault, treeChildren, withDemoNode } from '../demoNode';

const HEADER = /Traceback \(most recent call last\)/;

describe('crashed servers stay listed with Restart Server; server tooltips stay while figures move (issue 43)', function () {
  this.timeout(240_000);
  let api: GpuSessionsApi;
  let startedDemo = false;
  const nodeHome = () => demoHome(api);
  const fault = (...args: string[]) => simFault(api, ...args);
  const children = (el?: TreeNode) => treeChildren(api, el);
  const serversGroup = async () => {
    const node = (await children()).find((el) => el.type === 'node' && el.node.name === DEMO);
    return node ? (await children(node)).find((el) => el.type === 'group' && el.group === 'servers') : undefined;
  };
  const serverRows = async () => (await children(await serversGroup())).filter((el) => el.type === 'server');

  before(async function () {
    ({ api, started: startedDemo } = await withDemoNode());
    await vscode.commands.executeCommand('gpuSessions.nodes.focus');
  });

  after(async function () {
    this.timeout(60_000);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors').then(undefined, () => undefined);
    if (startedDemo) await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  it('item 8: serving rows are re-rendered only when what they say changes; State and Health do not both give the queue', async () => {
    const home = nodeHome();
    const port = api.fleet.status(DEMO).probe!.servers.find((s) => s.logFile?.startsWith(home + '/'))!.port;
    await waitFor(
      'a serving demo server',
      () => api.live.live(DEMO)?.servers.find((s) => s.port === port && s.state === 'serving'),
      60_000,
    );
    const rows = await serverRows();
    const shape = new Map<TreeNode, string>();
    for (const el of rows) shape.set(el, shapeOf(itemSignature(await api.tree.getTreeItem(el))));
    const fired: Array<TreeNode | TreeNode[] | undefined> = [];
    const sub = api.tree.onDidChangeTreeData((e) => fired.push(e));
    const figuresBefore = new Map<TreeNode, string>();
    for (const el of rows) figuresBefore.set(el, String((await api.tree.getTreeItem(el)).description));
    await new Promise((r) => setTimeout(r, 12_000));
    sub.dispose();
    const figuresMoved = [];
    for (const el of rows) if (String((await api.tree.getTreeItem(el)).description) !== figuresBefore.get(el)) figuresMoved.push(el);
    console.log(`      12 s of serving: ${figuresMoved.length}/${rows.length} rows' figures moved, ${fired.length} change event(s)`);
    assert.ok(figuresMoved.length > 0, 'the demo load moves the figures (else this step proves nothing)');
    assert.ok(!fired.includes(undefined), 'never the whole tree');
    for (const e of fired)
      for (const el of Array.isArray(e) ? e : [e])
        if (el && el.type === 'server') {
          const now = shapeOf(itemSignature(await api.tree.getTreeItem(el)));
          assert.notEqual(now, shape.get(el), `:${el.server.port} re-rendered though only its figures moved`);
        }
    const tip = tooltipText((await api.tree.getTreeItem(rows.find((el) => el.type === 'server' && el.server.port === port)!)).tooltip);
    const stateLine = tip.split('\n').find((l) => l.startsWith('State: '));
    const healthLine = tip.split('\n').find((l) => l.startsWith('Health: '));
    assert.equal(stateLine, 'State: **serving**', tip);
    assert.match(healthLine ?? '', /queue/, 'the Health line carries the figures');
  });

  it('item 7: a crashed server stays listed (crashed, the exception line), Restart Server first; restarting brings its argv back', async () => {
    const home = nodeHome();
    const srv = api.fleet.status(DEMO).probe!.servers.find((s) => s.logFile?.startsWith(home + '/'))!;
    const before = api.alerts.shown.length;
    fault(String(srv.port), 'crash');
    const alert = await waitFor(
      `the crash alert of :${srv.port}`,
      () => api.alerts.shown.slice(before).find((a) => a.transition.port === srv.port && a.transition.to === 'crashed'),
      45_000,
    );
    assert.equal(alert.actions[0], 'Restart Server', alert.actions.join(', '));
    assert.doesNotMatch(alert.text, HEADER);
    // gone from the probe, still listed under Servers as crashed, with the exception line
    await api.fleet.refresh(DEMO);
    const row = await waitFor(
      `:${srv.port} listed as crashed after its process is gone`,
      async () => {
        if (api.fleet.status(DEMO).probe?.servers.some((s) => s.port === srv.port)) {
          await api.fleet.refresh(DEMO);
          return undefined;
        }
        return (await serverRows()).find((el) => el.type === 'server' && el.server.port === srv.port && el.crashed);
      },
      45_000,
    );
    assert.ok(row.type === 'server');
    const item = await api.tree.getTreeItem(row);
    console.log(`      ${String(item.label)} — ${String(item.description)}`);
    assert.match(String(item.description), /^crashed — .*Error/);
    assert.equal(item.contextValue, 'server.crashed.log');
    assert.equal(item.id, `${DEMO}:server:${srv.port}:${srv.pid}`, 'the same row id as while it ran');
    for (const t of [String(item.description), tooltipText(item.tooltip)]) assert.doesNotMatch(t, HEADER);
    // the problem row under the node has a menu too; the status bar's problems never quote the header
    const node = (await children()).find((el) => el.type === 'node' && el.node.name === DEMO)!;
    const problem = (await children(node)).find((el) => el.type === 'info' && el.crashedPort === srv.port);
    assert.ok(problem, 'a problem row for the crash');
    assert.equal((await api.tree.getTreeItem(problem)).contextValue, 'problem.crashed');
    for (const p of api.live.live(DEMO)?.problems ?? []) assert.doesNotMatch(p.message, HEADER);
    // the menu: Restart Server is the first entry for a crashed server's rows
    const menus = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON.contributes.menus['view/item/context'] as Array<{
      command: string;
      when: string;
      group?: string;
    }>;
    for (const ctx of ['server.crashed.log', 'problem.crashed']) {
      const mine = menus
        .filter((m) => !/inline/.test(m.group ?? '') && new RegExp(/viewItem =~ \/(.*)\//.exec(m.when)?.[1] ?? '^$').test(ctx))
        .sort((a, b) => String(a.group).localeCompare(String(b.group)));
      assert.equal(mine[0]?.command, 'gpuSessions.restartServer', `${ctx}: ${mine.map((m) => m.command).join(', ')}`);
      assert.ok(!mine.some((m) => m.command === 'gpuSessions.stopServer'), `${ctx}: no Stop Server on a dead server`);
    }
    // Restart Server: the command line it ran with, started again and ready (the simulated fault cleared first, as a
    // person fixes the cause: the demo's fault file would crash the new process too)
    fault(String(srv.port), 'clear');
    const ok = await vscode.commands.executeCommand<boolean>('gpuSessions.restartServer', row, { answer: 'stop' });
    assert.equal(ok, true, 'restarted and ready');
    const back = await waitFor(
      `:${srv.port} running again`,
      async () => (await api.fleet.refresh(DEMO)).probe?.servers.find((s) => s.port === srv.port),
      60_000,
    );
    assert.notEqual(back.pid, srv.pid);
    assert.deepEqual(back.args.slice(back.args.indexOf('--model-path')), srv.args.slice(srv.args.indexOf('--model-path')));
    await waitFor(
      'no crashed row any more',
      async () => !(await serverRows()).some((el) => el.type === 'server' && el.server.port === srv.port && el.crashed),
      30_000,
    );
  });
});
