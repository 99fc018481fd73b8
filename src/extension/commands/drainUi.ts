/**
 * What a drain shows while it runs (it never ended while a client kept sending, Cancel was silent): why
 * it is not finishing, a "Stop now" button, the deadline (then SIGTERM), and what Cancel left running.
 */
import * as vscode from 'vscode';

/** The drain deadline: after it the server is stopped anyway (SIGTERM, then SIGKILL). */
const DRAIN_DEADLINE_MS = 5 * 60_000;

interface DrainUi {
  /** Options for core stopServer: the deadline, Stop now, progress in words. */
  opts: { drainTimeoutMs: number; stopAfterDrainTimeout: boolean; stopNow: () => boolean; onProgress: (m: string) => void };
  /** Called when the stop ended (the Stop now button goes). */
  done(): void;
}

/**
 * The "Stop now" button of a drain (a notification beside its progress), `stop` when pressed: shown when the drain
 * starts, and once more when the drain is seen stuck — VS Code hides a toast without progress into the notification
 * center after a while, so the button the progress names is offered again where the user looks.
 */
export function stopNowOffer(stop: () => void): { start(text: string): void; stuck(text: string): void } {
  const shown = new Set<'start' | 'stuck'>();
  const show = (when: 'start' | 'stuck', text: string) => {
    if (shown.has(when)) return;
    shown.add(when);
    void vscode.window.showInformationMessage(text, 'Stop now').then((c) => {
      if (c === 'Stop now') stop();
    });
  };
  return { start: (text) => show('start', text), stuck: (text) => show('stuck', text) };
}

export function drainUi(node: string, port: number, progress: vscode.Progress<{ message?: string }>): DrainUi {
  let now = false;
  const started = Date.now();
  const seen: Array<{ at: number; n: number }> = [];
  let ended = false;
  const button = stopNowOffer(() => {
    if (!ended) now = true;
  });
  const offer = () => {
    if (!ended)
      button.start(
        `GPU Sessions: draining port ${port} on ${node}. It stops by itself when its requests end, or at the deadline (5 min) with SIGTERM.`,
      );
  };
  const reoffer = () => {
    if (!ended && !now)
      button.stuck(
        `GPU Sessions: draining port ${port} on ${node} is not finishing: new requests keep arriving. ` +
          'Stop now stops it at once; otherwise SIGTERM at the deadline.',
      );
  };
  return {
    opts: {
      drainTimeoutMs: DRAIN_DEADLINE_MS,
      stopAfterDrainTimeout: true,
      stopNow: () => now,
      onProgress: (m) => {
        const n = Number(m.match(/: (\d+) running request/)?.[1] ?? NaN);
        if (!m.startsWith('draining')) return progress.report({ message: m });
        offer();
        if (Number.isFinite(n)) seen.push({ at: Date.now(), n });
        while (seen.length > 1 && Date.now() - seen[0].at > 15_000) seen.shift();
        const left = Math.max(0, Math.round((DRAIN_DEADLINE_MS - (Date.now() - started)) / 1000));
        const stuck = seen.length > 1 && Date.now() - seen[0].at >= 10_000 && seen[seen.length - 1].n >= seen[0].n && n > 0;
        const why = stuck ? ' — not finishing: new requests keep arriving (stop the client that sends them, or Stop now)' : '';
        if (stuck) reoffer();
        progress.report({ message: `${m}${why} · SIGTERM in ${Math.floor(left / 60)}:${String(left % 60).padStart(2, '0')}` });
      },
    },
    done: () => {
      ended = true;
    },
  };
}
