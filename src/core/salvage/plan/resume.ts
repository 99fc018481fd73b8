/**
 * Resume: the verified local copies an earlier run of this folder left, trusted only when their bytes still hash the same.
 */
import { existsSync } from 'node:fs';
import { insideDest } from '../dest/paths';
import type { SalvageRun } from '../salvageRun';
import { isFileItem } from '../salvageUtil';

/** Local copies a previous run verified: candidates for "unchanged" (no transfer) or "grew" (append only). */
export function resumeFromPrevious(sv: SalvageRun): void {
  const prev = sv.previous;
  if (!prev) return;
  const byPath = new Map(prev.items.map((i) => [i.remotePath, i]));
  for (const it of sv.manifest.items) {
    if (!it.selected || it.status !== 'pending' || !isFileItem(it)) continue;
    const p = byPath.get(it.remotePath);
    if (!p || p.status !== 'verified' || p.localPath !== it.localPath || !p.sha256) continue;
    if (!existsSync(insideDest(sv.dir, it.localPath!))) continue;
    sv.bases.set(it.remotePath, {
      size: p.size,
      mtime: p.mtime,
      sha256: p.sha256,
      localSha256: p.localSha256 ?? p.sha256,
      redacted: !!p.redacted,
      md5: p.md5 ?? null,
      trusted: false,
    });
    if (p.secrets) it.secrets = p.secrets;
  }
}
