/** Automatic refresh only while the view is visible, and only of nodes already probed (never code hosts). */
import * as vscode from 'vscode';
import type { Fleet } from '../core/node/fleet';
import { cfg } from './config';
import { isCodeHost } from '../core/ssh/groups';
import { Disposables, toDisposable } from './disposable';

export class AutoRefresh extends Disposables {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly view: vscode.TreeView<unknown>,
    private readonly fleet: Fleet,
  ) {
    super();
    this.register(view.onDidChangeVisibility(() => this.schedule()));
    this.register(toDisposable(() => this.timer && clearInterval(this.timer)));
    this.schedule();
  }

  schedule(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    const secs = cfg<number>('refreshIntervalSeconds', 30);
    if (!this.view.visible || !(secs > 0)) return;
    this.timer = setInterval(() => {
      // Code hosts (github.com, …) are never refreshed in the background: each probe would only log an error.
      for (const n of this.fleet.nodes())
        if (this.fleet.status(n.name).state !== 'unknown' && !isCodeHost(n)) void this.fleet.refresh(n.name);
    }, secs * 1000);
  }
}
