/**
 * Driving the workbench from the e2e suites: tree rows, the command palette, context menus, notifications and
 * dialogs (selectors as measured in ../shared/reference/toolchain-notes.md).
 */
import type { Frame, Locator, Page } from 'playwright-core';
import { sleep, waitFor } from './harness';

export function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export class Workbench {
  constructor(readonly page: Page) {}

  /** Tree rows by their label (a row's accessible name is its tooltip when that is a string). */
  treeItem(label: string | RegExp): Locator {
    return this.page.locator('.part.sidebar [role="treeitem"]').filter({
      has: this.page.locator('.label-name', { hasText: typeof label === 'string' ? new RegExp(`^${escapeRe(label)}$`) : label }),
    });
  }

  /**
   * Runs a command from the palette. A palette that closes under the test (an editor or preview that opens just then
   * takes the focus) is opened again: at most three tries, each bounded.
   */
  async runCommand(title: string): Promise<void> {
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    // Enter runs the focused row: wait until that is the command (a row further down, or a list still filtering
    // with a recently used command on top, would run something else).
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row.focused', { hasText: title }).first();
    for (let attempt = 0; ; attempt++) {
      await this.page.keyboard.press('F1');
      const ok = await (async () => {
        await input.waitFor({ state: 'visible', timeout: 5000 });
        await input.fill(`>${title}`, { timeout: 5000 });
        await row.waitFor({ state: 'visible', timeout: 15_000 });
        await input.press('Enter', { timeout: 5000 });
      })().then(
        () => true,
        (e: Error) => {
          if (attempt >= 2) throw new Error(`the command palette did not run "${title}": ${e.message.split('\n')[0]}`);
          return false;
        },
      );
      if (ok) return;
      await this.page.keyboard.press('Escape').catch(() => undefined);
      await this.page
        .locator('.part.editor')
        .click({ position: { x: 200, y: 200 } })
        .catch(() => undefined);
    }
  }

  /** Picks the row of an open quick pick. */
  async pick(text: string | RegExp): Promise<void> {
    const row = this.page.locator('.quick-input-widget .quick-input-list .monaco-list-row', { hasText: text }).first();
    await row.waitFor({ state: 'visible', timeout: 30_000 });
    // the first matching row: select it with the keyboard (a click can land while the list re-lays out)
    const input = this.page.locator('.quick-input-widget .quick-input-box input');
    if (typeof text === 'string') await input.fill(text);
    await sleep(300);
    await input.press('Enter');
  }

  async expand(item: Locator): Promise<void> {
    await item.waitFor({ state: 'visible' });
    if ((await item.getAttribute('aria-expanded')) !== 'true') await item.click();
    await waitFor('expanded', async () => (await item.getAttribute('aria-expanded')) === 'true', 30_000);
  }

  async collapse(item: Locator): Promise<void> {
    if ((await item.getAttribute('aria-expanded')) === 'true') await item.click();
  }

  /** Labels (with descriptions) of the rendered tree rows whose label matches. */
  async labels(re: RegExp): Promise<string[]> {
    const rows = await this.page
      .locator('.part.sidebar [role="treeitem"]')
      .evaluateAll((els) =>
        els.map(
          (e) =>
            [e.querySelector('.label-name')?.textContent ?? '', e.querySelector('.label-description')?.textContent ?? ''] as [
              string,
              string,
            ],
        ),
      );
    return rows.filter(([l]) => re.test(l)).map(([l, d]) => (d ? `${l} — ${d}` : l));
  }

  /** Runs a context-menu entry of a row (keyboard: the mouse is ignored right after the menu opened). */
  async contextMenu(item: Locator, entry: RegExp): Promise<void> {
    await item.click({ button: 'right' });
    const menuItem = this.page.getByRole('menuitem', { name: entry }).first();
    await menuItem.waitFor({ state: 'visible', timeout: 10_000 });
    await menuItem.hover();
    await this.page.keyboard.press('Enter');
  }

  /** The texts of the notifications shown now (toasts and the center). */
  async notifications(): Promise<string[]> {
    const t = await this.page
      .locator('.notifications-toasts .notification-list-item, .notifications-center .notification-list-item')
      .allInnerTexts()
      .catch(() => [] as string[]);
    return t.map((x) => x.replace(/\s+/g, ' '));
  }

  /**
   * Presses a notification's button: on its toast while one shows, else in the notification center (VS Code hides a
   * toast without progress into the center after 15 s; the button stays there). Says where it was pressed.
   */
  async pressNotificationButton(hasText: string, button: RegExp, timeoutMs = 30_000): Promise<'toast' | 'center'> {
    const inside = (where: string) =>
      this.page
        .locator(`${where} .notification-list-item`, { hasText })
        .locator('a.monaco-button, .monaco-button', { hasText: button })
        .first();
    const toast = inside('.notifications-toasts');
    if (await toast.isVisible().catch(() => false)) {
      const ok = await toast.click({ timeout: 5000 }).then(
        () => true,
        () => false,
      );
      if (ok) return 'toast';
    }
    const center = inside('.notifications-center');
    if (!(await center.isVisible().catch(() => false))) await this.runCommand('Notifications: Show Notifications');
    await center.click({ timeout: timeoutMs });
    return 'center';
  }

  /** A modal dialog open now (VS Code's .monaco-dialog-box), with its text. */
  async dialogText(): Promise<string | null> {
    const d = this.page.locator('.monaco-dialog-box');
    if (!(await d.count())) return null;
    return (
      await d
        .first()
        .innerText()
        .catch(() => '')
    ).replace(/\s+/g, ' ');
  }

  /** The frame of a webview that holds an element with this id (webviews are nested iframes of the workbench). */
  async webviewFrame(id: string, timeoutMs = 30_000): Promise<Frame> {
    return waitFor(
      `a webview frame with #${id}`,
      async () => {
        for (const f of this.page.frames()) {
          if (f === this.page.mainFrame()) continue;
          if (
            await f
              .locator(`#${id}`)
              .count()
              .catch(() => 0)
          )
            return f;
        }
        return null;
      },
      timeoutMs,
      250,
    );
  }

  /** The label of the active editor tab. */
  async activeTab(): Promise<string> {
    return (
      await this.page
        .locator('.editor-group-container.active .tabs-container .tab.active')
        .first()
        .innerText()
        .catch(() => '')
    ).trim();
  }
}
