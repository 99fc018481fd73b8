/**
 * Inside the real extension host, on the demo node: a simulated SGLang Model Gateway (`python3 -m
 * sglang_router.launch_router`, its flags hidden behind the `sglang::router` title) routing to the demo's seven
 * servers is shown under the node as "Gateway :PORT · cache_aware · 7/7 healthy", each worker naming the server
 * its URL reaches (issue 28); a worker the gateway sees fail turns into an error row in place.
 */
import * as assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import { EXTENSION_ID, freePort, waitFor } from '../../e2e/harness';
import { label } from '../treeText';
import { DEMO, demoHome, treeChildren } from '../demoNode';

describe('the demo node behind a Model Gateway: the Gateway row and its workers', function () {
  this.timeout(180_000);
  let api: GpuSessionsApi;
  let gateway: ChildProcess | undefined;
  let startedDemo = false;
  let port = 0;
  const children = (el?: TreeNode) => treeChildren(api, el);
  const demoNode = async () => (await children()).find((el) => el.type === 'node' && el.node.name === DEMO);
  const nodeHome = () => demoHome(api);

  before(async function () {
    api = await vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID)!.activate();
    if (!api.demo()) {
      await vscode.commands.executeCommand<string>('gpuSessions.startDemoNode');
      startedDemo = true;
    }
    await waitFor('the demo node probed', () => api.fleet.status(DEMO).state === 'ok' && api.fleet.status(DEMO).probe, 60_000);
  });

  after(async function () {
    this.timeout(60_000);
    if (gateway && gateway.exitCode === null) {
      const gone = new Promise((r) => gateway!.once('exit', r));
      gateway.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 5000))]);
      if (gateway.exitCode === null) gateway.kill('SIGKILL');
    }
    if (startedDemo) await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  it('shows "Gateway :PORT · cache_aware · 7/7 healthy" with each worker → its server on the node', async () => {
    const home = nodeHome();
    const servers = api.fleet
      .status(DEMO)
      .probe!.servers.map((s) => s.port)
      .sort((a, b) => a - b);
    assert.equal(servers.length, 7, `the demo's servers: ${servers.join(', ')}`);
    port = await freePort();
    const mport = await freePort();
    const fd = openSync(path.join(home, 'logs', 'gateway.log'), 'a');
    // As a user would start it on the node: from its home, with the venv (the simulated gateway).
    gateway = spawn(
      '/bin/sh',
      [
        '-c',
        '. "$HOME/venv/bin/activate" && exec python3 -m sglang_router.launch_router "$@"',
        'sh',
        '--host',
        '127.0.0.1',
        '--port',
        String(port),
        '--prometheus-port',
        String(mport),
        '--health-check-interval-secs',
        '0.5',
        '--worker-urls',
        ...servers.map((p) => `http://127.0.0.1:${p}`),
      ],
      { cwd: home, env: { ...process.env, HOME: home }, stdio: ['ignore', fd, fd] },
    );
    closeSync(fd);
    const row = await waitFor(
      'the Gateway row under the node',
      async () => {
        await api.fleet.refresh(DEMO);
        const node = await demoNode();
        if (!node) return undefined;
        for (const el of await children(node)) {
          if (el.type !== 'gateway') continue;
          const item = await api.tree.getTreeItem(el);
          if (new RegExp(`^Gateway :${port} · cache_aware · 7/7 healthy$`).test(label(item))) return { el, item };
        }
        return undefined;
      },
      60_000,
      1000,
    );
    assert.equal(row.item.contextValue, 'gateway');
    const workers = await children(row.el);
    assert.equal(workers.length, 7);
    for (const w of workers) {
      assert.equal(w.type, 'gatewayWorker');
      const it = await api.tree.getTreeItem(w);
      const m = /^worker http:\/\/127\.0\.0\.1:(\d+)$/.exec(label(it));
      assert.ok(m, label(it));
      assert.match(String(it.description), new RegExp(`^healthy · .*→ ${DEMO} :${m[1]}$|^ready · .*→ ${DEMO} :${m[1]}$`));
    }
    console.log(`      ${label(row.item)}; first worker: ${String((await api.tree.getTreeItem(workers[0])).description)}`);
  });

  it('a worker whose /health fails turns unhealthy in place: same element, error icon', async () => {
    const node = (await demoNode())!;
    const gw = (await children(node)).find((el) => el.type === 'gateway')!;
    const victim = (await children(gw))[2];
    assert.equal(victim.type, 'gatewayWorker');
    const vport = Number(/:(\d+)$/.exec(victim.type === 'gatewayWorker' ? victim.url : '')![1]);
    const fault = spawn('/bin/sh', ['-c', `exec "$HOME/bin/sim-fault" ${vport} health-wedged`], {
      cwd: nodeHome(),
      env: { ...process.env, HOME: nodeHome(), PATH: `${nodeHome()}/bin:${process.env.PATH}` },
      stdio: 'ignore',
    });
    await new Promise((r) => fault.once('exit', r));
    try {
      const it = await waitFor(
        'the worker unhealthy',
        async () => {
          await api.fleet.refresh(DEMO);
          const item = await api.tree.getTreeItem(victim);
          return (item.iconPath as vscode.ThemeIcon).id === 'error' ? item : undefined;
        },
        60_000,
        1000,
      );
      assert.match(String(it.description), /^(unhealthy|not_ready|failed)/);
      const row = await api.tree.getTreeItem(gw);
      assert.match(label(row), new RegExp(`^Gateway :${port} · cache_aware · 6/7 healthy`));
    } finally {
      spawn('/bin/sh', ['-c', `exec "$HOME/bin/sim-fault" ${vport} clear`], {
        cwd: nodeHome(),
        env: { ...process.env, HOME: nodeHome(), PATH: `${nodeHome()}/bin:${process.env.PATH}` },
        stdio: 'ignore',
      });
    }
  });
});
