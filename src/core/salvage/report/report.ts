/**
 * SALVAGE.md: the human report of a salvage run, rendered from its manifest.
 */
import { formatBytes } from '../../util/format';
import { mdCodeCell, mdText } from '../../util/terminal';
import { renderDataSection } from '../../data/salvageRecord';
import { redactText } from '../../util/redact';
import { LeftReason } from '../plan/listing';
import { ReasonCode, STEPS, SalvageManifest } from '../salvageTypes';

/** Node strings in SALVAGE.md: escaped text (no markup, HTML, links or controls) or fenced code spans. */
const mdCell = mdText;

const REASON_TITLE: Record<ReasonCode, string> = {
  'still-running': 'still running',
  'changed-during-run': 'files changed during the run',
  'listing-truncated': 'listing incomplete',
  'failed-items': 'items failed',
  'lost-items': 'items not saved',
  'unique-weights': 'weights of unknown origin left on the node',
  'nothing-listed': 'nothing was listed',
};

export function renderSalvageReport(m: SalvageManifest): string {
  const L: string[] = [];
  const code = (p: string) => mdCodeCell(p);
  L.push(`# Salvage of ${mdCell(m.node)}`, '');
  L.push(
    m.verdict === 'safe'
      ? `## ✅ Safe to shut down`
      : `## ❌ Not safe to shut down — ${(m.reasons ?? []).map((r) => REASON_TITLE[r] ?? r).join(', ') || `${m.lost.length} item(s) would be lost`}`,
    '',
  );
  if (m.vanished) {
    L.push(
      '## ⚠️ The node vanished during the watch',
      '',
      `- Gone since ${m.vanished.at} (${mdCell(m.vanished.error)})`,
      `- Last synced ${m.vanished.lastSyncedAt ?? 'never'}: everything listed below as verified was saved as of then`,
      `- Estimated lost (written on the node after the last sync): ${formatBytes(m.vanished.atRiskBytes)} in ${m.vanished.atRiskFiles} file(s)`,
      '',
    );
  }
  for (const d of m.reasonDetails ?? []) L.push(`- **${d.code}**: ${mdCell(d.message)}`);
  if (m.reasonDetails?.length) L.push('');
  L.push(...renderDataSection(m.data));
  if (m.deadline) {
    const d = m.deadline;
    const rate = d.rateBps ? `${formatBytes(d.rateBps)}/s, about ${d.etaS} s for the bulk data` : 'not known yet';
    const fit =
      d.fits === true
        ? 'everything fits in time'
        : d.fits === false
          ? `${d.wontMakeIt.length} file(s) were not expected to make it:`
          : 'whether it fits could not be told';
    L.push(
      `## ⏱ Rental deadline ${d.at}`,
      '',
      `- Planned with ${d.secondsLeft > 0 ? `${Math.round(d.secondsLeft / 60)} min left` : 'the rental already over'}: ` +
        `${formatBytes(d.remainingBytes)} of bulk data, most valuable ` +
        `per byte first (scripts, configs, progress, logs, then data, smaller first)`,
      `- Measured rate: ${rate}; ${fit}`,
    );
    for (const w of d.wontMakeIt.slice(0, 50)) L.push(`  - ${code(w.remotePath)} (${formatBytes(w.size)})`);
    if (d.wontMakeIt.length > 50) L.push(`  - … and ${d.wontMakeIt.length - 50} more`);
    L.push('');
  }
  const jobWeights = m.items.filter((i) => i.jobWeights && !i.selected);
  if (jobWeights.length) {
    L.push('> ⚠️ **Weights the job wrote are left on the node** (above the size threshold; they cannot be downloaded again):', '>');
    for (const i of jobWeights.slice(0, 50)) L.push(`> - ${code(i.remotePath)} (${formatBytes(i.size)})`);
    L.push('>', '> Take them with `--include-large` (or select them in the review), or upload them.', '');
  }
  if (m.writers?.length) {
    L.push('## Still running', '', '| pid | command | writes |', '|---|---|---|');
    for (const w of m.writers)
      L.push(
        `| ${w.pid}${w.server ? ' (SGLang)' : ''} | ${code(w.command.slice(0, 160))} | ${w.writes.slice(0, 5).map(code).join('<br>') || '—'} |`,
      );
    L.push('');
  }
  L.push(`- Started ${m.startedAt}, finished ${m.finishedAt ?? '—'}`);
  const hostKey = m.host.hostKeyFingerprint ? ` (host key ${mdCell(String(m.host.hostKeyFingerprint))})` : '';
  L.push(`- Node: ${mdCell(String(m.host.user ?? ''))}@${mdCell(String(m.host.host ?? ''))}:${m.host.port ?? ''}${hostKey}`);
  L.push(
    `- Size threshold ${formatBytes(m.sizeThreshold)}; copies are ${m.redact ? 'redacted where secrets were found (--redact)' : "the node's exact bytes"}`,
  );
  const verified = m.items.filter((i) => i.status === 'verified');
  L.push(`- Saved and verified: ${verified.length} item(s), ${formatBytes(verified.reduce((a, b) => a + b.size, 0))}`);
  if (m.stats) L.push(`- Transferred in this run: ${m.stats.filesTransferred} file(s), ${formatBytes(m.stats.bytesTransferred)}`);
  if (m.s3) {
    const endpoint = m.s3.endpoint ? ` (${mdCell(m.s3.endpoint)})` : '';
    const outcome = m.s3.error ? `error: ${mdCell(m.s3.error)}` : `${m.s3.objects} objects, ${formatBytes(m.s3.bytes)}`;
    L.push(`- S3: ${mdCell(m.s3.target)}${endpoint} — ${outcome}`);
  }
  if (m.environment) L.push(`- Environment: ${mdCell(m.environment.summary)} — see [environment.md](environment.md)`);
  for (const s of m.stopped ?? []) L.push(`- Stopped: ${mdCell(s.message)}`);
  L.push('');
  L.push('## Folders', '', '| folder | why |', '|---|---|');
  for (const r of m.roots) L.push(`| ${code(typeof r === 'string' ? r : r.path)} | ${mdCell(typeof r === 'string' ? '' : r.why)} |`);
  L.push('');
  L.push('## Checklist', '');
  for (const s of STEPS) {
    const st = m.steps[s.id];
    const icon = st.status === 'done' ? '✅' : st.status === 'failed' ? '❌' : st.status === 'skipped' ? '⏭️' : '…';
    L.push(`- ${icon} **${s.title}** — ${st.status}${st.reason ? `: ${mdCell(st.reason)}` : ''}`);
  }
  L.push('');
  if (m.lost.length) {
    L.push('## Would be lost', '', '| remote path | size | why |', '|---|---|---|');
    for (const l of m.lost) L.push(`| ${code(l.remotePath)} | ${formatBytes(l.size)} | ${mdCell(l.why)} |`);
    L.push('');
  }
  const withSecrets = m.items.filter((i) => i.secrets?.length);
  if (withSecrets.length) {
    L.push(
      '## Secrets found in saved files',
      '',
      'Line numbers and kinds only; the copies hold the original bytes unless written with `--redact`.',
      '',
    );
    L.push('| file | lines | kinds |', '|---|---|---|');
    for (const i of withSecrets.slice(0, 500))
      L.push(
        `| ${code(i.remotePath)}${i.redacted ? ' (copy redacted)' : ''} | ${i
          .secrets!.map((x) => x.line)
          .slice(0, 20)
          .join(', ')} | ${[...new Set(i.secrets!.map((x) => x.kind))].join(', ')} |`,
      );
    L.push('');
  }
  const left = m.items.filter((i) => i.leftReason);
  if (left.length) {
    L.push('## Left on the node', '', '| reason | remote path | size | S3 |', '|---|---|---|---|');
    const order: LeftReason[] = [
      'origin-unknown',
      'secret-store',
      'large',
      'in-s3',
      'guard-s3',
      'on-the-hub',
      'redownloadable-weights',
      'deselected',
      'cache',
    ];
    left.sort((a, b) => order.indexOf(a.leftReason!) - order.indexOf(b.leftReason!));
    for (const i of left.slice(0, 1000))
      L.push(
        `| ${i.leftReason}${i.kind === 'cache' ? ` (${i.files ?? 0} files)` : ''} | ${code(i.remotePath)} | ${formatBytes(i.size)} | ${i.s3} |`,
      );
    if (left.length > 1000) L.push(`| … | ${left.length - 1000} more (see salvage-manifest.json) | | |`);
    L.push('');
  }
  L.push('## Items', '', '| status | kind | remote path | size | sha256 | S3 |', '|---|---|---|---|---|---|');
  for (const it of m.items.filter((i) => !i.leftReason).slice(0, 2000)) {
    L.push(
      `| ${it.status}${it.redacted ? ' (redacted copy)' : ''}${it.goneFromNode ? ' (gone from node)' : ''} | ${it.kind} ` +
        `| ${code(it.remotePath)} | ${formatBytes(it.size)} | ${it.sha256 ? '`' + it.sha256.slice(0, 16) + '…`' : '—'} | ${it.s3} |`,
    );
  }
  if (m.items.length > 2000) L.push(`| … | | ${m.items.length - 2000} more items in salvage-manifest.json | | | |`);
  L.push('');
  return redactText(L.join('\n'));
}
