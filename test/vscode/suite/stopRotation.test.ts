/**
 * Inside the real extension host, on the demo node (issue 43, items 2 and 3):
 *  - item 2: Stop Server answered "Take It Out of Rotation First", then Cancel: the server still runs, so its worker
 *    is added back to every gateway it was taken out of (before the fix it stayed out, silently); when it is a
 *    gateway's last healthy worker, the question warns that the gateway answers 503 (the extension's log keeps it);
 *  - item 3: "stopped by you" belongs to the process that was stopped: a server restarted (new pid, ready) does not
 *    read "stopped by you", and when that new process dies it is a crash that alerts, not "stopped by you".
 * The gateways are the demo's simulated SGLang Model Gateway (sglang_router.launch_router), started over its servers.
 */
import * as assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import { freePort, waitFor } from '../../e2e/harness';
import { DEMO, demoHome, gatewayWorkerUrls, processRunning, simFault, treeChildren, withDemoNode } from '../demoNode';

/** The worker URLs the gateway on `port` lists now, sorted. */
const listed = async (port: number) => (await gatewayWorkerUrls(port)).sort();

describe('Stop Server cancelled after taking it out of rotation; "stopped by you" tied to the pid (issue 43, items 2 and 3)', function () {
  this.timeout(240_000);
  let api: GpuSessionsApi;
  let startedDemo = false;
  const gateways: ChildProcess[] = [];
  const nodeHome = () => demoHome(api);
  const fault = (...args: string[]) => simFault(api, ...args);
  const servers = () => [...api.fleet.status(DEMO).probe!.servers].sort((a, b) => a.port - b.port);
  const children = (el?: TreeNode) => treeChildren(api, el);
  /** The demo node's rows (labels and descriptions rendered), its info rows and its Servers group's rows. */
  async function rows(): Promise<{ info: string[]; servers: Map<number, string> }> {
    const node = (await children()).find((el) => el.type === 'node' && el.node.name === DEMO);
    const kids = node ? await children(node) : [];
    const info = await Promise.all(
      kids.filter((el) => el.type === 'info').map(async (el) => String((await api.tree.getTreeItem(el)).label)),
    );
    const group = kids.find((el) => el.type === 'group' && el.group === 'servers');
    const out = new Map<number, string>();
    for (const el of group ? await children(group) : [])
      if (el.type === 'server') out.set(el.server.port, String((await api.tree.getTreeItem(el)).description));
    return { info, servers: out };
  }

  /** A simulated Model Gateway over `ports` of the demo, started from the node's home; resolves once the probe maps it. */
  async function gatewayOver(ports: number[]): Promise<number> {
    const home = nodeHome();
    const port = await freePort();
    const argv = ['--host', '127.0.0.1', '--port', String(port), '--prometheus-port', String(await freePort())];
    argv.push('--health-check-interval-secs', '60', '--worker-urls', ...ports.map((p) => `http://127.0.0.1:${p}`));
    const script = '. "$HOME/venv/bin/activate" && exec python3 -m sglang_router.launch_router "$@"';
    gateways.push(spawn('/bin/sh', ['-c', script, 'sh', ...argv], { cwd: home, env: { ...process.env, HOME: home }, stdio: 'ignore' }));
    await waitFor(
      `the probe maps the gateway :${port} to the demo's servers`,
      async () => {
        const g = (await api.fleet.refresh(DEMO)).probe?.gateways?.find((x) => x.port === port);
        return g && g.workers.length === ports.length && g.workers.every((w) => w.node === DEMO) ? g : undefined;
      },
      60_000,
      1000,
    );
    return port;
  }

  before(async function () {
    this.timeout(120_000);
    ({ api, started: startedDemo } = await withDemoNode());
    assert.ok(servers().length >= 3, `the demo runs three servers or more: ${servers().length}`);
  });

  after(async function () {
    this.timeout(60_000);
    for (const g of gateways) if (g.exitCode === null) g.kill('SIGKILL');
    if (api?.demo()) {
      try {
        fault('clear');
      } catch {
        // the demo may be gone already
      }
    }
    if (startedDemo) await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  it('item 2: out of rotation, then Cancel: back in every gateway, still running; a last healthy worker is warned about (503)', async () => {
    const [victim, other] = servers();
    const url = `http://127.0.0.1:${victim.port}`;
    const shared = await gatewayOver([victim.port, other.port]);
    const only = await gatewayOver([victim.port]);
    const before = { shared: await listed(shared), only: await listed(only) };
    assert.deepEqual(before.only, [url]);

    const ok = await vscode.commands.executeCommand<boolean>(
      'gpuSessions.stopServer',
      { type: 'server', node: DEMO, server: victim },
      { rotation: 'take', answer: 'cancel' },
    );
    assert.equal(ok, false, 'cancelled: nothing stopped');
    assert.ok(processRunning(victim.pid), `server :${victim.port} (pid ${victim.pid}) still runs`);
    assert.deepEqual(await listed(shared), before.shared, `the gateway :${shared} lists the worker again`);
    assert.deepEqual(await listed(only), before.only, `the gateway :${only} lists the worker again`);
    const log = api.logText();
    // it was taken out first (else Cancel proves nothing), then put back
    const out = log.lastIndexOf(`${DEMO} :${victim.port}: out of rotation (${url})`);
    assert.ok(out >= 0, `taken out of rotation first (log: ${log.slice(-1500)})`);
    assert.ok(
      log.indexOf(`${DEMO} :${victim.port}: back in rotation: `, out) > out,
      `back in rotation after Cancel (log: ${log.slice(-1500)})`,
    );

    // the question's warning: the gateway with no other worker answers 503 while it is out; the shared one is not named
    const warn = `${DEMO} :${victim.port}: Gateway :${only} on ${DEMO}: this is its last healthy worker; it answers 503 until another is added.`;
    assert.ok(log.includes(warn), `the 503 warning for :${only} (log: ${log.slice(-1500)})`);
    assert.ok(
      !log.includes(`Gateway :${shared} on ${DEMO}: this is its last healthy worker`),
      'no warning for a gateway that keeps a worker',
    );
    // the extension sees it listed again too (its probe of both gateways)
    await api.fleet.refresh(DEMO);
    const gw = api.fleet.status(DEMO).probe?.gateways ?? [];
    for (const p of [shared, only])
      assert.ok(
        gw.find((g) => g.port === p)?.workers.some((w) => w.url === url),
        `the probe of :${p}`,
      );
  });

  it('item 3: restarted, the new process is not "stopped by you"; its death is a crash that alerts', async () => {
    const srv = servers()[servers().length - 1];
    const ok = await vscode.commands.executeCommand<boolean>(
      'gpuSessions.restartServer',
      { type: 'server', node: DEMO, server: srv },
      { answer: 'stop' },
    );
    assert.equal(ok, true, `restarted and ready (log: ${api.logText().slice(-1500)})`);
    const fresh = await waitFor(
      `:${srv.port} served by a new process`,
      async () => (await api.fleet.refresh(DEMO)).probe?.servers.find((s) => s.port === srv.port && s.pid !== srv.pid),
      60_000,
      1000,
    );
    assert.ok(!processRunning(srv.pid), 'the old process is gone');
    // ready again: its row is a running server's, and nothing under the node says "stopped by you" for its port
    const mark = `:${srv.port} stopped by you`;
    const alive = await waitFor(
      `:${srv.port} listed as running`,
      async () => {
        const r = await rows();
        const d = r.servers.get(srv.port);
        return d !== undefined && !/crashed|stopp/.test(d) ? r : undefined;
      },
      60_000,
      1000,
    );
    assert.ok(!alive.info.some((l) => l.startsWith(mark)), alive.info.join(' | '));
    assert.ok(!(api.live.live(DEMO)?.stoppedByYou ?? []).some((st) => st.port === srv.port), 'not stopped by you once restarted');

    // the new process dies: a crash, alerted, and its rows say crashed, not "stopped by you"
    const shown = api.alerts.shown.length;
    fault(String(srv.port), 'crash');
    const alert = await waitFor(
      `the crash alert of :${srv.port} (pid ${fresh.pid})`,
      () => api.alerts.shown.slice(shown).find((a) => a.transition.port === srv.port && a.transition.to === 'crashed'),
      60_000,
    );
    console.log(`      alert: ${alert.text.split('\n')[0]}`);
    const dead = await waitFor(
      `:${srv.port} listed as crashed`,
      async () => {
        await api.fleet.refresh(DEMO);
        const r = await rows();
        return /^crashed/.test(r.servers.get(srv.port) ?? '') ? r : undefined;
      },
      45_000,
      1000,
    );
    console.log(`      :${srv.port} — ${dead.servers.get(srv.port)}`);
    assert.ok(!dead.info.some((l) => l.startsWith(mark)), `no "stopped by you" row: ${dead.info.join(' | ')}`);
    assert.ok(
      (api.live.live(DEMO)?.problems ?? []).some((p) => p.port === srv.port && p.to === 'crashed'),
      'a crashed problem',
    );
  });
});
