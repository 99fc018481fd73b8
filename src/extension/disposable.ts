/**
 * A small disposable base: objects register the children they own (listeners, timers, views,
 * other disposables) and dispose them in reverse order of registration, once.
 */
import type * as vscode from 'vscode';

interface DisposableLike {
  dispose(): unknown;
}

/** A disposable from a function (clear a timer, unsubscribe a listener). */
export function toDisposable(fn: () => unknown): vscode.Disposable {
  return { dispose: () => void fn() };
}

export class Disposables implements vscode.Disposable {
  private readonly children: DisposableLike[] = [];
  private disposed = false;

  /** Registers a child; a child registered after dispose() is disposed at once. */
  protected register<T extends DisposableLike>(child: T): T {
    if (this.disposed) void child.dispose();
    else this.children.push(child);
    return child;
  }

  get isDisposed(): boolean {
    return this.disposed;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const c of this.children.splice(0).reverse()) {
      try {
        void c.dispose();
      } catch {
        /* one child failing to dispose must not keep the others alive */
      }
    }
  }
}

/** A public store of disposables (activate() registers its top-level objects here). */
export class DisposableStore extends Disposables {
  add<T extends DisposableLike>(child: T): T {
    return this.register(child);
  }
}
