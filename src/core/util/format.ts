/** A count or a rate rounded to a whole number with thousands separators ("1,987"). */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Human-readable sizes and durations, shared by the CLI, the reports and the tree. */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 1024) return `${n} B`;
  const u = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v >= 100 ? 0 : 1)} ${u[i]}`;
}

/** "1 h 20 min", "45 min", "30 s", "3 d 4 h" (the sign is dropped: say "ago" / "after" around it). */
export function formatDuration(s: number): string {
  const a = Math.abs(Math.round(s));
  if (a < 60) return `${a} s`;
  const h = Math.floor(a / 3600);
  const m = Math.floor((a % 3600) / 60);
  if (h >= 48) return `${Math.floor(h / 24)} d ${h % 24} h`;
  return h ? `${h} h ${m} min` : `${m} min`;
}
