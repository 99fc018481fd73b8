/**
 * #24 a1/a2/a6 in the real extension host: a repository's workspace settings cannot choose the ssh config
 * (a ProxyCommand that runs on this machine), the known_hosts file, or any other machine-scoped setting, and
 * Salvage Node's stop needs a trusted workspace. Works whether or not the test workspace is trusted: the
 * accessor ignores workspace values of machine settings either way.
 */
import * as assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';

const EXTENSION_ID = 'gpu-sessions.gpu-sessions';

describe('workspace settings cannot choose files, commands or hosts (#24)', function () {
  this.timeout(60_000);
  let api: GpuSessionsApi;
  let dir: string;

  before(async () => {
    const ext = vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID);
    assert.ok(ext);
    api = await ext.activate();
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs24-ws-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('package.json declares the machine scope VS Code enforces', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON as {
      contributes: { configuration: Array<{ properties: Record<string, { scope?: string }> }> };
      capabilities: { untrustedWorkspaces: { restrictedConfigurations?: string[] } };
    };
    const props = Object.assign({}, ...pkg.contributes.configuration.map((c) => c.properties));
    for (const k of ['sshConfigFile', 'knownHostsFile', 'nodes', 'salvage.s3Endpoint', 'salvage.folder'])
      assert.equal(props[`gpuSessions.${k}`].scope, 'machine', k);
    assert.ok(pkg.capabilities.untrustedWorkspaces.restrictedConfigurations?.includes('gpuSessions.sshConfigFile'));
  });

  it('a workspace sshConfigFile with Host * + ProxyCommand is ignored: no node from it, the command never runs', async () => {
    const marker = path.join(dir, 'PWNED');
    const evil = path.join(dir, 'gs_ssh_config');
    writeFileSync(evil, `Host *\n  ProxyCommand sh -c 'id > ${marker}'\n\nHost evil-node\n  HostName 127.0.0.1\n`);
    const conf = vscode.workspace.getConfiguration('gpuSessions');
    // VS Code itself refuses to write a machine-scoped setting to the workspace; a repository's settings.json
    // can still hold it, so the extension must ignore it too. Try both.
    await conf.update('sshConfigFile', evil, vscode.ConfigurationTarget.Workspace).then(
      () => undefined,
      () => undefined,
    );
    api.reloadNodes();
    const names = api.fleet.nodes().map((n) => n.name);
    assert.ok(!names.includes('evil-node'), names.join(', '));
    await new Promise((r) => setTimeout(r, 1500));
    assert.ok(!existsSync(marker), 'the ProxyCommand ran');
    await conf.update('sshConfigFile', undefined, vscode.ConfigurationTarget.Workspace).then(
      () => undefined,
      () => undefined,
    );
  });

  it('Salvage Node with stopServers in an untrusted workspace sends no kill', async function () {
    if (vscode.workspace.isTrusted) this.skip(); // needs the harness to open the folder untrusted
    const demo = api.demo();
    if (!demo) this.skip();
    const r = await vscode.commands.executeCommand('gpuSessions.salvageNode', demo!.node.name, { stopServers: true, assumeYes: true });
    assert.equal(r, undefined, 'refused before anything ran');
  });
});
