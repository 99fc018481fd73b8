/**
 * Inside the real extension host: the Nodes tree grouped by the ssh config file each Host came from (an
 * Included SkyPilot-style file per cluster) and by gpuSessions.nodes[].group with gpuSessions.tree.grouping
 * `configFile`, and one flat list with `flat`; in both, a code host of the ssh config (github.com) last under
 * "Other hosts", collapsed. The nodes point at a closed loopback port; only the tree's shape is checked.
 */
import * as assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import { EXTENSION_ID, waitFor } from '../../e2e/harness';
import { label } from '../treeText';

describe('Nodes tree grouping (gpuSessions.tree.grouping)', function () {
  this.timeout(60_000);
  let api: GpuSessionsApi;
  let dir: string;
  const conf = () => vscode.workspace.getConfiguration('gpuSessions');
  const ours = new Set(['main-box', 'sky-a', 'sky-b', 'sky-b-worker', 'lambda-1', 'lambda-2', 'plain-entry']);

  /** The top level as [label, children labels] (nodes: [name]), our nodes only. */
  async function shape(): Promise<Array<[string, string[]]>> {
    const out: Array<[string, string[]]> = [];
    for (const el of (await api.tree.getChildren()) ?? []) {
      const item = await api.tree.getTreeItem(el);
      if (el.type === 'node') {
        if (ours.has(el.node.name)) out.push([label(item), []]);
      } else if (el.type === 'nodeGroup') {
        const kids = ((await api.tree.getChildren(el)) ?? []) as TreeNode[];
        const names = await Promise.all(kids.map(async (k) => label(await api.tree.getTreeItem(k))));
        out.push([label(item), names]);
      }
    }
    return out;
  }

  before(async function () {
    api = await vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID)!.activate();
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-tree-groups-'));
    const sky = path.join(dir, 'sky', 'generated', 'ssh');
    mkdirSync(sky, { recursive: true });
    // Port 9 on loopback (discard): nothing listens there; the nodes are only listed.
    const host = (name: string) => [`Host ${name}`, '  HostName 127.0.0.1', '  Port 9', '  User nobody', ''].join('\n');
    writeFileSync(path.join(sky, 'cluster-a'), host('sky-a'));
    writeFileSync(path.join(sky, 'cluster-b'), host('sky-b') + host('sky-b-worker'));
    writeFileSync(path.join(dir, 'config'), `Include ${path.join(sky, '*')}\n\n${host('main-box')}Host github.com\n  User git\n`);
    await conf().update('sshConfigFile', path.join(dir, 'config'), vscode.ConfigurationTarget.Global);
    await conf().update(
      'nodes',
      [
        { name: 'lambda-1', host: '127.0.0.1', port: 9, user: 'nobody', group: 'Lambda' },
        { name: 'lambda-2', host: '127.0.0.1', port: 9, user: 'nobody', group: 'Lambda' },
        { name: 'plain-entry', host: '127.0.0.1', port: 9, user: 'nobody' },
      ],
      vscode.ConfigurationTarget.Global,
    );
    await waitFor('the nodes of the test config', () => api.fleet.node('sky-b-worker') && api.fleet.node('lambda-2'), 20_000);
  });

  after(async function () {
    for (const k of ['tree.grouping', 'nodes', 'sshConfigFile'])
      await conf()
        .update(k, undefined, vscode.ConfigurationTarget.Global)
        .then(undefined, () => undefined);
    rmSync(dir, { recursive: true, force: true });
  });

  it('configFile (the default): a group per Included file and per gpuSessions.nodes group; the rest on top', async () => {
    assert.equal(conf().inspect('tree.grouping')?.defaultValue, 'configFile');
    await conf().update('tree.grouping', 'configFile', vscode.ConfigurationTarget.Global);
    const sky = path.join(dir, 'sky', 'generated', 'ssh');
    const s = await waitFor('groups', async () => ((await shape()).some(([, kids]) => kids.length) ? shape() : undefined), 20_000);
    assert.deepEqual(s, [
      ['main-box', []],
      ['plain-entry', []],
      [path.join(sky, 'cluster-a'), ['sky-a']],
      [path.join(sky, 'cluster-b'), ['sky-b', 'sky-b-worker']],
      ['Lambda', ['lambda-1', 'lambda-2']],
      ['Other hosts', ['github.com']],
    ]);
    const groups = ((await api.tree.getChildren()) ?? []).filter((el) => el.type === 'nodeGroup');
    const b = await api.tree.getTreeItem(groups[1]);
    assert.equal(b.description, '2 nodes');
    assert.equal(b.collapsibleState, vscode.TreeItemCollapsibleState.Expanded);
    assert.equal(b.contextValue, 'folder.sshConfig');
    assert.match(String(b.tooltip), /cluster-b/);
    // A node inside a group is the same element the fleet refreshes (a refresh re-renders it in place).
    const inGroup = ((await api.tree.getChildren(groups[1])) ?? [])[0];
    assert.equal(inGroup.type, 'node');
    const item = await api.tree.getTreeItem(inGroup);
    assert.equal(item.id, 'node:sky-b');
    assert.match(String(item.contextValue), /^node/);
    const other = await api.tree.getTreeItem(groups[groups.length - 1]);
    assert.equal(other.collapsibleState, vscode.TreeItemCollapsibleState.Collapsed, '"Other hosts" starts collapsed');
    assert.equal(other.contextValue, 'folder.other');
    assert.equal(other.description, '1 host');
  });

  it('flat: one list, no groups but "Other hosts"', async () => {
    await conf().update('tree.grouping', 'flat', vscode.ConfigurationTarget.Global);
    const flat = async () => {
      const x = await shape();
      return x.filter(([l]) => l !== 'Other hosts').every(([, kids]) => !kids.length) ? x : undefined;
    };
    const s = await waitFor('a flat list', flat, 20_000);
    assert.deepEqual(s, [
      ...['sky-a', 'sky-b', 'sky-b-worker', 'main-box', 'lambda-1', 'lambda-2', 'plain-entry'].map((n): [string, string[]] => [n, []]),
      ['Other hosts', ['github.com']],
    ]);
    const groups = ((await api.tree.getChildren()) ?? []).filter((el) => el.type === 'nodeGroup');
    assert.deepEqual(
      groups.map((g) => g.type === 'nodeGroup' && g.key),
      ['other'],
      'flat: no group but "Other hosts"',
    );
  });

  it('only a code host known: the welcome view (no lone "Other hosts"); github.com gets no GPU action (issue 43)', async () => {
    await conf().update('tree.grouping', undefined, vscode.ConfigurationTarget.Global);
    await conf().update('nodes', [], vscode.ConfigurationTarget.Global);
    writeFileSync(path.join(dir, 'config-code-only'), 'Host github.com\n  User git\n');
    await conf().update('sshConfigFile', path.join(dir, 'config-code-only'), vscode.ConfigurationTarget.Global);
    await waitFor('only github.com from the ssh config', () => !api.fleet.node('main-box') && !api.fleet.node('lambda-1'), 20_000);
    const gh = api.fleet.node('github.com');
    assert.ok(gh, 'github.com is still a listed host');
    const item = await api.tree.getTreeItem({ type: 'node', node: gh } as TreeNode);
    assert.equal(item.contextValue, 'codeHost', 'no node.* context value: no Salvage, Release or Move Job');
    // Other suites may have started the demo node (a GPU node): then the tree rightly lists it.
    if (api.fleet.nodes().every((n) => n.name === 'github.com')) assert.deepEqual(await api.tree.getChildren(), []);
  });
});
