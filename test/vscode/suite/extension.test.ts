/**
 * Inside the real extension host: activation, contributed commands registered, the demo node's tree
 * (shape and labels through the extension's API), a live tail, throughput, an unreachable node's
 * error item, and Salvage Node run through the command with its files checked on disk.
 * Tests build on each other (one demo node for the suite); it is stopped at the end.
 */
import * as assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, closeSync, existsSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../../src/extension/extension';
import type { TreeNode } from '../../../src/extension/tree';
import { waitFor } from '../../e2e/harness';
import { label } from '../treeText';
import { waitQuiet } from '../../helpers/wait';
import { DEMO, demoHome, treeChildren } from '../demoNode';

const EXTENSION_ID = 'gpu-sessions.gpu-sessions';

async function closedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

describe('GPU Sessions in the extension host', function () {
  this.timeout(120_000);
  let api: GpuSessionsApi;

  /** The demo node's home (its known_hosts file sits next to it). */
  const nodeHome = () => demoHome(api);
  const children = (el?: TreeNode) => treeChildren(api, el);
  const find = async (parent: TreeNode | undefined, pred: (el: TreeNode, item: vscode.TreeItem) => boolean) => {
    for (const el of await children(parent)) if (pred(el, await api.tree.getTreeItem(el))) return el;
    return undefined;
  };

  after(async function () {
    this.timeout(60_000);
    await vscode.workspace
      .getConfiguration('gpuSessions')
      .update('nodes', undefined, vscode.ConfigurationTarget.Global)
      .then(undefined, () => undefined);
    await vscode.commands.executeCommand('workbench.action.closeAllEditors').then(undefined, () => undefined);
    await vscode.commands.executeCommand('gpuSessions.stopDemoNode').then(undefined, () => undefined);
  });

  it('activates and exports its API', async () => {
    const ext = vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID);
    assert.ok(ext, `${EXTENSION_ID} is installed`);
    api = await ext.activate();
    assert.ok(ext.isActive);
    assert.ok(api?.fleet && api?.tree, 'exports { fleet, tree, ... }');
    assert.equal(typeof api.reloadNodes, 'function');
  });

  it('registers every contributed command', async () => {
    const ext = vscode.extensions.getExtension(EXTENSION_ID)!;
    const contributed: string[] = ext.packageJSON.contributes.commands.map((c: { command: string }) => c.command);
    assert.ok(contributed.length >= 10, `contributes ${contributed.length} commands`);
    const registered = new Set(await vscode.commands.getCommands(true));
    const missing = contributed.filter((c) => !registered.has(c));
    assert.deepEqual(missing, [], `contributed but not registered: ${missing.join(', ')}`);
    for (const c of ['gpuSessions.startDemoNode', 'gpuSessions.salvageNode', 'gpuSessions.tailLog']) assert.ok(contributed.includes(c), c);
  });

  it('starts the demo node through its command; the tree lists it', async () => {
    const t0 = Date.now();
    const name = await vscode.commands.executeCommand<string>('gpuSessions.startDemoNode');
    assert.equal(name, DEMO);
    assert.ok(api.demo(), 'api.demo() is set');
    const st = await waitFor(
      'demo probe',
      () => (api.fleet.status(DEMO).state === 'ok' && api.fleet.status(DEMO).probe ? api.fleet.status(DEMO) : undefined),
      30_000,
    );
    assert.equal(st.probe!.gpuState, 'ok');
    const roots = await children();
    const node = roots.find((el) => el.type === 'node' && el.node.name === DEMO);
    assert.ok(node, `root items: ${roots.map((r) => (r.type === 'node' ? r.node.name : r.type)).join(', ')}`);
    const item = await api.tree.getTreeItem(node);
    assert.equal(label(item), DEMO);
    // the demo plays a RunPod pod: its spend, at the pod's own price, follows
    assert.match(String(item.description), /^7× NVIDIA B200 · \d+ servers( · \$[\d,.]+)?$/);
    assert.equal(item.collapsibleState, vscode.TreeItemCollapsibleState.Collapsed);
    console.log(`      demo node up and probed in ${Date.now() - t0} ms: ${item.description}`);
  });

  it('the demo node has GPUs, Servers and Artifacts with the expected labels', async () => {
    const node = (await find(undefined, (el) => el.type === 'node' && el.node.name === DEMO))!;
    // the groups (the live rows above them, Data and Generation, are checked elsewhere)
    const groups = (await children(node)).filter((g) => g.type === 'group');
    const groupItems = await Promise.all(groups.map((g) => api.tree.getTreeItem(g)));
    assert.deepEqual(groupItems.map(label), ['GPUs', 'Servers', 'Artifacts']);
    assert.equal(groupItems[0].description, '7');
    // Only its own servers, whatever else runs on this machine.
    assert.equal(groupItems[1].description, '7');
    assert.ok(Number(groupItems[2].description) >= 20, `artifacts: ${groupItems[2].description}`);

    const gpus = await Promise.all((await children(groups[0])).map((g) => api.tree.getTreeItem(g)));
    assert.deepEqual(
      gpus.map(label),
      [0, 1, 2, 3, 4, 5, 6].map((i) => `GPU ${i} · NVIDIA B200`),
    );
    for (const g of gpus) assert.match(String(g.description), /^[\d.]+\/179\.1 GiB · \d+% · \d+°C/);

    // The demo node is this machine: a concurrent run's simulated servers would show too, so the
    // checks are on this demo's seven (their logs live in its home).
    const serverEls = (await children(groups[1])).filter((el) => el.type === 'server' && el.server.logFile?.startsWith(nodeHome() + '/'));
    const servers = await Promise.all(serverEls.map((s) => api.tree.getTreeItem(s)));
    const base = Math.min(...serverEls.map((el) => (el.type === 'server' ? el.server.port : 0)));
    assert.deepEqual(
      servers.map(label).sort(),
      [0, 1, 2, 3, 4, 5, 6].map((i) => `:${base + i} qwen3.6-27b`),
    );
    if (Number(groupItems[1].description) !== 7)
      console.log(`      note: ${groupItems[1].description} SGLang servers on this machine (other runs' simulated servers)`);
    for (const s of servers) {
      assert.match(String(s.description), /^GPU \d/);
      assert.match(String(s.description), /NEXTN/);
      assert.equal(s.contextValue, 'server.log');
      // an argument-free row command (issue 30: arguments died with each re-render) that tails this server's log
      assert.match(String(s.command?.command), /^gpuSessions\.row\.tailLog\.\d+$/);
      assert.equal(s.command?.arguments, undefined);
    }

    const kinds = await children(groups[2]);
    const kindLabels = (await Promise.all(kinds.map((k) => api.tree.getTreeItem(k)))).map(label);
    for (const k of ['Launch scripts', 'Logs', 'Progress files'])
      assert.ok(kindLabels.includes(k), `artifact kinds: ${kindLabels.join(', ')}`);
    const logs = kinds.find((k) => k.type === 'kind' && k.kind === 'log')!;
    const logNames = (await Promise.all((await children(logs)).map((a) => api.tree.getTreeItem(a)))).map(label);
    for (let i = 0; i < 7; i++) assert.ok(logNames.includes(`sglang_gpu${i}.log`), `logs: ${logNames.join(', ')}`);
  });

  it('gpuSessions.tailLog opens a live, growing log document', async () => {
    const probe = api.fleet.status(DEMO).probe!;
    const logFile = probe.servers.find((s) => s.logFile === path.join(nodeHome(), 'logs', 'sglang_gpu0.log'))?.logFile;
    assert.ok(logFile, 'the GPU 0 server has a log file');
    const editor = await vscode.commands.executeCommand<vscode.TextEditor>('gpuSessions.tailLog', DEMO, logFile);
    assert.ok(editor?.document, 'tailLog returns the editor');
    const doc = editor.document;
    assert.match(doc.uri.path, /sglang_gpu0\.log$/);
    assert.equal(doc.languageId, 'log');
    const first = await waitFor('tail lines', () => (doc.lineCount > 5 ? doc.lineCount : 0), 30_000);
    const later = await waitFor('more tail lines', () => (doc.lineCount > first ? doc.lineCount : 0), 30_000);
    assert.match(doc.getText(), /Decode batch/);
    console.log(`      tail: ${first} lines, then ${later}`);
  });

  it('a tail opened on a 500-line log is at the last line, follows new lines, and stops following after a scroll up', async () => {
    const file = path.join(nodeHome(), 'logs', 'long_follow.log');
    let n = 0;
    const add = (k: number) => {
      const lines: string[] = [];
      for (let i = 0; i < k; i++) lines.push(`[2026-12-01 10:00:00] follow test line ${++n}`);
      appendFileSync(file, lines.join('\n') + '\n');
    };
    add(500);
    const cfg = vscode.workspace.getConfiguration('gpuSessions');
    await cfg.update('tail.initialLines', 1000, vscode.ConfigurationTarget.Global);
    try {
      const ed = await vscode.commands.executeCommand<vscode.TextEditor>('gpuSessions.tailLog', DEMO, file);
      const lastVisible = () => ed.visibleRanges[ed.visibleRanges.length - 1]?.end.line ?? -1;
      const atEnd = () => lastVisible() >= ed.document.lineCount - 3;
      const has = (k: number) => ed.document.getText().includes(`follow test line ${k}\n`);
      await waitFor('all 500 lines in the view', () => has(500), 30_000);
      await waitFor('the view at the last line', () => atEnd(), 10_000);
      assert.ok(ed.document.lineCount >= 500, `lines: ${ed.document.lineCount}`);
      console.log(`      opened on ${ed.document.lineCount} lines, showing ${ed.visibleRanges[0].start.line + 1}-${lastVisible() + 1}`);
      for (let round = 0; round < 3; round++) {
        add(40);
        await waitFor(`line ${n} in the view`, () => has(n), 15_000);
        await waitFor(`the view follows to line ${n}`, () => atEnd(), 5_000);
      }
      // Scroll up (as the user does): the view stays where it is while lines keep arriving.
      await new Promise((r) => setTimeout(r, 1200));
      await ed.revealRange(new vscode.Range(10, 0, 10, 0), vscode.TextEditorRevealType.AtTop);
      await waitFor('scrolled up', () => ed.visibleRanges[0].start.line <= 12, 5_000);
      await new Promise((r) => setTimeout(r, 300));
      for (let round = 0; round < 2; round++) {
        add(40);
        await waitFor(`line ${n} in the view`, () => has(n), 15_000);
        await new Promise((r) => setTimeout(r, 800));
        assert.ok(
          !atEnd(),
          `still scrolled up (showing ${ed.visibleRanges[0].start.line + 1}-${lastVisible() + 1} of ${ed.document.lineCount})`,
        );
        assert.ok(ed.visibleRanges[0].start.line <= 12, `the view stayed where the user left it: ${ed.visibleRanges[0].start.line}`);
      }
      // Back at the end, it follows again.
      await ed.revealRange(new vscode.Range(ed.document.lineCount - 1, 0, ed.document.lineCount - 1, 0));
      await waitFor('back at the end', () => atEnd(), 5_000);
      await new Promise((r) => setTimeout(r, 300));
      add(40);
      await waitFor(`line ${n} in the view`, () => has(n), 15_000);
      await waitFor('follows again', () => atEnd(), 5_000);
    } finally {
      await vscode.commands.executeCommand('workbench.action.closeActiveEditor');
      await cfg.update('tail.initialLines', undefined, vscode.ConfigurationTarget.Global);
    }
  });

  it('live stats re-render only the rows that show them, so commands on other rows keep their element', async function () {
    this.timeout(300_000);
    // Re-rendering the node drops the handles of everything below it until VS Code fetches the
    // children again; a context-menu command (Tail Log on a log artifact) run then gets no element.
    const node = (await find(undefined, (el) => el.type === 'node' && el.node.name === DEMO))!;
    let nodeFires = 0;
    let liveFires = 0;
    let fleetChanges = 0;
    // Do what the view does: fetch the node's rows, and fetch them again when the node is re-rendered.
    const fetchRows = async () => {
      const groups = await children(node);
      await children(groups.find((g) => g.type === 'group' && g.group === 'servers'));
    };
    const sub = api.tree.onDidChangeTreeData((e) => {
      const els = Array.isArray(e) ? e : [e];
      if (els.some((x) => x === undefined || (x.type === 'node' && x.node.name === DEMO))) {
        nodeFires++;
        void fetchRows();
      } else if (els.some((x) => x?.type === 'server')) liveFires++;
    });
    const unsub = api.fleet.onDidChange((name) => (!name || name === DEMO) && fleetChanges++);
    try {
      await fetchRows();
      await waitFor(
        'live refreshes of the server rows',
        () => (liveFires >= 3 ? true : `${liveFires} row refresh(es), ${nodeFires} node refresh(es)`) === true,
        // three renders: a row whose only change is its figures is redrawn at most every 30 s (FIGURES_MS in
        // tree/liveRender.ts, so that an open tooltip stays), with room for a loaded machine
        220_000,
      );
    } finally {
      sub.dispose();
      unsub();
    }
    console.log(`      ${liveFires} live refresh(es) of the rows, ${nodeFires} of the node (${fleetChanges} probe change(s))`);
    assert.ok(nodeFires <= fleetChanges + 1, `the node was re-rendered ${nodeFires} time(s) for ${fleetChanges} probe change(s)`);
  });

  it('live throughput of the demo node is above zero', async () => {
    const live = await waitFor(
      'throughput > 0',
      () => {
        const l = api.tree.liveFor(DEMO);
        return l && l.genThroughput > 0 ? l : undefined;
      },
      60_000,
      500,
    );
    assert.ok(live.servers.length >= 7, `followed servers: ${live.servers.length}`);
    console.log(`      ${Math.round(live.genThroughput)} tok/s, ${live.runningReqs} running`);
  });

  it('a server whose log cannot be followed (newline in its path) is marked; the others keep live stats', async () => {
    const home = nodeHome();
    const fd = openSync(path.join(home, 'logs', 'evil\nname.log'), 'w');
    // Any process on the node can do this; it runs from the demo's home, so it is one of its servers.
    const evil = spawn(
      'python3',
      ['-c', 'import time; time.sleep(120)', '-m', 'sglang.launch_server', '--model-path', `${home}/models/Qwen3.6-27B`, '--port', '39998'],
      { cwd: home, stdio: ['ignore', fd, fd] },
    );
    closeSync(fd);
    try {
      await new Promise((r) => setTimeout(r, 300));
      const st = await api.fleet.refresh(DEMO);
      assert.ok(
        st.probe?.servers.some((s) => s.port === 39998 && /\n/.test(s.logFile ?? '')),
        'the probe sees it with its log',
      );
      const live = await waitFor(
        'the skipped server marked, the others followed',
        () => {
          const l = api.tree.liveFor(DEMO);
          const bad = l?.servers.find((s) => s.port === 39998);
          const others = l?.servers.filter((s) => s.port !== 39998) ?? [];
          return bad?.logSkipped && others.length === 7 && others.every((s) => s.source === 'log' && s.genThroughput > 0) ? l : undefined;
        },
        30_000,
        500,
      );
      const node = (await find(undefined, (el) => el.type === 'node' && el.node.name === DEMO))!;
      const serversGroup = (await children(node)).find((g) => g.type === 'group' && g.group === 'servers')!;
      const badEl = (await children(serversGroup)).find((el) => el.type === 'server' && el.server.port === 39998)!;
      assert.match(String((await api.tree.getTreeItem(badEl)).description), /log not followed/);
      console.log(
        `      skipped: ${live.servers.find((s) => s.port === 39998)?.logSkipped}; others ${Math.round(live.genThroughput)} tok/s`,
      );
    } finally {
      evil.kill('SIGKILL');
      await api.fleet.refresh(DEMO);
    }
  });

  it('an unreachable node (closed loopback port) shows an error item', async () => {
    const port = await closedPort();
    await vscode.workspace
      .getConfiguration('gpuSessions')
      .update('nodes', [{ name: 'unreachable-node', host: '127.0.0.1', port, user: 'nobody' }], vscode.ConfigurationTarget.Global);
    await waitFor('node from settings', () => api.fleet.node('unreachable-node'), 30_000);
    const st = await api.fleet.refresh('unreachable-node');
    assert.equal(st.state, 'error');
    assert.equal(st.error?.code, 'unreachable', st.error?.message);
    const node = (await find(undefined, (el) => el.type === 'node' && el.node.name === 'unreachable-node'))!;
    assert.match(String((await api.tree.getTreeItem(node)).description), /Unreachable/);
    const kids = await children(node);
    assert.equal(kids[0]?.type, 'error');
    const item = await api.tree.getTreeItem(kids[0]);
    assert.equal(label(item), 'Unreachable');
    assert.equal(item.command?.command, 'gpuSessions.showLog');
    // The demo node is unaffected.
    assert.equal(api.fleet.status(DEMO).state, 'ok');
  });

  type Manifest = {
    verdict: string | null;
    dest: string;
    items: { status: string; localPath: string | null; kind: string; remotePath: string }[];
    lost: { remotePath: string; why: string }[];
    reasons: string[];
    writers: { pid: number; server: boolean }[];
  };

  function checkSalvageFiles(m: Manifest): void {
    const ws = vscode.workspace.workspaceFolders![0];
    assert.ok(m.dest.startsWith(path.join(ws.uri.fsPath, 'salvage', DEMO) + path.sep), m.dest);
    for (const f of ['SALVAGE.md', 'salvage-manifest.json', 'running-servers.sh', 'environment.json'])
      assert.ok(existsSync(path.join(m.dest, f)), f);
    const onDisk = JSON.parse(readFileSync(path.join(m.dest, 'salvage-manifest.json'), 'utf8'));
    assert.equal(onDisk.verdict, m.verdict);
    const verified = m.items.filter((i) => i.status === 'verified' && i.localPath);
    assert.ok(verified.length >= 20, `verified: ${verified.length}`);
    for (const i of verified)
      assert.ok(existsSync(path.isAbsolute(i.localPath!) ? i.localPath! : path.join(m.dest, i.localPath!)), i.localPath!);
  }

  it('a crash shows one notification (class oom) whose Open Log action opens the log at the error line', async () => {
    const home = nodeHome();
    const server = api.fleet.status(DEMO).probe!.servers.find((s) => s.logFile?.startsWith(home + '/'))!;
    const before = api.alerts.shown.length;
    execFileSync(path.join(home, 'bin', 'sim-fault'), [String(server.port), 'oom'], { env: { ...process.env, HOME: home } });
    const alert = await waitFor(
      `the crash notification of :${server.port} (states: ${JSON.stringify(api.live.live(DEMO)?.servers.map((x) => [x.port, x.state]))})`,
      () => api.alerts.shown.slice(before).find((a) => a.transition.port === server.port && a.transition.to === 'crashed'),
      45_000,
    );
    assert.equal(alert.transition.class, 'oom');
    // plain words and the exception line, error severity (issue 30)
    assert.match(alert.text, /crashed: out of GPU memory — .*OutOfMemoryError/);
    assert.equal(alert.severity, 'error');
    assert.deepEqual(alert.actions, ['Restart Server', 'Open Log', 'Salvage Node', 'Show Node']);
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(
      api.alerts.shown.slice(before).filter((a) => a.transition.port === server.port).length,
      1,
      'one notification per transition',
    );
    const ed = await api.alerts.act(alert.transition, 'Open Log');
    assert.ok(ed, 'an editor opened');
    const line = ed.document.lineAt(ed.selection.start.line).text;
    assert.match(line, /OutOfMemoryError/);
    assert.ok(vscode.window.activeTextEditor?.document.uri.toString() === ed.document.uri.toString());
    const live = api.live.live(DEMO)!;
    assert.ok(
      live.problems!.some((p) => p.port === server.port && p.to === 'crashed'),
      'the tree lists the crashed server',
    );
  });

  it('gpuSessions.salvageNode while the servers still run: unsafe / still-running, every run, however quiet the logs', async () => {
    assert.ok(vscode.workspace.workspaceFolders?.[0], 'a workspace folder is open');
    const t0 = Date.now();
    const m = await vscode.commands.executeCommand<Manifest>('gpuSessions.salvageNode', DEMO, { assumeYes: true });
    assert.ok(m, 'salvageNode returns the manifest');
    console.log(`      salvage (servers running): verdict ${m.verdict} (${m.reasons.join(', ')}) in ${Date.now() - t0} ms → ${m.dest}`);
    checkSalvageFiles(m);
    assert.equal(m.verdict, 'unsafe');
    assert.ok(m.reasons.includes('still-running'), m.reasons.join(','));
    // The crash check above has already taken one of the seven servers down.
    assert.ok(m.writers.filter((w) => w.server).length >= 6, `writers: ${m.writers.length}`);
    assert.match(readFileSync(path.join(m.dest, 'SALVAGE.md'), 'utf8'), /not safe/i);
    assert.equal(api.tree.verdicts.get(DEMO)?.verdict, 'unsafe');
  });

  it('once the job has finished, gpuSessions.salvageNode says safe and opens SALVAGE.md', async () => {
    // The simulated node's knob for "the generation job finished" (what the CLI demo does before
    // salvaging): the servers' load drains and their logs go quiet.
    const home = nodeHome();
    assert.ok(existsSync(path.join(home, '.sim')), `demo home ${home}`);
    writeFileSync(path.join(home, '.sim', 'pause_load'), 'the e2e generation job finished\n');
    const logs = api.fleet
      .status(DEMO)
      .probe!.servers.map((s) => s.logFile!)
      .filter((f) => f.startsWith(home + '/'));
    // six or seven: the crash test above ends one server with a simulated OOM (its process is gone)
    assert.ok(logs.length >= 6, `demo server logs: ${logs.length}`);
    await waitQuiet(logs);
    const t0 = Date.now();
    // The node is about to go: stop the servers (their command lines are saved first), then the final pass.
    const m = await vscode.commands.executeCommand<Manifest>('gpuSessions.salvageNode', DEMO, { assumeYes: true, stopServers: true });
    assert.ok(m, 'salvageNode returns the manifest');
    console.log(`      salvage (job done): verdict ${m.verdict} in ${Date.now() - t0} ms → ${m.dest}`);
    assert.equal(m.verdict, 'safe', `lost: ${JSON.stringify(m.lost).slice(0, 500)}`);
    checkSalvageFiles(m);
    assert.match(readFileSync(path.join(m.dest, 'SALVAGE.md'), 'utf8'), /safe to shut down/i);
    assert.equal(api.tree.verdicts.get(DEMO)?.verdict, 'safe');
    // Rendered: the Markdown preview's tab (a webview), not the source in a text editor.
    const tabs = () => vscode.window.tabGroups.all.flatMap((g) => g.tabs);
    const preview = await waitFor(
      'SALVAGE.md preview',
      () =>
        tabs().find(
          (t) => t.input instanceof vscode.TabInputWebview && /markdown\.preview/.test(t.input.viewType) && /SALVAGE\.md/.test(t.label),
        ),
      15_000,
    );
    console.log(`      report tab: "${preview.label}" (${(preview.input as vscode.TabInputWebview).viewType})`);
    assert.ok(
      !tabs().some((t) => t.input instanceof vscode.TabInputText && t.input.uri.fsPath === path.join(m.dest, 'SALVAGE.md')),
      'the source is not what opened',
    );
    // The source is one command away (the preview toolbar's "Open Source").
    await vscode.commands.executeCommand('markdown.showSource');
    await waitFor(
      'SALVAGE.md source',
      () => vscode.window.visibleTextEditors.some((e) => e.document.uri.fsPath === path.join(m.dest, 'SALVAGE.md')),
      15_000,
    );
  });
  it('the Node Dashboard opens and draws the history of every demo server', async () => {
    const panel = await vscode.commands.executeCommand<vscode.WebviewPanel>('gpuSessions.openDashboard', DEMO);
    assert.ok(panel, 'a webview panel');
    assert.match(panel.webview.html, /Content-Security-Policy/);
    assert.doesNotMatch(panel.webview.html, /https?:\/\/(?!.*vscode)/, 'nothing remote');
    const ports = api.fleet.status(DEMO).probe!.servers.map((s) => s.port);
    const drawn = await waitFor(
      'dashboard data',
      () => {
        const d = api.dashboards.drawn.get(DEMO);
        return d && d.samples > 0 && ports.every((p) => d.ports.includes(p)) ? d : null;
      },
      30_000,
    );
    assert.ok(drawn.samples > 0);
    panel.dispose();
  });
});
