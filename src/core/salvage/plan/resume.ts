/**
 * Resume: the verified local copies an earlier run of this folder left, trusted only when their bytes still hash the same.
 */
import { existsSync } from 'node:fs';
import { insideDest } from '../dest/paths';
import type { SalvageItem, SalvageManifest } from '../salvageTypes';
import { LocalBase, isFileItem } from '../salvageUtil';

/** A local copy a previous run verified for `item`, and the secrets it found in it. */
interface ResumeBase {
  item: SalvageItem;
  base: LocalBase;
  secrets: SalvageItem['secrets'];
}

/** Local copies a previous run verified: candidates for "unchanged" (no transfer) or "grew" (append only). */
export function resumeFromPrevious(previous: SalvageManifest | null, items: readonly SalvageItem[], dir: string): ResumeBase[] {
  if (!previous) return [];
  const out: ResumeBase[] = [];
  const byPath = new Map(previous.items.map((i) => [i.remotePath, i]));
  for (const it of items) {
    if (!it.selected || it.status !== 'pending' || !isFileItem(it)) continue;
    const p = byPath.get(it.remotePath);
    if (!p || p.status !== 'verified' || p.localPath !== it.localPath || !p.sha256) continue;
    if (!existsSync(insideDest(dir, it.localPath!))) continue;
    out.push({
      item: it,
      base: {
        size: p.size,
        mtime: p.mtime,
        sha256: p.sha256,
        localSha256: p.localSha256 ?? p.sha256,
        redacted: !!p.redacted,
        md5: p.md5 ?? null,
        trusted: false,
      },
      secrets: p.secrets,
    });
  }
  return out;
}
