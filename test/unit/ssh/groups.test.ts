import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { nodeFromSetting } from '../../../src/core/ssh/config';
import { configFileLabel, groupNodes, isCodeHost, treeGrouping } from '../../../src/core/ssh/groups';
import { listNodes } from '../../../src/core/ssh/nodes';

function write(file: string, lines: string[]): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

describe('node groups (tree grouping by ssh config file / gpuSessions.nodes[].group)', () => {
  let home: string;
  let root: string;
  before(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'gs-groups-'));
    root = path.join(home, '.ssh', 'config');
    // What SkyPilot and dstack write and users Include: one file per SkyPilot cluster, one dstack file.
    write(path.join(home, '.sky', 'generated', 'ssh', 'train-a100'), ['Host train-a100', '  HostName 198.51.100.7', '  User gcpuser']);
    write(path.join(home, '.sky', 'generated', 'ssh', 'eval-h100'), [
      'Host eval-h100 eval-h100-worker1',
      '  HostName 198.51.100.8',
      '  Port 10022',
    ]);
    write(path.join(home, '.dstack', 'ssh', 'config'), [
      // relative Includes resolve against ~/.ssh, as in OpenSSH; this one is absolute
      'Include ~/.dstack/ssh/nested.conf',
      'Host fleet-b200-0',
      '  HostName 203.0.113.20',
    ]);
    write(path.join(home, '.dstack', 'ssh', 'nested.conf'), ['Host nested-node', '  HostName 203.0.113.21']);
    write(path.join(home, '.ssh', 'conf.d', 'team.conf'), ['Host team-1 team-2', '  User team']);
    write(path.join(home, '.ssh', 'conf.d', 'notes.txt'), ['Host not-included']);
    write(root, [
      'Include conf.d/*.conf',
      'Include ~/.sky/generated/ssh/*',
      'Include ~/.dstack/ssh/config',
      '',
      'Host my-box',
      '  HostName 192.0.2.1',
      '',
      // listed first in team.conf: it stays in that file's group
      'Host team-1',
      '  Port 2222',
    ]);
  });
  after(() => fs.rmSync(home, { recursive: true, force: true }));

  const listing = () =>
    listNodes({
      sshConfigFile: root,
      homeDir: home,
      settingsNodes: [
        { name: 'lambda-1', host: '10.1.0.1', group: 'Lambda' },
        { name: 'lambda-2', host: '10.1.0.2', group: ' Lambda ' },
        { name: 'plain', host: '10.1.0.3' },
      ],
    });

  it('records the file each Host came from, through relative, ~ and globbed Includes (nested ones too)', () => {
    const l = listing();
    assert.deepEqual(l.diagnostics, []);
    const where = Object.fromEntries(
      l.nodes.filter((n) => n.source === 'ssh-config').map((n) => [n.name, path.relative(home, n.sourceFile!)]),
    );
    assert.deepEqual(where, {
      'team-1': '.ssh/conf.d/team.conf',
      'team-2': '.ssh/conf.d/team.conf',
      'eval-h100': '.sky/generated/ssh/eval-h100',
      'eval-h100-worker1': '.sky/generated/ssh/eval-h100',
      'train-a100': '.sky/generated/ssh/train-a100',
      'fleet-b200-0': '.dstack/ssh/config',
      'nested-node': '.dstack/ssh/nested.conf',
      'my-box': '.ssh/config',
    });
    assert.equal(l.nodes.find((n) => n.name === 'team-1')!.port, 2222, 'settings from both files still apply');
  });

  it('configFile: one group per Included file (labelled relative to ~/.ssh or as ~/…), setting groups, the rest on top', () => {
    const g = groupNodes(listing().nodes, { mode: 'configFile', rootConfigFile: root, homeDir: home });
    assert.deepEqual(
      g.top.map((n) => n.name),
      ['my-box', 'plain'],
    );
    assert.deepEqual(
      g.groups.map((x) => [x.label, x.nodes.map((n) => n.name)]),
      [
        ['conf.d/team.conf', ['team-1', 'team-2']],
        ['~/.sky/generated/ssh/eval-h100', ['eval-h100', 'eval-h100-worker1']],
        ['~/.sky/generated/ssh/train-a100', ['train-a100']],
        ['~/.dstack/ssh/nested.conf', ['nested-node']],
        ['~/.dstack/ssh/config', ['fleet-b200-0']],
        ['Lambda', ['lambda-1', 'lambda-2']],
      ],
    );
    const team = g.groups[0];
    assert.equal(team.file, path.join(home, '.ssh', 'conf.d', 'team.conf'));
    assert.equal(team.key, `file:${team.file}`);
    assert.equal(g.groups[5].key, 'group:Lambda');
    assert.equal(g.groups[5].file, undefined);
  });

  it('flat: every node on top in list order, no groups', () => {
    const nodes = listing().nodes;
    const g = groupNodes(nodes, { mode: 'flat', rootConfigFile: root, homeDir: home });
    assert.deepEqual(g.groups, []);
    assert.deepEqual(
      g.top.map((n) => n.name),
      nodes.map((n) => n.name),
    );
  });

  it('a settings group wins over the file; demo, local and cli nodes stay on top; a group name cannot pose as a file', () => {
    const f = path.join(home, '.ssh', 'conf.d', 'team.conf');
    const g = groupNodes(
      [
        { name: 'demo', host: '127.0.0.1', port: 2, identityFiles: [], source: 'demo' },
        { name: 'local', host: 'localhost', port: 0, identityFiles: [], source: 'local' },
        { name: 'x', host: 'x', port: 22, identityFiles: [], source: 'ssh-config', sourceFile: f, group: 'Mine' },
        { name: 'y', host: 'y', port: 22, identityFiles: [], source: 'settings', group: `file:${f}` },
        { name: 'z', host: 'z', port: 22, identityFiles: [], source: 'ssh-config', sourceFile: f },
      ],
      { mode: 'configFile', rootConfigFile: root, homeDir: home },
    );
    assert.deepEqual(
      g.top.map((n) => n.name),
      ['demo', 'local'],
    );
    assert.deepEqual(
      g.groups.map((x) => [x.key, x.nodes.map((n) => n.name)]),
      [
        ['group:Mine', ['x']],
        [`group:file:${f}`, ['y']],
        [`file:${f}`, ['z']],
      ],
    );
  });

  it('"Other hosts": code hosts of the ssh config and hosts without nvidia-smi go last, in both modes; settings entries never', () => {
    const cfg = path.join(home, '.ssh', 'config-other');
    write(cfg, [
      'Host github.com',
      '  User git',
      'Host gl',
      '  HostName altssh.gitlab.com',
      'Host hf',
      '  HostName hf.co',
      'Host my-github.company.io',
      'Host build-box',
      '  HostName 192.0.2.9',
      'Host gpu-1',
      '  HostName 192.0.2.10',
    ]);
    const l = listNodes({ sshConfigFile: cfg, homeDir: home, settingsNodes: [{ name: 'huggingface.co', host: 'huggingface.co' }] });
    const noSmi = (n: { name: string }) => n.name === 'build-box';
    for (const mode of ['configFile', 'flat'] as const) {
      const g = groupNodes(l.nodes, { mode, rootConfigFile: cfg, homeDir: home, notGpu: noSmi });
      assert.deepEqual(
        g.top.map((n) => n.name),
        ['my-github.company.io', 'gpu-1', 'huggingface.co'],
        `${mode}: a look-alike name and a settings entry stay on top`,
      );
      assert.deepEqual(
        g.groups.map((x) => [x.key, x.label, x.other, x.nodes.map((n) => n.name)]),
        [['other', 'Other hosts', true, ['github.com', 'gl', 'hf', 'build-box']]],
      );
    }
    const none = groupNodes(
      l.nodes.filter((n) => n.name === 'gpu-1'),
      { mode: 'configFile', rootConfigFile: cfg, homeDir: home },
    );
    assert.deepEqual(none.groups, [], 'no empty "Other hosts" group');
    assert.equal(isCodeHost({ name: 'x', host: 'GitHub.com.' }), true, 'case and a trailing dot do not hide it');
    assert.equal(isCodeHost({ name: 'x', host: 'notgithub.com' }), false);
  });

  it('labels: relative to ~/.ssh, ~/… in the home, absolute elsewhere', () => {
    assert.equal(configFileLabel('/h/u/.ssh/conf.d/a.conf', '/h/u'), path.join('conf.d', 'a.conf'));
    assert.equal(configFileLabel('/h/u/.sky/generated/ssh/c1', '/h/u'), path.join('~', '.sky', 'generated', 'ssh', 'c1'));
    assert.equal(configFileLabel('/etc/ssh/ssh_config.d/x.conf', '/h/u'), '/etc/ssh/ssh_config.d/x.conf');
    assert.equal(configFileLabel('/h/user2/.ssh/x', '/h/u'), '/h/user2/.ssh/x');
  });

  it('the setting: flat | configFile, anything else is configFile', () => {
    assert.equal(treeGrouping('flat'), 'flat');
    assert.equal(treeGrouping('configFile'), 'configFile');
    for (const v of [undefined, null, '', 'FLAT', 3, {}]) assert.equal(treeGrouping(v), 'configFile');
  });

  it('gpuSessions.nodes[].group is validated and trimmed', () => {
    assert.equal(nodeFromSetting({ name: 'n', host: 'h', group: '  Lambda ' }).node?.group, 'Lambda');
    assert.equal(nodeFromSetting({ name: 'n', host: 'h', group: '' }).node?.group, undefined);
    for (const bad of [5, ' ', 'a\nb', ['x']]) assert.match(nodeFromSetting({ name: 'n', host: 'h', group: bad }).error ?? '', /^group:/);
  });
});
