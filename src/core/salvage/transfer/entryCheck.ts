/**
 * Proof that each verified file's local name holds its own bytes, on a destination that folds names (a Mac's APFS,
 * exFAT, SMB, FAT under FUSE). There a rename onto a name that folds to another item's would replace that item's
 * file while both still read "verified". Twins get distinct names before any write (LocalNames); this is the check
 * after the last rename: every verified item's local entry exists, has the verified size, and is no other item's
 * file (device and inode). An item that fails it is failed (by the caller), never reported verified.
 */
import { statSync } from 'node:fs';
import { insideDest } from '../dest/paths';
import type { SalvageItem } from '../salvageTypes';

/** Check `items` (verified ones only) under `dir`; returns the ones to fail, and why (in order: one may come twice). */
export function confirmLocalEntries(dir: string, items: readonly SalvageItem[]): { item: SalvageItem; reason: string }[] {
  const owner = new Map<string, SalvageItem>();
  const failed: { item: SalvageItem; reason: string }[] = [];
  const fail = (item: SalvageItem, reason: string) => failed.push({ item, reason });
  for (const it of items) {
    if (it.status !== 'verified' || !it.localPath || it.kind === 'symlink' || it.kind === 'git-state') continue;
    let st: { dev: bigint; ino: bigint; size: bigint; isFile(): boolean };
    try {
      st = statSync(insideDest(dir, it.localPath), { bigint: true });
    } catch (e) {
      fail(
        it,
        `its local copy ${it.localPath} is missing after the transfer (${(e as NodeJS.ErrnoException).code ?? 'error'}); run salvage again`,
      );
      continue;
    }
    if (!st.isFile()) continue;
    const key = `${st.dev}:${st.ino}`;
    const other = owner.get(key);
    if (other && st.ino !== 0n) {
      fail(it, `its local name ${it.localPath} reaches the same file as ${other.localPath} on this destination; run salvage again`);
      fail(other, `its local file was replaced by ${it.remotePath}'s (their names are one on this destination); run salvage again`);
      continue;
    }
    owner.set(key, it);
    if (!it.redacted && st.size !== BigInt(it.size))
      fail(it, `its local copy holds ${st.size} B, not the ${it.size} B verified; run salvage again`);
  }
  return failed;
}
