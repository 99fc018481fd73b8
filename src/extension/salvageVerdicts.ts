/** The latest salvage verdict per node (shown on the node in the tree). */
import { EventEmitter } from 'node:events';

export interface SalvageVerdict {
  verdict: 'safe' | 'unsafe';
  dest: string;
  at: number;
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

  onDidChange(fn: (node: string) => void): () => void {
    this.events.on('change', fn);
    return () => this.events.off('change', fn);
  }
}
