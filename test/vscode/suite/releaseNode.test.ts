/**
 * Release Node… inside the real extension host, on a fresh demo node behind a simulated SGLang Model Gateway (as in
 * treeGateway.test.ts): gpuSessions.releaseNode with the node as argument and the review confirmed (assumeYes, as
 * the salvage suites do) drives the core release flow — the gateway no longer lists any of the node's workers and
 * still runs, the node's servers are stopped, and a salvage folder with a safe verdict exists (issue 28, item 3).
 * Before it, Stop Server on one of those servers, answered "Take It Out of Rotation First": the gateway drops that
 * worker before the server stops, and keeps the others; Restart Server, the same way, adds the worker back once ready.
 * Its own demo node: the servers it stops are not the ones the later suites expect.
 */
import * as assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import { EXTENSION_ID, freePort, waitFor } from '../../e2e/harness';
import { waitQuiet } from '../../helpers/wait';
import { DEMO, demoHome, gatewayWorkerUrls, processRunning } from '../demoNode';

type ReleaseJson = {
  node: string;
  gateways: Array<{ node: string; port: number | null; removed: string[] }>;
  drained: Array<{ port: number; runningAtStart: number | null; seconds: number }>;
  salvage: { verdict: 'safe' | 'unsafe' | null; dest: string } | null;
};

describe('Release Node… on the demo node behind a Model Gateway', function () {
  this.timeout(240_000);
  let api: GpuSessionsApi;
  let gateway: ChildProcess | undefined;
  const nodeHome = () => demoHome(api);

  before(async function () {
    this.timeout(120_000);
    api = await vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID)!.activate();
    assert.ok(vscode.workspace.workspaceFolders?.[0], 'a workspace folder is open (the salvage goes there)');
    // a fresh demo node: this suite stops its servers
    if (api.demo()) await vscode.commands.executeCommand('gpuSessions.stopDemoNode');
    assert.equal(await vscode.commands.executeCommand<string>('gpuSessions.startDemoNode'), DEMO);
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
    await vscode.commands.executeCommand('workbench.action.closeAllEditors').then(undefined, () => undefined);
    await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  it('is contributed to the node context menu and the palette', () => {
    const pkg = vscode.extensions.getExtension(EXTENSION_ID)!.packageJSON;
    assert.ok(pkg.contributes.commands.some((c: { command: string; title: string }) => c.command === 'gpuSessions.releaseNode'));
    assert.ok(
      pkg.contributes.menus['view/item/context'].some(
        (m: { command: string; when: string }) => m.command === 'gpuSessions.releaseNode' && /viewItem =~ \/\^node\//.test(m.when),
      ),
    );
    assert.ok(!(pkg.contributes.menus.commandPalette ?? []).some((m: { command: string }) => m.command === 'gpuSessions.releaseNode'));
  });

  let port = 0;
  let gpid = 0;
  /** Starts the simulated gateway over the demo's servers once; resolves when the probe maps every worker to the demo. */
  async function ensureGateway(): Promise<void> {
    const home = nodeHome();
    if (!gateway) {
      const ports = api.fleet.status(DEMO).probe!.servers.map((s) => s.port);
      assert.ok(ports.length >= 2, 'the demo runs servers');
      port = await freePort();
      const mport = await freePort();
      // The job has finished (the simulated node's knob): the servers' load drains, their logs go quiet.
      writeFileSync(path.join(home, '.sim', 'pause_load'), 'the release test: job finished\n');
      // As a user would start it on the node (from its home, with the venv); no log file under the salvaged folders.
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
          // seldom: its health checks write lines into the servers' logs, which the salvage wants quiet
          '--health-check-interval-secs',
          '60',
          '--worker-urls',
          ...ports.map((p) => `http://127.0.0.1:${p}`),
        ],
        { cwd: home, env: { ...process.env, HOME: home }, stdio: 'ignore' },
      );
      gpid = gateway.pid!;
    }
    await waitFor(
      'the probe sees the gateway with a worker for each server of the demo',
      async () => {
        const p = (await api.fleet.refresh(DEMO)).probe;
        const g = p?.gateways?.find((x) => x.port === port);
        return g && g.workers.length === p!.servers.length && g.workers.every((w) => w.node === DEMO) ? g : undefined;
      },
      60_000,
      1000,
    );
  }

  it('Stop Server on a server the gateway routes to, taken out of rotation first: that worker goes, the server stops', async () => {
    await ensureGateway();
    const servers = [...api.fleet.status(DEMO).probe!.servers].sort((a, b) => a.port - b.port);
    const victim = servers[0];
    const url = `http://127.0.0.1:${victim.port}`;
    const ok = await vscode.commands.executeCommand<boolean>(
      'gpuSessions.stopServer',
      { type: 'server', node: DEMO, server: victim },
      { rotation: 'take', answer: 'stop' },
    );
    assert.equal(ok, true, `stopped (log: ${api.logText().slice(-1500)})`);
    const urls = await gatewayWorkerUrls(port);
    assert.ok(!urls.includes(url), `the gateway still lists ${url}`);
    assert.equal(urls.length, servers.length - 1, urls.join(', '));
    assert.ok(!processRunning(victim.pid), `server :${victim.port} stopped`);
    assert.ok(processRunning(gpid), 'the gateway still runs');
    // out of rotation before the stop: the extension's log says so in that order
    const log = api.logText();
    const out = log.indexOf(`${DEMO} :${victim.port}: out of rotation (${url})`);
    const stopped = log.indexOf(`Stop on ${DEMO}:`, out);
    assert.ok(out >= 0 && stopped > out, log.slice(-1500));
  });

  it('Restart Server taken out of rotation first: out before the stop, back in the gateway once ready', async () => {
    await ensureGateway();
    const servers = [...api.fleet.status(DEMO).probe!.servers].sort((a, b) => a.port - b.port);
    const victim = servers[servers.length - 1];
    const url = `http://127.0.0.1:${victim.port}`;
    const before = await gatewayWorkerUrls(port);
    assert.ok(before.includes(url), before.join(', '));
    const ok = await vscode.commands.executeCommand<boolean>(
      'gpuSessions.restartServer',
      { type: 'server', node: DEMO, server: victim },
      { rotation: 'take', answer: 'stop' },
    );
    assert.equal(ok, true, `restarted and back (log: ${api.logText().slice(-1500)})`);
    assert.ok(!processRunning(victim.pid), 'the old process is gone');
    const after = await gatewayWorkerUrls(port);
    assert.deepEqual([...after].sort(), [...before].sort(), 'the gateway lists the same workers again');
    const log = api.logText();
    const out = log.indexOf(`${DEMO} :${victim.port}: out of rotation (${url})`);
    const restarted = log.indexOf(`Restart on ${DEMO}:`, out);
    const back = log.indexOf(`${DEMO} :${victim.port}: back in rotation: ${url}`, restarted);
    assert.ok(out >= 0 && restarted > out && back > restarted, log.slice(-2000));
  });

  it('removes the node’s workers from the gateway, keeps the gateway, stops the servers, salvages: safe', async function () {
    // the salvage of a whole node, with the servers stopped: minutes on a loaded 2-core machine
    this.timeout(480_000);
    await ensureGateway();
    const home = nodeHome();
    const servers = api.fleet.status(DEMO).probe!.servers;
    const ports = servers.map((s) => s.port).sort((a, b) => a - b);
    const logs = servers.map((s) => s.logFile!).filter((f) => f && f.startsWith(home + '/'));
    await waitQuiet(logs);

    const t0 = Date.now();
    const r = await vscode.commands.executeCommand<ReleaseJson | undefined>('gpuSessions.releaseNode', DEMO, {
      assumeYes: true,
      drainTimeoutS: 60,
    });
    console.log(`      release in ${Date.now() - t0} ms: ${JSON.stringify(r)}`);
    assert.ok(r, `releaseNode returned the result (log: ${api.logText().slice(-1500)})`);
    assert.equal(r.node, DEMO);
    const gw = r.gateways.find((g) => g.port === port);
    assert.ok(gw, JSON.stringify(r.gateways));
    assert.deepEqual([...gw.removed].sort(), ports.map((p) => `http://127.0.0.1:${p}`).sort());
    assert.deepEqual(
      r.drained.map((d) => d.port),
      ports,
    );

    // the gateway: still running, lists none of the node's workers
    assert.ok(processRunning(gpid) && gateway!.exitCode === null, 'the gateway process still runs');
    const left = await gatewayWorkerUrls(port);
    assert.deepEqual(
      left.filter((u) => ports.some((p) => u.endsWith(`:${p}`))),
      [],
      `the gateway still lists ${left.join(', ')}`,
    );

    // the servers: stopped
    for (const s of servers) assert.ok(!processRunning(s.pid), `server :${s.port} (pid ${s.pid}) stopped`);
    const after = await api.fleet.refresh(DEMO);
    assert.deepEqual(
      (after.probe?.servers ?? []).map((s) => s.port),
      [],
    );

    // the salvage: a folder with a safe verdict
    assert.ok(r.salvage, 'a salvage ran');
    const manifestFile = path.join(r.salvage.dest, 'salvage-manifest.json');
    const why = existsSync(manifestFile)
      ? (() => {
          const m = JSON.parse(readFileSync(manifestFile, 'utf8')) as {
            reasonDetails?: unknown[];
            items: Array<{ remotePath: string; status: string; reason: string | null }>;
          };
          return JSON.stringify({ reasons: m.reasonDetails, failed: m.items.filter((i) => i.status === 'failed').slice(0, 5) });
        })()
      : 'no manifest';
    assert.equal(r.salvage.verdict, 'safe', why);
    assert.ok(existsSync(manifestFile), manifestFile);
    assert.equal((JSON.parse(readFileSync(manifestFile, 'utf8')) as { verdict: string }).verdict, 'safe');
    assert.ok(existsSync(path.join(r.salvage.dest, 'SALVAGE.md')));
    assert.equal(api.tree.verdicts.get(DEMO)?.verdict, 'safe');

    // its own removals are neutral rows, never a warning (issue 43, item 4)
    const rows = await waitFor(
      'the removals as neutral "removed by you" rows',
      async () => {
        await api.fleet.refresh(DEMO);
        const node = ((await api.tree.getChildren()) ?? []).find((el) => el.type === 'node' && el.node.name === DEMO);
        const kids = node ? ((await api.tree.getChildren(node)) ?? []) : [];
        const items = await Promise.all(kids.filter((el) => el.type === 'info').map((el) => api.tree.getTreeItem(el)));
        const mine = items.filter((it) => / removed by you, \d\d:\d\d$/.test(String(it.label)));
        return mine.length ? { mine, items } : undefined;
      },
      30_000,
      1000,
    );
    for (const it of rows.mine) assert.equal((it.iconPath as vscode.ThemeIcon).id, 'info', String(it.label));
    assert.ok(
      !rows.items.some(
        (it) => /worker .* (removed|draining)/.test(String(it.description)) && (it.iconPath as vscode.ThemeIcon).id === 'warning',
      ),
      'no warning row for a worker it removed',
    );
    const gatewayAlerts = api.alerts.shown.filter((a) => a.at >= t0 && a.transition.subject === 'gateway' && a.transition.worker);
    assert.deepEqual(
      gatewayAlerts.map((a) => a.text),
      [],
      'no alert about its own removals',
    );
    assert.ok(!(api.live.live(DEMO)?.problems ?? []).some((p) => p.key.startsWith('gateway:') && /removed|draining/.test(p.to)));
  });
});
