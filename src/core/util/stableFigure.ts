/**
 * A figure shown to people that does not saw-tooth ($/Mtok jumped 0.83–1.42 at a constant rate): two
 * significant digits, and a new value replaces the shown one only when it differs by more than `band` (default 10 %).
 */
export class StableFigure {
  private shown: number | null = null;

  constructor(private readonly band = 0.1) {}

  /** The value to show now, given the latest measurement (null: unknown). */
  next(v: number | null): number | null {
    if (v === null || !Number.isFinite(v)) return this.shown;
    if (this.shown === null || Math.abs(v - this.shown) > this.band * Math.max(Math.abs(this.shown), 1e-9)) this.shown = roundSig(v, 2);
    return this.shown;
  }
}

/** `v` to `digits` significant digits (0.8347 → 0.83, 1234 → 1200). */
export function roundSig(v: number, digits: number): number {
  if (v === 0 || !Number.isFinite(v)) return v;
  const p = 10 ** (digits - 1 - Math.floor(Math.log10(Math.abs(v))));
  return Math.round(v * p) / p;
}
