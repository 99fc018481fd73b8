/**
 * Keep Node Salvaged in VS Code: per node, one full salvage (everything of value, no review), then the
 * core watch loop (core/flows/keepSalvaged.ts, the one `gpu-sessions salvage --watch` runs) until it is turned
 * off or the node vanishes. Its state lives in SalvageVerdicts (the tree's row reads it there); the rows
 * are re-rendered in place after each sync and every few seconds ("synced 40 s ago"). Disposing stops
 * every watch and the ticker.
 */
import * as vscode from 'vscode';
import type { Salvager, SalvageManifest, SalvageProgress } from '../core/flows/salvage';
import { keepSalvaged } from '../core/flows/keepSalvaged';
import { errorMessage } from '../core/util/errors';
import type { Logger } from '../core/util/logger';
import type { KeepStatus, SalvageVerdicts } from './salvageVerdicts';

interface KeepSalvagedDeps {
  verdicts: SalvageVerdicts;
  /** Re-render a node's live rows. */
  refresh(node: string): void;
  log: Logger;
  /** Told when a node vanished during its watch (a notification in the extension). */
  onVanished?(node: string, m: SalvageManifest): void;
}

interface Run {
  ac: AbortController;
  /** Settles when the watch has ended (turned off, vanished or failed). */
  done: Promise<void>;
}

const TICK_MS = 5000;

export class KeepSalvaged implements vscode.Disposable {
  private readonly runs = new Map<string, Run>();
  private ticker: ReturnType<typeof setInterval> | undefined;

  constructor(private readonly deps: KeepSalvagedDeps) {}

  isOn(node: string): boolean {
    return this.runs.has(node);
  }

  /**
   * Turns it on: resolves with the first full salvage's manifest (the watch then runs on), or undefined
   * when that salvage failed or was turned off meanwhile. `make` builds the node's Salvager.
   */
  async start(
    node: string,
    intervalS: number,
    make: (signal: AbortSignal, onProgress: (p: SalvageProgress) => void) => Promise<Salvager>,
  ): Promise<SalvageManifest | undefined> {
    if (this.runs.has(node)) await this.stop(node);
    const ac = new AbortController();
    let first!: (m: SalvageManifest | undefined) => void;
    const firstDone = new Promise<SalvageManifest | undefined>((r) => (first = r));
    const set = (s: KeepStatus | undefined) => {
      if (ac.signal.aborted && s) return;
      this.deps.verdicts.setKeep(node, s);
      this.deps.refresh(node);
    };
    const run: Run = { ac, done: Promise.resolve() };
    this.runs.set(node, run);
    set({ phase: 'starting', message: 'first full salvage…' });
    run.done = (async () => {
      let lastShown = 0;
      try {
        const salvager = await make(ac.signal, (p) => {
          if (Date.now() - lastShown < 1000) return;
          lastShown = Date.now();
          set({ phase: 'starting', message: `first full salvage: ${p.filesDone}/${p.filesTotal} files` });
        });
        const m = await salvager.run(); // no review: the preselection, as the watch keeps it
        if (!m || ac.signal.aborted) return first(undefined);
        this.deps.verdicts.set(node, { verdict: m.verdict ?? 'unsafe', dest: m.dest, at: Date.now() });
        set({ phase: 'watching', dest: m.dest });
        this.tick();
        first(m);
        const r = await keepSalvaged(salvager, {
          intervalS,
          signal: ac.signal,
          onSync: (watch) => set({ phase: 'watching', watch: { ...watch }, dest: m.dest }),
          onUnreachable: (watch, message) => set({ phase: 'unreachable', watch: { ...watch }, message, dest: m.dest }),
        });
        if (r.outcome === 'vanished') {
          this.deps.verdicts.setKeep(node, { phase: 'vanished', watch: r.state, lostBytes: r.atRiskBytes, dest: m.dest });
          this.deps.refresh(node);
          this.deps.log.warn(`Keep salvaged: ${node} vanished; last synced ${r.state.lastSyncedAt ?? 'never'} → ${m.dest}`);
          this.deps.onVanished?.(node, m);
        }
      } catch (e) {
        if (!ac.signal.aborted) this.deps.log.error(`Keep salvaged: ${node}: ${errorMessage(e)}`);
        first(undefined);
        if (!ac.signal.aborted) {
          this.deps.verdicts.setKeep(node, undefined);
          this.deps.refresh(node);
        }
        throw e;
      } finally {
        if (this.runs.get(node) === run) this.runs.delete(node);
        this.tick();
      }
    })();
    run.done.catch(() => undefined);
    const m = await firstDone;
    if (!m) await run.done; // the first salvage failed: its error reaches the caller
    return m;
  }

  /** Turns it off: the watch ends between syncs (the manifest stays consistent); the row goes. */
  async stop(node: string): Promise<void> {
    const run = this.runs.get(node);
    this.deps.verdicts.setKeep(node, undefined);
    this.deps.refresh(node);
    if (!run) return;
    run.ac.abort();
    await run.done.catch(() => undefined);
    this.deps.verdicts.setKeep(node, undefined);
    this.deps.refresh(node);
  }

  /** The ticker runs while a watch does: "synced N s ago" moves on between syncs. */
  private tick(): void {
    const watching = [...this.runs.keys()].filter((n) => this.deps.verdicts.keep(n)?.phase !== 'starting');
    if (watching.length && !this.ticker)
      this.ticker = setInterval(() => {
        for (const n of this.runs.keys()) this.deps.refresh(n);
      }, TICK_MS);
    else if (!this.runs.size && this.ticker) {
      clearInterval(this.ticker);
      this.ticker = undefined;
    }
  }

  dispose(): void {
    for (const r of this.runs.values()) r.ac.abort();
    this.runs.clear();
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = undefined;
  }
}
