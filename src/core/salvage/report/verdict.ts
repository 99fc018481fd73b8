/**
 * The verdict: safe only on evidence; otherwise the reasons, each with what it means. A function of the manifest and
 * the last listing; the orchestrator (flows/salvage.ts) keeps what it returns and writes the report.
 */
import { errorMessage } from '../../util/errors';
import { insideDest } from '../dest/paths';
import { uniqueWeightsMessage } from '../plan/weights';
import { SalvageManifest } from '../salvageTypes';
import { writeAtomic } from '../dest/runDir';
import { renderSalvageReport } from './report';
import type { Logger } from '../../util/logger';
import type { SalvageListing } from '../plan/listing';

/**
 * A salvage that listed nothing proves nothing: no work folder found, or none of them held a file (a wrong
 * --roots, a listing that pruned everything). Safe needs evidence, so it is unsafe, named `nothing-listed`.
 */
function nothingListed(m: SalvageManifest): string | null {
  if (m.items.some((i) => i.kind !== 'server-cmdline')) return null;
  return m.roots.length
    ? `the listing found no file under the work's folders (${m.roots.map((r) => r.path).join(', ')}): nothing shows the work is ` +
        'safe; check the folders (--roots, --add-root) and salvage again'
    : "no work folder was found on the node (no home, job or output folder): nothing shows the work is safe; name the work's " +
        'folders with --roots or --add-root and salvage again';
}

/** What the verdict sets in the manifest. */
type Verdict = Pick<SalvageManifest, 'lost' | 'leftByChoice' | 'reasonDetails' | 'reasons' | 'verdict'> &
  Partial<Pick<SalvageManifest, 'listing'>>;

/** The verdict on `m` (its items settled, S3 checked) and the run's last listing (`L`; null: none finished). */
export function judge(m: SalvageManifest, L: SalvageListing | null, modelDirs: readonly string[]): Verdict {
  const lost: SalvageManifest['lost'] = [];
  for (const it of m.items) {
    if (!it.selected || it.goneFromNode) continue;
    const inS3 = it.s3 === 'present';
    if ((it.status === 'verified' && !it.changedAfterVerify) || inS3) continue;
    lost.push({ remotePath: it.remotePath, size: it.size, why: it.reason ?? it.status });
  }
  const leftByChoice = m.items
    .filter((i) => !i.selected && i.kind !== 'symlink' && i.s3 !== 'present')
    .map((i) => ({ remotePath: i.remotePath, size: i.size, s3: i.s3 }));
  const details: SalvageManifest['reasonDetails'] = [];
  if (m.writers.length) {
    const servers = m.writers.filter((w) => w.server).length;
    const others = m.writers.length - servers;
    details.push({
      code: 'still-running',
      message:
        `${[servers ? `${servers} SGLang server(s)` : '', others ? `${others} other process(es)` : ''].filter(Boolean).join(' and ')} ` +
        `still running and writing under the folders; stop them (--stop-servers${others ? ', --stop-writers' : ''}) or wait ` +
        `until they finish, then salvage again`,
    });
  }
  const changed = m.items.filter((i) => i.changedAfterVerify && !i.goneFromNode);
  if (changed.length)
    details.push({ code: 'changed-during-run', message: `${changed.length} file(s) changed on the node after they were verified` });
  if (L?.truncated) {
    const bound =
      L.bound === 'max-depth' ? `depth bound (${L.maxDepth} levels; raise --max-depth)` : `entry bound (${L.maxFiles}; raise --max-files)`;
    details.push({
      code: 'listing-truncated',
      message:
        `the listing is incomplete: at least ${L.notListed} entr${L.notListed === 1 ? 'y was' : 'ies were'} ` +
        `not listed because the ${bound} was hit, or choose narrower --roots`,
    });
  }
  const unique = uniqueWeightsMessage(m.items, modelDirs);
  if (unique) details.push({ code: 'unique-weights', message: unique });
  const failed = m.items.filter((i) => i.selected && i.status === 'failed');
  if (failed.length) details.push({ code: 'failed-items', message: `${failed.length} selected item(s) failed to download or verify` });
  const byPath = new Map(m.items.map((i) => [i.remotePath, i]));
  const otherLost = lost.filter((l) => {
    const it = byPath.get(l.remotePath);
    return it && it.status !== 'failed' && !it.changedAfterVerify;
  });
  if (otherLost.length)
    details.push({ code: 'lost-items', message: `${otherLost.length} selected item(s) were not saved (${otherLost[0].why})` });
  const nothing = nothingListed(m);
  if (nothing) details.push({ code: 'nothing-listed', message: nothing });
  return {
    lost,
    leftByChoice,
    reasonDetails: details,
    reasons: details.map((d) => d.code),
    ...(L
      ? { listing: { truncated: L.truncated, notListed: L.notListed, bound: L.bound, maxFiles: L.maxFiles, maxDepth: L.maxDepth } }
      : {}),
    verdict: details.length === 0 ? 'safe' : 'unsafe',
  };
}

/** SALVAGE.md beside the manifest (a failed write is logged: the manifest holds the same). */
export function writeSalvageReport(dir: string, m: SalvageManifest, log: Logger): void {
  try {
    writeAtomic(insideDest(dir, 'SALVAGE.md'), renderSalvageReport(m));
  } catch (e) {
    log.error(`Could not write SALVAGE.md: ${errorMessage(e)}`);
  }
}
