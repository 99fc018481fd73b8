/**
 * `watch` reports the node's own guard: on the first read, what it did so far in one line (the away
 * summary); afterwards each new journal event as it comes. The guard is read at most once a minute, in its own exec;
 * a node that never ran a guard prints nothing.
 */
import { runOperation } from '../core/remote/operation';
import { GuardEvent, guardStatusOperation } from '../core/guard/operations';
import { awaySummary } from '../core/guard/summary';
import type { Transport } from '../core/ssh/transport';
import { visible } from '../core/util/terminal';

const EVERY_MS = 60_000;

type GuardLine =
  | { type: 'guard-summary'; node: string; time: string; running: boolean; summary: string }
  | ({ type: 'guard-event'; node: string; time: string; event: string } & Record<string, unknown>);

export class GuardFollow {
  private last = 0;
  private seen: string | null = null;
  private first = true;

  constructor(private readonly node: string) {}

  /** Read the guard when due; the lines to print (none when nothing is new or there is no guard). */
  async poll(t: Transport, signal?: AbortSignal, now = Date.now()): Promise<GuardLine[]> {
    if (now - this.last < EVERY_MS) return [];
    this.last = now;
    let g;
    try {
      g = await runOperation(t, guardStatusOperation(200), signal);
    } catch {
      return []; // the node's own problems are the probe's to report
    }
    if (!g.running && !g.startedAt && !g.journal.length) return [];
    const fresh: GuardEvent[] = g.journal.filter((e) => this.seen === null || e.t > this.seen);
    for (const e of fresh) if (this.seen === null || e.t > this.seen) this.seen = e.t;
    const time = new Date(now).toISOString();
    if (this.first) {
      this.first = false;
      return [{ type: 'guard-summary', node: this.node, time, running: g.running, summary: awaySummary(g.journal) }];
    }
    return fresh.map((e) => {
      const { t: at, event, ...rest } = e;
      return { ...rest, type: 'guard-event' as const, node: this.node, time: at, event };
    });
  }
}

/** The text form of a guard line. */
export function formatGuardLine(l: GuardLine): string {
  const hhmmss = (iso: string) => /T(\d\d:\d\d:\d\d)/.exec(iso)?.[1] ?? iso;
  if (l.type === 'guard-summary')
    return `${hhmmss(l.time)}  ${visible(l.node)}  guard ${l.running ? 'running' : 'not running'}: ${visible(l.summary)}`;
  const detail = ['copied', 'verdict', 'action', 'why', 'path']
    .filter((k) => l[k] !== undefined)
    .map((k) => `${k} ${String(l[k]).slice(0, 120)}`)
    .join(', ');
  return `${hhmmss(l.time)}  ${visible(l.node)}  guard: ${visible(l.event)}${detail ? ` (${visible(detail)})` : ''}`;
}
