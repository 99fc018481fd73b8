/**
 * The demo node in the UI suites: open the GPU Sessions view, widen it, Start Demo Node from the palette and wait
 * until the node is probed with its 7 servers listed (a Refresh from the toolbar when a first probe timed out on a
 * loaded machine: a user's action); and the demo's own files (its home, sim-fault, the servers' base port).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Page } from 'playwright-core';
import { CodeServer, DEMO, log, waitFor } from './harness';
import { Workbench } from './workbench';

export { DEMO };

export class DemoView {
  constructor(
    readonly cs: CodeServer,
    readonly page: Page,
    readonly wb: Workbench,
  ) {}

  home(): string {
    return path.join(this.cs.userDataDir, 'User', 'globalStorage', 'gpu-sessions.gpu-sessions', 'demo', 'home');
  }

  simFault(...args: string[]): string {
    return execFileSync(path.join(this.home(), 'bin', 'sim-fault'), args, { env: { ...process.env, HOME: this.home() }, encoding: 'utf8' });
  }

  basePort(): number {
    return Number(readFileSync(path.join(this.home(), 'launch_all.sh'), 'utf8').match(/BASE_PORT=(\d+)/)?.[1] ?? 30000);
  }

  async description(): Promise<string> {
    return (
      await this.wb
        .treeItem(DEMO)
        .locator('.label-description')
        .innerText()
        .catch(() => '')
    ).trim();
  }

  /** Opens the workbench, the view (widened), starts the demo node and waits for its 7 server rows. */
  async start(): Promise<void> {
    const { page, wb } = this;
    await page.goto(this.cs.folderUrl(), { waitUntil: 'domcontentloaded', timeout: 60_000 });
    await page.locator('.monaco-workbench').waitFor({ state: 'visible', timeout: 60_000 });
    const tab = page.getByRole('tab', { name: /GPU Sessions/ });
    await tab.first().waitFor({ state: 'visible', timeout: 60_000 });
    await tab.first().click();
    const box = await page.locator('.part.sidebar').boundingBox();
    if (box) {
      await page.mouse.move(box.x + box.width + 1, box.y + 300);
      await page.mouse.down();
      await page.mouse.move(700, box.y + 300, { steps: 8 });
      await page.mouse.up();
      await page.mouse.move(1100, 700);
    }
    await wb.runCommand('GPU Sessions: Start Demo Node');
    await wb.treeItem(DEMO).waitFor({ state: 'visible', timeout: 90_000 });
    // On a loaded machine the first probe can time out: the toolbar's Refresh probes again (a user's action).
    let lastRefresh = Date.now();
    await waitFor(
      'demo node probed',
      async () => {
        const d = await this.description();
        if (/7× NVIDIA B200/.test(d)) return true;
        if (/error|Timed out|Unreachable/.test(d) && Date.now() - lastRefresh > 15_000) {
          log(`demo node: "${d}" — Refresh`);
          lastRefresh = Date.now();
          await page
            .locator('.part.sidebar .title-actions [aria-label^="Refresh"], .part.sidebar .actions-container [aria-label^="Refresh"]')
            .first()
            .click()
            .catch(() => undefined);
        }
        return false;
      },
      180_000,
      1000,
    );
    await wb.expand(wb.treeItem(DEMO));
    await wb.expand(wb.treeItem('Servers'));
    await waitFor('7 server rows', async () => (await wb.labels(/^:\d{4,5} qwen3\.6-27b$/)).length === 7, 30_000);
  }
}
