import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MACHINE_SETTINGS, isMachineSetting, machineValue } from '../../../src/core/security/settingsPolicy';

const root = path.resolve(__dirname, '../../../..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
type Prop = { scope?: string; type?: string | string[]; description?: string; markdownDescription?: string };
const sections: { title: string; properties: Record<string, Prop> }[] = Array.isArray(pkg.contributes.configuration)
  ? pkg.contributes.configuration
  : [pkg.contributes.configuration];
const props: Record<string, Prop> = Object.assign({}, ...sections.map((s) => s.properties));

describe('security: settings a repository must not choose (a1, a2, a3)', () => {
  // Every setting that names a file, a command, a host or an endpoint, or makes us run commands locally.
  const mustBeMachine = [
    'nodes',
    'sshConfigFile',
    'knownHostsFile',
    'showLocalMachine',
    'includeSshConfigHosts',
    'salvage.folder',
    'salvage.addRoots',
    'salvage.s3Url',
    'salvage.s3Endpoint',
    'salvage.s3Mappings',
    // what is protected or alerted (issue 39, a3): security-findings-turn4's V1 list
    'salvage.gitignore',
    'salvage.redact',
    'alerts.crash',
    'alerts.dataDegenerate',
    'data.thresholds',
    'data.intervalSeconds',
    'rentalDeadlines',
    'nodePricePerHour',
  ];

  it('package.json marks each of them "scope": "machine" or "application"', () => {
    for (const k of mustBeMachine) {
      const p = props[`gpuSessions.${k}`];
      assert.ok(p, `gpuSessions.${k} is declared`);
      assert.ok(p.scope === 'machine' || p.scope === 'application', `gpuSessions.${k} scope is ${p.scope}`);
    }
  });

  it('and lists them in capabilities.untrustedWorkspaces.restrictedConfigurations', () => {
    const restricted: string[] = pkg.capabilities.untrustedWorkspaces.restrictedConfigurations ?? [];
    for (const k of mustBeMachine) assert.ok(restricted.includes(`gpuSessions.${k}`), `gpuSessions.${k} restricted`);
  });

  it('the accessor list and package.json agree (no machine-scoped setting read with workspace values)', () => {
    const scoped = Object.keys(props)
      .filter((k) => props[k].scope === 'machine' || props[k].scope === 'application')
      .map((k) => k.replace(/^gpuSessions\./, ''))
      .sort();
    assert.deepEqual([...MACHINE_SETTINGS].sort(), scoped);
    for (const k of mustBeMachine) assert.ok(isMachineSetting(k) && isMachineSetting(`gpuSessions.${k}`));
    assert.ok(!isMachineSetting('tail.maxLines'));
  });

  it('machineValue takes the user value or the default, never a workspace or folder value', () => {
    const evil = '/repo/.vscode/gs_ssh_config';
    assert.equal(machineValue({ defaultValue: '', workspaceValue: evil }, ''), '');
    assert.equal(machineValue({ defaultValue: '', workspaceFolderValue: evil }, ''), '');
    assert.equal(machineValue({ defaultValue: '', globalValue: '~/.ssh/mine', workspaceValue: evil }, ''), '~/.ssh/mine');
    assert.equal(machineValue<string>(undefined, 'd'), 'd');
    assert.equal(machineValue<boolean>({ workspaceValue: true }, false), false);
  });

  it('settings are grouped by topic, Nodes first', () => {
    assert.ok(sections.length >= 4, 'several configuration sections');
    assert.equal(sections[0].title, 'Nodes');
    assert.ok('gpuSessions.nodes' in sections[0].properties && 'gpuSessions.sshConfigFile' in sections[0].properties);
    const titles = sections.map((s) => s.title);
    assert.equal(new Set(titles).size, titles.length);
  });
});
