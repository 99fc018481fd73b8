/**
 * Inside the real extension host, on the demo node (issue 26): the data guard judges the generation output
 * the demo's job wrote (completions/batch_*.jsonl) and shows a Data row under the node; when a batch turns
 * into the seed's disaster (the same `OK.` after an empty think block) the row turns to an error and a
 * warning notification offers Open Sample and Open File.
 */
import * as assert from 'node:assert/strict';
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import { EXTENSION_ID, waitFor } from '../../e2e/harness';
import { label } from '../treeText';
import { DEMO } from '../demoNode';

describe('the data guard on the demo node: the Data row and the degenerate-file warning', function () {
  this.timeout(180_000);
  let api: GpuSessionsApi;
  let startedDemo = false;
  let batch = '';
  let original: Buffer | undefined;
  const conf = () => vscode.workspace.getConfiguration('gpuSessions');
  const children = async (el?: TreeNode) => ((await api.tree.getChildren(el)) ?? []) as TreeNode[];
  const dataRow = async () => {
    const node = (await children()).find((el) => el.type === 'node' && el.node.name === DEMO);
    if (!node) return undefined;
    const el = (await children(node)).find((x) => x.type === 'info' && x.live === 'data');
    return el ? await api.tree.getTreeItem(el) : undefined;
  };

  before(async function () {
    api = await vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID)!.activate();
    await conf().update('data.intervalSeconds', 5, vscode.ConfigurationTarget.Global);
    if (!api.demo()) {
      await vscode.commands.executeCommand<string>('gpuSessions.startDemoNode');
      startedDemo = true;
    }
    await waitFor('the demo node probed', () => api.fleet.status(DEMO).state === 'ok' && api.fleet.status(DEMO).probe, 60_000);
    batch = path.join(path.dirname(api.demo()!.knownHostsFile), 'home', 'completions', 'batch_000004.jsonl');
    original = readFileSync(batch);
  });

  after(async function () {
    this.timeout(60_000);
    if (original) writeFileSync(batch, original);
    await conf()
      .update('data.intervalSeconds', undefined, vscode.ConfigurationTarget.Global)
      .then(undefined, () => undefined);
    if (startedDemo) await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  it('the Data row counts the rows of the batches and reads fine while the answers are good', async () => {
    const item = await waitFor(
      'the Data row',
      async () => {
        const it = await dataRow();
        return it && /^[\d,]+ rows · /.test(String(it.description ?? '')) ? it : undefined;
      },
      60_000,
      1000,
    );
    assert.equal((item.iconPath as vscode.ThemeIcon).id, 'database', `${label(item)} · ${String(item.description)}`);
    assert.equal(label(item), 'Data');
    console.log(`      Data row: ${label(item)} · ${String(item.description ?? '')}`);
  });

  it('a batch turning into the same `OK.` answers: the row turns to an error and a warning offers Open Sample', async () => {
    const rows: string[] = [];
    for (let i = 0; i < 200; i++)
      rows.push(
        JSON.stringify({
          index: 100 + i,
          prompt: `prompt ${i}`,
          reasoning: '',
          completion: '<think>\n\n</think>\n\nOK.',
          finish_reason: 'stop',
        }),
      );
    appendFileSync(batch, rows.join('\n') + '\n');
    const item = await waitFor(
      'the Data row degenerate',
      async () => {
        const it = await dataRow();
        return it && (it.iconPath as vscode.ThemeIcon).id === 'error' ? it : undefined;
      },
      60_000,
      1000,
    );
    assert.equal(label(item), 'Data degenerate');
    assert.match(String(item.description), /the same `OK\.`/);
    const alert = await waitFor(
      'the degenerate-file warning',
      () => api.alerts.shown.find((a) => a.transition.subject === 'data' && a.transition.to === 'data-degenerate'),
      30_000,
    );
    assert.equal(alert.transition.path, batch);
    assert.ok(alert.actions.includes('Open Sample') && alert.actions.includes('Open File'), JSON.stringify(alert.actions));
    assert.match(alert.text, /OK\./);
    console.log(`      Data row: ${label(item)} · ${String(item.description ?? '')}; warning: ${alert.text.slice(0, 160)}`);
  });
});
