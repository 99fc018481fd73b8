/**
 * Inside the real extension host, on the demo node: the rental countdown row under the node
 * (gpuSessions.rentalDeadlines), the demo pod's own price (runpodctl) and a per-node setting over it, and
 * planted secrets — a simulated SGLang server started with `--api-key` / `--admin-api-key=` and HF_TOKEN in its
 * environment, whose log then prints them — found in no tree label, description or tooltip (the whole tree walked
 * through the TreeDataProvider), no line of the GPU Sessions output channel, no notification and not in Show Node Details.
 */
import * as assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { appendFileSync, closeSync, openSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import { EXTENSION_ID, freePort, waitFor } from '../../e2e/harness';
import { label, tooltipText } from '../treeText';
import { planted } from '../../helpers/planted';
import { DEMO, demoHome, treeChildren } from '../demoNode';

const API_KEY = planted('sk-', 'tree-planted-0d9f3a7c51e4');
const ADMIN_KEY = 'planted-admin-7e21b9c04d';
const HF = planted('hf_', 'TreePlantedToken0123456789abcdefQ');
const SECRETS = [API_KEY, ADMIN_KEY, HF];

describe('the demo node: rental countdown, and no planted secret anywhere in the tree or the log', function () {
  this.timeout(180_000);
  let api: GpuSessionsApi;
  const conf = () => vscode.workspace.getConfiguration('gpuSessions');
  const children = (el?: TreeNode) => treeChildren(api, el);
  const demoNode = async () => (await children()).find((el) => el.type === 'node' && el.node.name === DEMO);
  const nodeHome = () => demoHome(api);
  let startedDemo = false;

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
    await conf()
      .update('rentalDeadlines', undefined, vscode.ConfigurationTarget.Global)
      .then(undefined, () => undefined);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors').then(undefined, () => undefined);
    if (startedDemo) await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  describe('rental countdown', () => {
    const countdown = async () => {
      const node = await demoNode();
      if (!node) return undefined;
      for (const el of await children(node)) {
        if (el.type !== 'info' || el.live !== 'deadline') continue;
        return { el, item: await api.tree.getTreeItem(el), node: await api.tree.getTreeItem(node) };
      }
      return undefined;
    };

    it('Set Rental Deadline… adds "Rental ends in 1 h 12 min" under the node, no warning before the lead time', async () => {
      const at = new Date(Date.now() + 72 * 60_000 + 30_000).toISOString();
      await vscode.commands.executeCommand('gpuSessions.setRentalDeadline', DEMO, at);
      const r = await waitFor(
        'the countdown row',
        async () => {
          const c = await countdown();
          return c && /^Rental ends in 1 h 1[12] min$/.test(label(c.item)) ? c : undefined;
        },
        30_000,
      );
      assert.equal((r.item.iconPath as vscode.ThemeIcon).id, 'watch');
      assert.match(String(r.node.description), / · ends in 1 h 1[12] min/);
      assert.match(tooltipText(r.item.tooltip), /gpuSessions\.rentalDeadlines/);
      const d = api.tree.deadlineFor(DEMO)!;
      // The job's ETA from the demo's progress.json, when it has a rate: compared with the deadline.
      if (d.deadline.jobEta !== null)
        assert.match(String(r.item.description), /^at the current rate the job ends \d.* (after the rental|before it)$/);
      else assert.equal(r.item.description, undefined);
      console.log(`      ${label(r.item)} — ${r.item.description ?? '(job ETA unknown)'}`);
    });

    it('under the lead time (gpuSessions.deadlineWarningMinutes, 30) the row carries a warning icon', async () => {
      const at = new Date(Date.now() + 20 * 60_000 + 30_000).toISOString();
      await vscode.commands.executeCommand('gpuSessions.setRentalDeadline', DEMO, at);
      const r = await waitFor(
        'the warning countdown',
        async () => {
          const c = await countdown();
          return c && /^Rental ends in 20 min$/.test(label(c.item)) ? c : undefined;
        },
        30_000,
      );
      const icon = r.item.iconPath as vscode.ThemeIcon;
      assert.equal(icon.id, 'warning');
      assert.equal((icon.color as unknown as { id?: string } | undefined)?.id, 'list.warningForeground');
    });

    it('past the end: "Rental ended … ago"; cleared: the row goes', async () => {
      await vscode.commands.executeCommand('gpuSessions.setRentalDeadline', DEMO, new Date(Date.now() - 5 * 60_000).toISOString());
      const r = await waitFor(
        'the ended row',
        async () => {
          const c = await countdown();
          return c && /^Rental ended 5 min ago$/.test(label(c.item)) ? c : undefined;
        },
        30_000,
      );
      assert.equal((r.item.iconPath as vscode.ThemeIcon).id, 'error');
      await vscode.commands.executeCommand('gpuSessions.setRentalDeadline', DEMO, '');
      await waitFor('no countdown row', async () => !(await countdown()), 30_000);
    });
  });

  describe("the demo pod's own price (issue 46 item 5)", () => {
    after(async () => {
      await conf()
        .update('nodePricePerHour', undefined, vscode.ConfigurationTarget.Global)
        .then(undefined, () => undefined);
    });

    it('with no price setting, spend at the pod\'s costPerHr "from runpodctl"; gpuSessions.nodePricePerHour overrides it', async () => {
      const pod = JSON.parse(readFileSync(path.join(nodeHome(), '.sim', 'provider', 'runpod.json'), 'utf8')) as { costPerHr: number };
      const told = await waitFor(
        "spend at the provider's price",
        () => {
          const sp = api.live.live(DEMO)?.spend;
          return sp?.priceSource === 'runpodctl' ? sp : undefined;
        },
        90_000,
      );
      assert.equal(told.perHour, pod.costPerHr);
      assert.ok(api.live.summary(DEMO).includes(`at $${pod.costPerHr}/h from runpodctl`), api.live.summary(DEMO));
      await conf().update('nodePricePerHour', { [DEMO]: 3.49 }, vscode.ConfigurationTarget.Global);
      const own = await waitFor(
        'spend at the setting',
        () => {
          const sp = api.live.live(DEMO)?.spend;
          return sp?.priceSource === 'settings' ? sp : undefined;
        },
        90_000,
      );
      assert.equal(own.perHour, 3.49);
      console.log(`      ${api.live.summary(DEMO).split('\n')[0]}`);
    });
  });

  describe('planted secrets', () => {
    let server: ChildProcess | undefined;
    let port = 0;
    let logFile = '';

    after(() => {
      if (server?.pid) {
        try {
          process.kill(server.pid, 'SIGKILL');
        } catch {
          /* already gone */
        }
      }
    });

    /** Every label, description and tooltip of the tree, walked from the root through the provider. */
    async function walkTree(): Promise<{ texts: string[]; count: number }> {
      const texts: string[] = [];
      let count = 0;
      const visit = async (el: TreeNode | undefined, depth: number) => {
        if (depth > 8) return;
        for (const c of await children(el)) {
          const item = await api.tree.getTreeItem(c);
          count++;
          texts.push(label(item), String(item.description ?? ''), tooltipText(item.tooltip));
          await visit(c, depth + 1);
        }
      };
      await visit(undefined, 0);
      return { texts, count };
    }

    it('a simulated server with --api-key, --admin-api-key= and HF_TOKEN is probed and followed', async () => {
      const home = nodeHome();
      port = await freePort();
      logFile = path.join(home, 'logs', 'secret_server.log');
      const fd = openSync(logFile, 'a');
      // As a user would start it on the node: from its home, with the venv's sglang (the simulator).
      server = spawn(
        '/bin/sh',
        [
          '-c',
          '. "$HOME/venv/bin/activate" && exec python3 -m sglang.launch_server "$@"',
          'sh',
          '--model-path',
          `${home}/models/Qwen3.6-27B`,
          '--served-model-name',
          'secret-test',
          '--api-key',
          API_KEY,
          `--admin-api-key=${ADMIN_KEY}`,
          '--host',
          '127.0.0.1',
          '--port',
          String(port),
        ],
        { cwd: home, env: { ...process.env, HOME: home, HF_TOKEN: HF, CUDA_VISIBLE_DEVICES: '6' }, stdio: ['ignore', fd, fd] },
      );
      closeSync(fd);
      await waitFor(
        'the planted server in the probe',
        async () => (await api.fleet.refresh(DEMO)).probe?.servers.find((s) => s.port === port),
        30_000,
        1000,
      );
      const s = api.fleet.status(DEMO).probe!.servers.find((x) => x.port === port)!;
      assert.equal(s.hasApiKey, true);
      assert.ok(!s.args.some((a) => SECRETS.some((k) => a.includes(k))), 'argv redacted where it enters the process');
      // Its log prints its ServerArgs (api_key included), as SGLang does; then a crash line naming the key.
      await waitFor('its log printed the key', () => readFileSync(logFile, 'utf8').includes(API_KEY), 30_000);
      // Ready ("Started server process" resets a server's crash state, so the crash line comes after it).
      await waitFor('the server ready', () => readFileSync(logFile, 'utf8').includes('The server is fired up and ready to roll'), 60_000);
      // The guard judges it (lines of a log reach its state machine once the guard has seen the probe listing it).
      await waitFor('the guard judges it', () => api.live.live(DEMO)?.servers.find((x) => x.port === port)?.state, 30_000);
    });

    it('after a crash line with the key and the token: no secret in any tree item, log line, notification or Show Node Details', async () => {
      appendFileSync(
        logFile,
        `[2026-12-01 10:00:00] Scheduler hit an exception: RuntimeError: upstream refused ${API_KEY} / ${ADMIN_KEY} (token ${HF})\n`,
      );
      await waitFor(
        'the crash under the node',
        () => {
          const l = api.live.live(DEMO);
          if (l?.problems?.some((p) => p.port === port && p.to === 'crashed')) return true;
          const s = l?.servers.find((x) => x.port === port);
          throw new Error(`state ${s?.state} (${s?.stateReason}), health ${s?.health}, tail error ${l?.tailError}`);
        },
        45_000,
        500,
      );
      const node = (await demoNode())!;
      const servers = (await children(node)).find((g) => g.type === 'group' && g.group === 'servers')!;
      const el = (await children(servers)).find((x) => x.type === 'server' && x.server.port === port)!;
      const tip = tooltipText((await api.tree.getTreeItem(el)).tooltip);
      assert.match(tip, /--api-key <redacted>/);
      assert.match(tip, /API key: set/);

      const { texts, count } = await walkTree();
      const leaks = texts.filter((t) => SECRETS.some((k) => t.includes(k)));
      assert.deepEqual(leaks, [], 'tree items with a planted secret');
      assert.ok(count > 40, `walked ${count} items`);

      const log = api.logText();
      assert.ok(log.length > 0, 'the output channel has lines');
      for (const k of SECRETS) assert.ok(!log.includes(k), `the output channel has ${k.slice(0, 6)}…`);
      for (const a of api.alerts.shown) for (const k of SECRETS) assert.ok(!a.text.includes(k), `notification: ${a.text.slice(0, 80)}`);

      await vscode.commands.executeCommand('gpuSessions.showProbe', node);
      const doc = await waitFor(
        'Show Node Details',
        () => {
          const d = vscode.window.activeTextEditor?.document;
          return d?.languageId === 'json' && d.getText().includes('"hasApiKey"') ? d : undefined;
        },
        10_000,
      );
      const json = doc.getText();
      assert.match(json, /"hasApiKey": true/);
      for (const k of SECRETS) assert.ok(!json.includes(k), `Show Node Details has ${k.slice(0, 6)}…`);
      console.log(
        `      ${count} tree items, ${log.split('\n').length} log lines, ${api.alerts.shown.length} notification(s): no planted secret`,
      );
    });
  });
});
