/** The latest salvage verdict per node (shown on the node in the tree), and Keep Node Salvaged's state. */
import { EventEmitter } from 'node:events';
import type { VerdictStamp } from '../core/salvage/report/verdictStamp';
import type { WatchState } from '../core/flows/keepSalvaged';

/** Keep Node Salvaged on one node: the first full salvage, then the watch (keepSalvaged.ts drives it). */
export interface KeepStatus {
  phase: 'starting' | 'watching' | 'unreachable' | 'vanished';
  /** The watch's figures (from the core loop), once the first salvage is done. */
  watch?: WatchState;
  /** What the first salvage is doing, or why the node is not answering. */
  message?: string;
  /** The vanish report's estimate of what was written after the last sync. */
  lostBytes?: number;
  dest?: string;
}

interface SalvageVerdict {
  verdict: 'safe' | 'unsafe';
  dest: string;
  at: number;
  /** What the node looked like at the first probe after the salvage (verdictFreshness.ts); the verdict holds while it matches. */
  stamp?: VerdictStamp;
}

export class SalvageVerdicts {
  private readonly map = new Map<string, SalvageVerdict>();
  private readonly events = new EventEmitter();

  get(node: string): SalvageVerdict | undefined {
    return this.map.get(node);
  }

  set(node: string, v: SalvageVerdict): void {
    this.map.set(node, v);
    this.events.emit('change', node);
  }

  /** Nodes with a verdict. */
  nodes(): string[] {
    return [...this.map.keys()];
  }

  /** The node changed since the verdict (its servers, boot or files): the verdict is no longer shown. */
  drop(node: string): void {
    if (!this.map.delete(node)) return;
    this.events.emit('change', node);
  }

  private readonly keeping = new Map<string, KeepStatus>();

  /** Keep Node Salvaged's state of a node; undefined: off. Changes are shown by the caller (tree.refreshLive). */
  keep(node: string): KeepStatus | undefined {
    return this.keeping.get(node);
  }

  setKeep(node: string, s: KeepStatus | undefined): void {
    if (s) this.keeping.set(node, s);
    else this.keeping.delete(node);
  }

  onDidChange(fn: (node: string) => void): () => void {
    this.events.on('change', fn);
    return () => this.events.off('change', fn);
  }
}
