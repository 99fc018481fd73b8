/**
 * Whether the code running now was started by the user (a command, a click) or by a background loop (the
 * auto-refresh, the live guard's poll, a reconnect). Questions that block — a host key to trust — are asked only
 * in the first case (Stop Demo Node raised a modal host-key dialog from a background reconnect).
 * Node's AsyncLocalStorage follows the call through promises, timers and socket callbacks it starts.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

const store = new AsyncLocalStorage<string>();

/** Runs fn as the user's action named `what` (a command id). */
export function asUserAction<T>(what: string, fn: () => T): T {
  return store.run(what, fn);
}

/** The user's action the current code runs for, or undefined in a background loop. */
export function currentUserAction(): string | undefined {
  return store.getStore();
}
