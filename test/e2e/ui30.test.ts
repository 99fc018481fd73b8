/**
 * Issue 30 in real VS Code: the UI people act on. Each step checks one promise of the issue through the
 * packaged extension in code-server, driven by headless Chromium (screenshots test-results/e2e/30-NN-*.png):
 * live rows that can be hovered and clicked, Tail All GPU Logs from the palette, a lost GPU listed as lost, a
 * crash alert in plain words with its exception line, a deliberate stop that is no alert, a verdict with its
 * time that a restarted demo drops, no dialog while the demo stops, and a Node Dashboard whose node-total chart
 * comes first and whose colours follow a theme switch.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as os from 'node:os';
import * as assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import {
  BrowserSession,
  CodeServer,
  elapsed,
  launchBrowser,
  log,
  missingPrerequisite,
  RESULTS,
  sleep,
  startCodeServer,
  waitFor,
} from './harness';
import { Workbench } from './workbench';
import { DEMO, DemoView } from './demoView';
import { waitQuiet } from '../helpers/wait';

describe('e2e (issue 30): the UI people act on', function () {
  this.timeout(150_000);
  let cs: CodeServer | undefined;
  let b: BrowserSession | undefined;
  let page: Page;
  let wb: Workbench;
  let shot = 0;
  let demoReady = false;
  const t0 = Date.now();

  const needsDemo = (ctx: Mocha.Context) => {
    if (!demoReady) {
      log('skipped: the demo node did not come up (see the failure above)');
      ctx.skip();
    }
  };

  async function screenshot(name: string): Promise<void> {
    const file = path.join(RESULTS, `30-${String(++shot).padStart(2, '0')}-${name}.png`);
    await page.screenshot({ path: file, timeout: 20_000 });
    log(`screenshot ${path.relative(process.cwd(), file)}`);
  }

  const demoHome = () => path.join(cs!.userDataDir, 'User', 'globalStorage', 'gpu-sessions.gpu-sessions', 'demo', 'home');
  const simFault = (...args: string[]) =>
    execFileSync(path.join(demoHome(), 'bin', 'sim-fault'), args, { env: { ...process.env, HOME: demoHome() } });
  const basePort = () => Number(readFileSync(path.join(demoHome(), 'launch_all.sh'), 'utf8').match(/BASE_PORT=(\d+)/)?.[1] ?? 30000);
  const nodeDescription = async () =>
    (
      await wb
        .treeItem(DEMO)
        .locator('.label-description')
        .innerText()
        .catch(() => '')
    ).trim();

  before(async function () {
    this.timeout(180_000);
    const missing = missingPrerequisite();
    if (missing) {
      if (process.env.E2E_REQUIRED === '1') throw new Error(missing);
      log(`skipped: ${missing}`);
      this.skip();
    }
    cs = await startCodeServer({
      name: 'ui30',
      install: [process.env.E2E_VSIX!],
      settings: {
        'gpuSessions.refreshIntervalSeconds': 0,
        'gpuSessions.alerts.pollIntervalSeconds': 5,
        'workbench.hover.delay': 300,
        // item 9: a price, so that the money figure is shown
        'gpuSessions.pricePerHour': 40,
      },
      workspaceFiles: { 'README.md': '# Scratch workspace for GPU Sessions e2e (issue 30)\n' },
    });
    b = await launchBrowser();
    page = b.page;
    wb = new Workbench(page);
  });

  afterEach(async function () {
    if (this.currentTest?.state === 'failed' && page) {
      log(`FAILED: ${(this.currentTest.err?.message ?? '').slice(0, 600)}`);
      const file = path.join(
        RESULTS,
        `30-${String(shot + 1).padStart(2, '0')}-${(this.currentTest.title.match(/[a-z0-9]+/gi) ?? ['step']).slice(0, 4).join('-').toLowerCase()}-FAILED.png`,
      );
      await page.screenshot({ path: file, timeout: 15_000 }).catch(() => undefined);
      log(`failure screenshot ${path.relative(process.cwd(), file)}`);
      const toasts = await wb.notifications();
      if (toasts.length) log(`notifications:\n        ${toasts.map((t) => t.slice(0, 300)).join('\n        ')}`);
      const ext = cs?.extensionLog();
      if (ext) log(`GPU Sessions log (${ext.file}) tail:\n${ext.tail}`);
      await page.keyboard.press('Escape').catch(() => undefined);
      await page.keyboard.press('Escape').catch(() => undefined);
    }
  });

  after(async function () {
    this.timeout(60_000);
    await b?.close();
    await cs?.stop();
    log(`issue-30 suite ${elapsed(t0)}`);
  });

  it('opens the GPU Sessions view and starts the demo node', async function () {
    this.timeout(300_000);
    await new DemoView(cs!, page, wb).start();
    demoReady = true;
    await screenshot('demo');
  });

  it('item 3: hovering a live server row shows its tooltip', async function () {
    needsDemo(this);
    const row = wb.treeItem(`:${basePort()} qwen3.6-27b`);
    await page.mouse.move(1100, 700);
    // VS Code rebuilds a row's hover whenever the row is rendered: point at the row right after one of its live
    // updates, so what is measured is the time until the next render. A row whose only change is its figures is
    // redrawn at most every 30 s (FIGURES_MS in tree/liveRender.ts): wait for one such window, with room for load.
    const desc = row.locator('.label-description');
    const before = await desc.innerText();
    await waitFor('a live update of the server row', async () => (await desc.innerText()) !== before, 75_000, 100);
    await desc.hover();
    // \s: MarkdownString.appendText writes its spaces as &nbsp; ("/pid \d+/" never matched the shown "(pid 28058)")
    const hover = page.locator('.monaco-hover, .workbench-hover, [role="tooltip"]').filter({ hasText: /pid\s\d+/ });
    await hover
      .first()
      .waitFor({ state: 'visible', timeout: 4000 })
      .catch(async (e: Error) => {
        const any = await page.locator('.monaco-hover, .workbench-hover, [role="tooltip"]').allInnerTexts();
        log(`hovers on the page: ${any.length}: ${any.map((t) => t.replace(/\s+/g, ' ').slice(0, 120)).join(' | ')}`);
        throw e;
      });
    // and it stays while the live figures move on (the row is not re-rendered under the pointer every 0.5 s)
    await sleep(2500);
    assert.ok(await hover.first().isVisible(), 'the tooltip is still shown 2.5 s later');
    log(`tooltip: ${(await hover.first().innerText()).replace(/\s+/g, ' ').slice(0, 160)}`);
    await screenshot('server-tooltip');
    await page.mouse.move(1100, 700);
  });

  it('item 3: a click on a live server row runs its command 20 times out of 20', async function () {
    needsDemo(this);
    const port = basePort();
    const rows = [wb.treeItem(`:${port} qwen3.6-27b`), wb.treeItem(`:${port + 1} qwen3.6-27b`)];
    let ok = 0;
    const failures: string[] = [];
    for (let i = 0; i < 20; i++) {
      const want = `sglang_gpu${i % 2}.log`;
      await rows[i % 2].locator('.label-name').click();
      const got = await waitFor(`tab ${want}`, async () => ((await wb.activeTab()).includes(want) ? want : null), 20_000).catch(
        (e: Error) => (failures.push(`click ${i + 1}: ${e.message.slice(0, 120)}`), null),
      );
      if (got) ok++;
    }
    const errs = (await wb.notifications()).filter((t) => /command not found|Actual command/i.test(t));
    log(`clicks: ${ok}/20 opened the server's log${failures.length ? `; ${failures.join('; ')}` : ''}`);
    await screenshot('clicks');
    assert.equal(errs.length, 0, errs.join(' | '));
    assert.equal(ok, 20, failures.join('; '));
  });

  it('item 3: "Tail All GPU Logs" from the palette asks for the node and tails every server log', async function () {
    needsDemo(this);
    await wb.runCommand('GPU Sessions: Tail All GPU Logs');
    await wb.pick(DEMO);
    await waitFor('the all-logs tab', async () => /all GPU logs \(7\)/.test(await wb.activeTab()), 30_000);
    await screenshot('tail-all');
  });

  it("item 7: Stop Server from the palette offers exactly the tree's servers, never another process on the machine", async function () {
    needsDemo(this);
    // another user's "SGLang server" on the same machine: outside the demo's folder, a port the demo does not use
    const other = spawn(
      'python3',
      ['-c', 'import time; time.sleep(120)', '-m', 'sglang.launch_server', '--model-path', '/nonexistent/other-model', '--port', '39999'],
      { cwd: os.tmpdir(), stdio: 'ignore' },
    );
    try {
      await sleep(500);
      await wb.runCommand('GPU Sessions: Stop Server');
      await wb.pick(DEMO);
      const rows = page.locator('.quick-input-widget .quick-input-list .monaco-list-row');
      await waitFor('the server picker', async () => (await rows.filter({ hasText: /^port \d+/ }).count()) >= 7, 30_000);
      await sleep(1000); // nothing more arrives later
      const labels = await rows.evaluateAll((els) => els.map((e) => e.querySelector('.label-name')?.textContent ?? e.textContent ?? ''));
      log(`Stop Server picker: ${labels.join(' | ')}`);
      const ports = labels.map((l) => Number(/port (\d+)/.exec(l)?.[1])).sort((a, b) => a - b);
      assert.deepEqual(
        ports,
        Array.from({ length: 7 }, (_, i) => basePort() + i),
        'exactly the 7 servers the tree lists',
      );
      assert.ok(!labels.some((l) => l.includes('39999')), 'the other process is not offered');
      await screenshot('stop-picker-own-servers');
    } finally {
      await page.keyboard.press('Escape').catch(() => undefined);
      other.kill('SIGKILL');
    }
  });

  it("item 9: the money figure is one window's, rounded, and does not wobble at a constant rate", async function () {
    needsDemo(this);
    this.timeout(240_000);
    await wb.runCommand('GPU Sessions: Open Node Dashboard');
    await wb.pick(DEMO);
    const frame = await wb.webviewFrame('group-node', 60_000);
    const summary = frame.locator('#summary');
    const figure = async () =>
      /\$(\d+\.\d\d) per million output tokens over the last/.exec(await summary.innerText().catch(() => ''))?.[1] ?? null;
    // the window figure comes after a minute of samples (before it, "so far" over the rental since the node booted)
    await waitFor('the money figure over the last minutes', figure, 150_000, 1000);
    const seen: string[] = [];
    for (let i = 0; i < 10; i++) {
      seen.push((await figure()) ?? 'none');
      await sleep(2000);
    }
    log(`money figure over 20 s: ${seen.join(' ')} (${(await summary.innerText()).split('\n')[0]})`);
    assert.equal(new Set(seen).size, 1, `one stable figure, not a saw-tooth: ${seen.join(' ')}`);
    await screenshot('money-stable');
    await wb.runCommand('View: Close All Editors');
  });

  it('item 10: the Node Dashboard shows the node total first and survives a theme switch (colours re-read)', async function () {
    needsDemo(this);
    this.timeout(360_000);
    await wb.runCommand('GPU Sessions: Open Node Dashboard');
    await wb.pick(DEMO);
    const frame = await wb.webviewFrame('group-node', 60_000);
    const total = frame.locator('#total[role="img"]');
    await total.waitFor({ state: 'attached', timeout: 60_000 });
    await waitFor('the total chart drawn', async () => (await total.locator('canvas').count()) > 0, 30_000);
    const label = (await total.getAttribute('aria-label')) ?? '';
    log(`#total aria-label: ${label}`);
    assert.match(label, /^Node throughput: .* tok\/s now, min .*, max /);
    const first = await frame.locator('#group-node > section').first().getAttribute('id');
    assert.equal(first, 'box-total', 'the node total is the first chart');
    assert.ok((await frame.locator('[id^="box-server-"]').count()) >= 7, 'a small chart per server');
    const gpuLegend = await frame.locator('#box-gpu0 .u-legend').innerText();
    assert.match(gpuLegend, /GPU 0 · util %/);
    const strokeBefore = await total.getAttribute('data-stroke');
    const classBefore = await frame.locator('body').getAttribute('class');
    await screenshot('dashboard-dark');
    // F1 inside the webview's frame does not reach the workbench: the focus goes back to the tree first
    const focusWorkbench = () =>
      page
        .locator('.part.sidebar')
        .click({ position: { x: 120, y: 700 }, timeout: 5000 })
        .catch(() => undefined);
    // "Preferences: Toggle between Light/Dark Themes" (no picker: in code-server 4.100.3 the "Color Theme" picker's row
    // never showed focused after the dashboard, and settings.json written by hand did not restyle the webview)
    const toggleTheme = async () => {
      await focusWorkbench();
      await wb.runCommand('Preferences: Toggle between Light/Dark Themes');
    };
    let toggled = false;
    try {
      await toggleTheme();
      toggled = true;
      const strokeAfter = await waitFor(
        'the chart stroke re-read from the light theme',
        async () => {
          const s = await total.getAttribute('data-stroke').catch(() => null);
          return s && s !== strokeBefore ? s : null;
        },
        30_000,
      );
      const classAfter = await frame.locator('body').getAttribute('class');
      log(`theme: "${classBefore}" → "${classAfter}"; total stroke ${strokeBefore} → ${strokeAfter}`);
      assert.match(classAfter ?? '', /vscode-light/);
      assert.ok(await total.locator('canvas').count(), 'the total chart is drawn again');
      assert.match((await total.getAttribute('aria-label')) ?? '', /^Node throughput: /);
      await screenshot('dashboard-light');
    } finally {
      if (toggled) await toggleTheme().catch((e: Error) => log(`the theme did not toggle back: ${e.message.split('\n')[0]}`));
    }
    await focusWorkbench();
    await wb.runCommand('View: Close All Editors');
  });

  it('item 6: a lost GPU stays listed as lost; the node reads "7× NVIDIA B200 (1 lost)"', async function () {
    needsDemo(this);
    await wb.collapse(wb.treeItem('Servers'));
    await wb.expand(wb.treeItem('GPUs'));
    simFault('gpu-lost', '3');
    try {
      await waitFor('node description with the lost GPU', async () => /7× NVIDIA B200 \(1 lost\)/.test(await nodeDescription()), 45_000);
      const lost = wb.treeItem('GPU 3 · lost');
      await lost.waitFor({ state: 'visible', timeout: 15_000 });
      const d = await lost.locator('.label-description').innerText();
      assert.match(d, /Unable to determine the device handle/);
      assert.equal(await lost.locator('.codicon-error').count(), 1, 'an error icon');
      log(`node: ${await nodeDescription()}; row: GPU 3 · lost — ${d}`);
      await screenshot('gpu-lost');
    } finally {
      simFault('gpu-ok', '3');
    }
    await wb.collapse(wb.treeItem('GPUs'));
  });

  it('item 8: a crash is an error notification in plain words that quotes the exception line', async function () {
    needsDemo(this);
    const port = basePort() + 5;
    simFault(String(port), 'oom');
    const row = wb.treeItem(`:${port} crashed: out of GPU memory`);
    await row.waitFor({ state: 'visible', timeout: 60_000 });
    const toast = page.locator('.notifications-toasts .notification-list-item').filter({ hasText: `:${port} crashed: out of GPU memory` });
    await toast.first().waitFor({ state: 'visible', timeout: 30_000 });
    const text = (await toast.first().innerText()).replace(/\s+/g, ' ');
    log(`alert: ${text.slice(0, 240)}`);
    assert.match(text, /OutOfMemoryError/);
    assert.doesNotMatch(text, /Traceback \(most recent call last\)|\(oom\)|\(crash\)/);
    assert.ok(await toast.first().locator('.codicon-error').count(), 'error severity');
    await screenshot('crash-alert');
    await page.keyboard.press('Escape');
  });

  it('item 4: Stop Server from a row\'s menu is "stopped by you", never an alert', async function () {
    needsDemo(this);
    const port = basePort() + 6;
    await wb.expand(wb.treeItem('Servers'));
    await wb.contextMenu(wb.treeItem(`:${port} qwen3.6-27b`), /^Stop Server/);
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 15_000 });
    await dialog
      .locator('.dialog-buttons a, .dialog-buttons button')
      .filter({ hasText: /^Stop$/ })
      .first()
      .click();
    const stopped = wb.treeItem(new RegExp(`^:${port} stopped by you, \\d\\d:\\d\\d$`));
    await stopped.waitFor({ state: 'visible', timeout: 60_000 });
    await sleep(8000); // the guard's next judgements: no crash row, no alert
    const about = (await wb.notifications()).filter((t) => t.includes(`:${port}`) && /crash|gone/i.test(t));
    assert.deepEqual(about, [], 'no alert about the stopped server');
    assert.equal((await wb.labels(new RegExp(`^:${port} crashed`))).length, 0, 'no crash row');
    await screenshot('stopped-by-you');
  });

  it('item 5: a drain the client keeps busy says why it is not finishing; Stop now ends it', async function () {
    needsDemo(this);
    this.timeout(120_000);
    const port = basePort() + 4;
    await wb.contextMenu(wb.treeItem(`:${port} qwen3.6-27b`), /^Stop Server/);
    const dialog = page.locator('.monaco-dialog-box');
    await dialog.waitFor({ state: 'visible', timeout: 15_000 });
    await dialog
      .locator('.dialog-buttons a, .dialog-buttons button')
      .filter({ hasText: /^Drain, then Stop$/ })
      .first()
      .click();
    // the demo's servers keep running requests (the synthetic load): the drain cannot end by itself
    const why = await waitFor(
      'the drain to say why it is not finishing',
      async () => (await wb.notifications()).find((t) => t.includes(`draining port ${port}`) && /not finishing.* · SIGTERM in /.test(t)),
      40_000,
    );
    // the button the progress names is offered again now (the first one may have gone into the notification center)
    await waitFor(
      'Stop now offered again once the drain is not finishing',
      async () =>
        (await wb.notifications()).find((t) => t.includes(`draining port ${port} on `) && / is not finishing: .*Stop now/.test(t)),
      10_000,
    );
    log(`drain progress: ${why.slice(0, 240)}`);
    assert.match(why, /SIGTERM in \d+:\d\d/, 'the drain deadline is shown');
    await screenshot('drain-not-finishing');
    const t0 = Date.now();
    const where = await wb.pressNotificationButton(`draining port ${port}`, /^Stop now$/);
    await wb.treeItem(new RegExp(`^:${port} stopped by you, \\d\\d:\\d\\d$`)).waitFor({ state: 'visible', timeout: 30_000 });
    log(`stopped ${Date.now() - t0} ms after Stop now (pressed on the ${where})`);
  });

  it('item 1: after a salvage the node reads "✓ safe as of HH:MM"', async function () {
    needsDemo(this);
    this.timeout(200_000);
    const home = demoHome();
    writeFileSync(path.join(home, '.sim', 'pause_load'), 'the e2e generation job finished\n');
    const logs = readdirSync(path.join(home, 'logs'))
      .filter((f) => /^sglang_gpu\d+\.log$/.test(f))
      .map((f) => path.join(home, 'logs', f));
    await waitQuiet(logs);
    await wb.runCommand('View: Close All Editors');
    await sleep(500);
    await wb.runCommand('GPU Sessions: Salvage Node');
    await wb.pick(DEMO);
    const title = page.locator('.quick-input-widget .quick-input-title', { hasText: /review/ });
    await title.waitFor({ state: 'visible', timeout: 60_000 });
    const stopBtn = page
      .locator(
        '.quick-input-widget .quick-input-titlebar [aria-label^="Stop the SGLang servers"], .quick-input-widget .quick-input-titlebar [title^="Stop the SGLang servers"]',
      )
      .first();
    await stopBtn.click();
    await title.filter({ hasText: /servers will be stopped/ }).waitFor({ state: 'visible', timeout: 10_000 });
    await page.locator('.quick-input-widget .quick-input-box input').press('Enter');
    await page
      .getByRole('dialog', { name: /gpu-demo is (NOT )?safe to shut down/ })
      .first()
      .waitFor({ state: 'visible', timeout: 150_000 });
    const d = await waitFor(
      'the verdict with its time',
      async () => {
        const x = await nodeDescription();
        return /✓ safe as of \d\d:\d\d/.test(x) ? x : null;
      },
      20_000,
    );
    log(`node after the salvage: ${d}`);
    await screenshot('verdict-with-time');
  });

  it('item 2: Stop Demo Node raises no dialog; item 1: the restarted demo shows no stale ✓', async function () {
    needsDemo(this);
    this.timeout(200_000);
    // A toast left by the salvage (its "Open Report" is the primary button) must not take the palette's Enter.
    await wb.runCommand('Notifications: Clear All Notifications');
    await sleep(300);
    const stopping = () => (cs?.extensionLog(200)?.tail ?? '').includes('Stopping the demo node');
    await wb.runCommand('GPU Sessions: Stop Demo Node');
    if (!(await waitFor('the stop command to start', stopping, 10_000).catch(() => false))) {
      // the palette lost the keystroke (the harness, not the product): say so and run it once more
      log('Stop Demo Node did not start from the palette (no log line after 10 s); running it again');
      await screenshot('stop-demo-not-started');
      await wb.runCommand('GPU Sessions: Stop Demo Node');
      await waitFor('the stop command to start', stopping, 10_000);
    }
    const t = Date.now();
    const dialogs: string[] = [];
    // Watch for dialogs for 20 s, and on until the row has gone (bounded): a slow stop is measured, not misread.
    let leftAfter: number | null = null;
    while (Date.now() - t < 20_000 || (leftAfter === null && Date.now() - t < 60_000)) {
      if (leftAfter === null && (await wb.treeItem(DEMO).count()) === 0) leftAfter = Date.now() - t;
      const d = await wb.dialogText();
      if (d) {
        dialogs.push(d);
        await screenshot('dialog-while-stopping');
        await page.keyboard.press('Escape');
      }
      await sleep(300);
    }
    log(`the demo node left the tree after ${leftAfter ?? '> 60 000'} ms`);
    assert.deepEqual(dialogs, [], 'no dialog while the demo stops');
    assert.equal(await wb.treeItem(DEMO).count(), 0, 'the demo node left the tree');
    await wb.runCommand('GPU Sessions: Start Demo Node');
    await wb.treeItem(DEMO).waitFor({ state: 'visible', timeout: 90_000 });
    await waitFor('restarted demo probed', async () => /7× NVIDIA B200 · 7 servers/.test(await nodeDescription()), 90_000);
    await sleep(6000); // a probe or two later
    const d = await nodeDescription();
    log(`restarted demo: ${d}`);
    assert.doesNotMatch(d, /✓|safe to shut down|safe as of/);
    await screenshot('restarted-no-stale-verdict');
  });
});
