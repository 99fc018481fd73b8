/**
 * What happened while the laptop was away, in one line, from the guard's journal:
 * "job done 03:12 · synced · rental stopped 03:40". Times are the journal's (UTC, HH:MM).
 */
import type { GuardEvent, GuardStatus } from './operations';
import { formatBytes } from '../util/format';

const hhmm = (t: string) => /T(\d\d:\d\d)/.exec(t)?.[1] ?? t.slice(0, 16);

/** The events since `since` (ISO; default all of them), the ones that matter, oldest first. */
export function awaySummary(journal: GuardEvent[], since?: string): string {
  const parts: string[] = [];
  let synced = 0;
  for (const e of journal) {
    if (since && e.t < since) continue;
    switch (e.event) {
      case 'sync':
        synced += Number(e.copied) || 0;
        break;
      case 'job-done':
        parts.push(
          `job done ${hhmm(e.t)}` +
            (e.verdict === 'safe'
              ? ' · synced'
              : Array.isArray(e.reasons) && e.reasons.includes('nothing-listed')
                ? ' · nothing listed under the folders (not safe)'
                : ` · NOT all synced (${Number(e.filesAtRisk) || 0} files at risk)`),
        );
        break;
      case 'rental-ended':
        parts.push(`rental ${e.action === 'terminate' ? 'terminated' : 'stopped'} ${hhmm(e.t)}`);
        break;
      case 'rental-not-ended':
        parts.push(`rental NOT ended ${hhmm(e.t)} (${String(e.why ?? '?').slice(0, 80)})`);
        break;
      case 'rental-kept':
        parts.push(`rental kept ${hhmm(e.t)}: ${String(e.why ?? '').slice(0, 80)}`);
        break;
      case 'data-degenerate':
        parts.push(`degenerate data ${hhmm(e.t)}`);
        break;
      case 'last-gasp':
        parts.push(`shutdown ${hhmm(e.t)} · last sync`);
        break;
      case 'until-reached':
        parts.push(`stopped at --until ${hhmm(e.t)}`);
        break;
      case 'crashed':
        parts.push(`guard crashed ${hhmm(e.t)}`);
        break;
      case 'disk-almost-full':
        parts.push(`disk almost full ${hhmm(e.t)}`);
        break;
      case 'credential-near-expiry':
      case 'credential-expired':
        parts.push(`${e.event.replace('-', ' ')} ${hhmm(e.t)}`);
        break;
    }
  }
  if (synced) parts.unshift(`${synced} file${synced === 1 ? '' : 's'} copied, verified`);
  return parts.join(' · ') || 'nothing happened';
}

/** The Guard row's text: "Guard running · synced 03:12 (42 files) · 1.2 MiB at risk · when done: stop". */
export function guardRowText(g: GuardStatus): { label: string; detail: string; tooltip: string; ok: boolean } {
  const at = (t: string) => /T(\d\d:\d\d)/.exec(t)?.[1] ?? t;
  const sync = g.lastVerifiedSync ? `synced ${at(g.lastVerifiedSync.at)} UTC (${g.lastVerifiedSync.files} files)` : 'no verified sync yet';
  const risk =
    g.bytesAtRisk !== null ? `${formatBytes(g.bytesAtRisk)} at risk${g.filesAtRisk ? ` (${g.filesAtRisk} files)` : ''}` : 'at risk unknown';
  const policy = g.settings ? `when done: ${g.settings.whenDone}` : '';
  const last = g.journal.slice(-5).map((e) => `${e.t}  ${e.event}`);
  return {
    label: g.running ? 'Guard running' : 'Guard stopped',
    detail: [sync, risk, policy].filter(Boolean).join(' · '),
    tooltip:
      `The node's own guard (gpu-sessions guard): ${g.running ? `running, pid ${g.pid}` : 'not running'}\n` +
      (g.settings ? `Target ${g.settings.target}, every ${g.settings.intervalS} s, when the job is done: ${g.settings.whenDone}\n` : '') +
      (g.roots.length ? `Folders: ${g.roots.join(', ')}\n` : '') +
      (last.length ? `\nLatest events:\n${last.join('\n')}` : ''),
    ok: g.running && (g.bytesAtRisk ?? 0) === 0,
  };
}
