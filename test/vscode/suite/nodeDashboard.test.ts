/**
 * Inside the real extension host, on the demo node: the Node Dashboard's model as the extension posts it to the
 * webview (issue 30, item 10) — the node-total tok/s chart first and drawn, one small chart per server, GPU
 * legends that name the GPU, a crash marked "HH:MM :PORT crashed", a summary sentence for every chart — and an
 * unreachable node's empty state with its reason.
 */
import * as assert from 'node:assert/strict';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { DashboardModel } from '../../../src/extension/dashboardModel';
import { EXTENSION_ID, freePort, waitFor } from '../../e2e/harness';
import { DEMO, demoHome, simFault } from '../demoNode';

describe('the Node Dashboard of the demo node: the model the webview draws', function () {
  this.timeout(180_000);
  let api: GpuSessionsApi;
  let startedDemo = false;
  let panel: vscode.WebviewPanel | undefined;
  const nodeHome = () => demoHome(api);
  const fault = (...args: string[]) => simFault(api, ...args);
  let crashed: number | undefined;

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
    panel?.dispose();
    if (crashed !== undefined) {
      try {
        fault(String(crashed), 'clear');
      } catch {
        // the demo is stopped below anyway
      }
    }
    await vscode.commands.executeCommand('workbench.action.closeAllEditors').then(undefined, () => undefined);
    if (startedDemo) await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  const model = () => api.dashboards.posted.get(DEMO);

  it('opens; the node-total tok/s chart comes first, drawn from samples, with a summary sentence', async () => {
    panel = await vscode.commands.executeCommand<vscode.WebviewPanel>('gpuSessions.openDashboard', DEMO);
    assert.ok(panel, 'a webview panel');
    assert.match(panel.webview.html, /id="empty-reason"/);
    assert.match(panel.webview.html, /<button id="retry"/);
    const m = await waitFor(
      'a model with two samples and a non-zero node total',
      () => {
        const x = model();
        return x && x.times.length >= 2 && x.charts[0]?.series[0]?.values.some((v) => (v ?? 0) > 0) ? x : undefined;
      },
      60_000,
    );
    assert.equal(m.type, 'model');
    assert.equal(m.empty, null);
    const total = m.charts[0];
    assert.equal(total.id, 'total');
    assert.equal(total.series.length, 1, 'one line: the node total');
    assert.equal(total.series[0].values.length, m.times.length);
    assert.match(total.summary, /^Node throughput: [\d.]+( k)? tok\/s now, min [\d.]+( k)?, max [\d.]+( k)?( over the last .+)?$/);
    for (const c of m.charts) assert.ok(c.summary && !/undefined|NaN/.test(c.summary), `${c.id}: "${c.summary}"`);
    console.log(`      ${total.summary}`);
  });

  it('one small chart per demo server, GPU legends that name the GPU', async () => {
    const ports = api.fleet.status(DEMO).probe!.servers.map((s) => s.port);
    const m = await waitFor(
      'a chart for every server',
      () => {
        const x = model();
        return x && ports.every((p) => x.charts.some((c) => c.id === `server-${p}`)) ? x : undefined;
      },
      30_000,
    );
    const servers = m.charts.filter((c) => c.group === 'server');
    assert.ok(servers.every((c) => c.small && c.series.length === 1));
    const firstServer = m.charts.findIndex((c) => c.group === 'server');
    assert.ok(
      m.charts.slice(0, firstServer).every((c) => c.group === 'node'),
      'the node charts come before the servers',
    );
    const gpus = m.charts.filter((c) => c.group === 'gpu');
    assert.ok(gpus.length >= 1, 'GPU charts');
    assert.equal(gpus[0].series[0].name, `GPU ${gpus[0].id.slice(3)} · util %`);
    assert.equal(api.dashboards.drawn.get(DEMO)!.samples, m.times.length);
  });

  it('a crash is a labelled marker: "HH:MM :PORT crashed"', async () => {
    const home = nodeHome();
    const server = api.fleet.status(DEMO).probe!.servers.find((s) => s.logFile?.startsWith(home + '/'))!;
    crashed = server.port;
    fault(String(server.port), 'crash');
    const re = new RegExp(`^\\d\\d:\\d\\d :${server.port} crashed`);
    const m = await waitFor(
      `a crash marker of :${server.port}`,
      () => {
        const x = model();
        return x && x.markers.some((k) => re.test(k.label)) ? x : undefined;
      },
      60_000,
    );
    const mark = m.markers.find((k) => re.test(k.label))!;
    assert.equal(mark.bad, true);
    assert.ok(mark.t >= m.times[0] - 1);
    console.log(`      marker: ${mark.label}`);
  });

  it('an unreachable node: the empty state with the reason (no blank charts)', async () => {
    const name = 'unreachable-dash';
    const conf = vscode.workspace.getConfiguration('gpuSessions');
    const before = conf.get('nodes');
    await conf.update('nodes', [{ name, host: '127.0.0.1', port: await freePort(), user: 'nobody' }], vscode.ConfigurationTarget.Global);
    let p: vscode.WebviewPanel | undefined;
    try {
      await waitFor('the node listed', () => api.fleet.node(name), 15_000);
      await api.fleet.refresh(name).catch(() => undefined);
      p = await vscode.commands.executeCommand<vscode.WebviewPanel>('gpuSessions.openDashboard', name);
      const m: DashboardModel = await waitFor(
        'the empty state',
        () => {
          const x = api.dashboards.posted.get(name);
          return x?.empty ? x : undefined;
        },
        30_000,
      );
      assert.equal(m.times.length, 0);
      assert.match(m.empty!.reason, /^unreachable-dash .*(is not reachable|is unreachable): ./);
      assert.equal(m.empty!.reason.split('unreachable-dash').length, 2, 'the node named once');
      console.log(`      empty: ${m.empty!.reason.slice(0, 160)}`);
    } finally {
      p?.dispose();
      await conf.update('nodes', before, vscode.ConfigurationTarget.Global).then(undefined, () => undefined);
    }
  });
});
