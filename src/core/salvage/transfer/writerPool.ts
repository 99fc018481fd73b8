/**
 * The writer threads that small-file batches share. Creating a file is mostly kernel time (the file system's inode
 * allocation, measured at 100–250 µs a file on this project's ext4 right after a large removal), and a single writer
 * thread was the stage every other one waited on while a core sat idle; batches running in parallel therefore
 * write through several threads, each batch through one (its files stay in order), the least busy one first.
 */
import { availableParallelism } from 'node:os';
import { BatchWriter } from './batchWriter';

/** Writer threads for `streams` parallel batches: no more than the batches, the machine's cores, or 4. */
export function writerCount(streams: number, cores = availableParallelism(), env = process.env.GS_SALVAGE_WRITERS): number {
  const asked = Math.floor(Number(env));
  const want = asked >= 1 ? asked : Math.min(streams, cores);
  return Math.max(1, Math.min(want, 4));
}

export class WriterPool {
  private readonly slots: Array<{ w: BatchWriter; batches: number }> = [];
  /** Idle time of the threads already closed (ms). */
  private closedIdle = 0;

  constructor(private readonly start: () => BatchWriter) {}

  /** A writer for one batch (a dead one is replaced); call the returned release when the batch is done. */
  take(count: number): { writer: BatchWriter; release: () => void } {
    for (let i = this.slots.length - 1; i >= 0; i--) {
      if (this.slots[i].w.alive) continue;
      this.closedIdle += this.slots[i].w.idleMs() ?? 0;
      this.slots.splice(i, 1);
    }
    let slot = this.slots.reduce<(typeof this.slots)[number] | null>((a, s) => (!a || s.batches < a.batches ? s : a), null);
    if (!slot || (slot.batches > 0 && this.slots.length < count)) {
      slot = { w: this.start(), batches: 0 };
      this.slots.push(slot);
    }
    const s = slot;
    s.batches++;
    return { writer: s.w, release: () => void s.batches-- };
  }

  get size(): number {
    return this.slots.length;
  }

  /** Stops every thread; resolves to their summed idle time (ms; null when none ran in a thread). */
  async close(): Promise<number | null> {
    const slots = this.slots.splice(0);
    const idles = slots.map((s) => (s.w.alive ? s.w.idleMs() : null));
    await Promise.all(slots.map((s) => s.w.close()));
    const known = idles.filter((x): x is number => x !== null);
    return known.length || this.closedIdle ? known.reduce((a, b) => a + b, this.closedIdle) : null;
  }
}
