/**
 * Resume without loss: skips a file's catch-up backlog up to the anchor after a reconnect.
 */
import { FALLBACK_MAX } from './tailCommand';

// ---------------------------------------------------------------------------------------------------------
// Resume: find where we left off in a file's catch-up backlog

type SkipMode = 'skip' | 'search' | 'line';

/** Consumes a file's catch-up backlog and passes on only what follows the resume point. */
export class ResumeSkipper {
  found = false;
  total = 0;
  private keep: Buffer[] = [];
  private kept = 0;
  private dropped = 0;
  private tailBytes: Buffer = Buffer.alloc(0);

  /**
   * mode 'search': pass what follows the first occurrence of `anchor`; 'skip': drop `skip` bytes; 'line': drop
   * through the first "\n" (a backlog that starts mid-line).
   */
  constructor(
    readonly mode: SkipMode,
    private readonly anchor: Buffer,
    private skip = 0,
    private readonly fallbackMax = FALLBACK_MAX,
  ) {
    if (mode === 'search' && anchor.length === 0) throw new Error('ResumeSkipper: empty anchor');
  }

  /** Bytes to pass on (null: none yet). */
  push(b: Buffer): Buffer | null {
    this.total += b.length;
    if (this.found) return b;
    if (this.mode === 'skip') {
      if (this.skip >= b.length) {
        this.skip -= b.length;
        return null;
      }
      this.found = true;
      return b.subarray(this.skip);
    }
    if (this.mode === 'line') {
      const nl = b.indexOf(10);
      if (nl < 0) return null;
      this.found = true;
      return b.subarray(nl + 1);
    }
    const a = this.anchor;
    const A = a.length;
    if (this.tailBytes.length > 0) {
      // a match that starts in the previous chunks and ends in this one
      const st = Buffer.concat([this.tailBytes, b.subarray(0, Math.min(b.length, A - 1))]);
      const i = st.indexOf(a);
      if (i >= 0) {
        const end = i + A - this.tailBytes.length;
        this.found = true;
        this.release();
        return b.subarray(end);
      }
    }
    const j = b.indexOf(a);
    if (j >= 0) {
      this.found = true;
      this.release();
      return b.subarray(j + A);
    }
    this.keepForFallback(b);
    const t = A - 1;
    if (t > 0) {
      if (b.length >= t) this.tailBytes = Buffer.from(b.subarray(b.length - t));
      else {
        const c = Buffer.concat([this.tailBytes, b]);
        this.tailBytes = c.length > t ? Buffer.from(c.subarray(c.length - t)) : c;
      }
    }
    return null;
  }

  /** At the end of the backlog: the anchor was not found → the last ≤ fallbackMax bytes (and how many were dropped before them). */
  finish(): { found: boolean; fallback: Buffer; droppedBytes: number } {
    const fb = this.found ? Buffer.alloc(0) : Buffer.concat(this.keep);
    const r = { found: this.found, fallback: fb, droppedBytes: this.dropped };
    this.release();
    return r;
  }

  private keepForFallback(b: Buffer): void {
    if (this.mode !== 'search') return;
    this.keep.push(Buffer.from(b));
    this.kept += b.length;
    while (this.kept > this.fallbackMax && this.keep.length > 0) {
      const over = this.kept - this.fallbackMax;
      const first = this.keep[0];
      if (first.length <= over) {
        this.keep.shift();
        this.kept -= first.length;
        this.dropped += first.length;
      } else {
        this.keep[0] = first.subarray(over);
        this.kept -= over;
        this.dropped += over;
      }
    }
  }

  private release(): void {
    this.keep = [];
    this.kept = 0;
    this.tailBytes = Buffer.alloc(0);
  }
}
