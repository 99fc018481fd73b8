/** A count or a rate rounded to a whole number with thousands separators ("1,987"). */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}

/** Human-readable sizes, shared by the CLI, the reports and the tree. */
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
