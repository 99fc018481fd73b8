/**
 * Fixed-capacity FIFO that drops the oldest item when full (the recent lines a tail keeps).
 */
// ---------------------------------------------------------------------------------------------------------
// Ring buffer

/** Fixed-capacity FIFO that drops the oldest item when full. */
export class RingBuffer<T> {
  private buf: Array<T | undefined>;
  private head = 0;
  private len = 0;
  private droppedCount = 0;
  readonly capacity: number;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1)
      throw new RangeError(`RingBuffer capacity must be a positive integer, got ${capacity}`);
    this.capacity = capacity;
    this.buf = new Array<T | undefined>(Math.min(capacity, 1024));
  }

  push(x: T): void {
    const cap = this.capacity;
    if (this.len < cap) {
      const i = (this.head + this.len) % cap;
      if (i >= this.buf.length) this.grow(i + 1);
      this.buf[i] = x;
      this.len++;
    } else {
      this.buf[this.head] = x;
      this.head = (this.head + 1) % cap;
      this.droppedCount++;
    }
  }

  /** Oldest first. */
  toArray(): T[] {
    const out = new Array<T>(this.len);
    for (let k = 0; k < this.len; k++) out[k] = this.buf[(this.head + k) % this.capacity] as T;
    return out;
  }

  get length(): number {
    return this.len;
  }

  /** Items pushed out since construction or the last clear(). */
  get dropped(): number {
    return this.droppedCount;
  }

  clear(): void {
    this.buf = new Array<T | undefined>(Math.min(this.capacity, 1024));
    this.head = 0;
    this.len = 0;
    this.droppedCount = 0;
  }

  private grow(min: number): void {
    // Only while the buffer has not wrapped yet (len < capacity, head == 0), so indices stay valid.
    const n = Math.min(this.capacity, Math.max(min, this.buf.length * 2));
    const b = new Array<T | undefined>(n);
    for (let k = 0; k < this.buf.length; k++) b[k] = this.buf[k];
    this.buf = b;
  }
}
