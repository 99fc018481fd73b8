/** The restore result as the CLI's --json (the contract) and as text (CLI, VS Code review and log). */
import { formatBytes as bytes } from '../util/format';
import { visible } from '../util/terminal';
import type { RestoreResult } from './restore';

export function restoreJson(r: RestoreResult): Record<string, unknown> {
  return {
    node: r.node,
    from: r.from,
    mapped: r.mapped,
    files: {
      uploaded: r.files.uploaded,
      unchanged: r.files.unchanged,
      bytes: r.files.bytes,
      conflicts: r.files.conflicts,
      kept: r.files.kept,
      keptReasons: r.files.keptReasons,
      failed: r.files.failed,
      git: r.files.git,
      ...(r.files.toUpload !== undefined ? { toUpload: r.files.toUpload } : {}),
    },
    ...(r.fromGuard
      ? { fromGuard: { fetched: r.fromGuard.fetched, present: r.fromGuard.present, failed: r.fromGuard.failed.length } }
      : {}),
    ...(r.launch ? { launch: r.launch } : {}),
    client: r.client,
    messages: r.messages,
    exitCode: r.exitCode,
  };
}

/**
 * The restore as text. Every path and reason is one line whatever it holds (node names can carry newlines and
 * escapes: they are shown as `\u000a`, never as a line of their own that could forge a review line).
 */
export function renderRestore(r: RestoreResult): string {
  const L: string[] = [];
  const v = (s: string) => visible(s);
  L.push(`Restore of ${r.from.node} (${r.from.run}) onto ${r.node}`);
  for (const m of r.mapped) L.push(`  ${v(m.from)} → ${v(m.to)}`);
  const g = r.fromGuard;
  if (g) L.push(`  from the node guard's S3 copy: ${g.fetched} file(s) read, ${g.present} already here, ${g.failed.length} failed`);
  const f = r.files;
  L.push(
    f.toUpload !== undefined
      ? `Files: ${f.toUpload} to send (${bytes(f.bytes)}), ${f.unchanged} already there, ${f.conflicts.length} conflict(s).`
      : `Files: ${f.uploaded} sent (${bytes(f.bytes)}), ${f.unchanged} already there (not sent again), ${f.conflicts.length} conflict(s).`,
  );
  for (const c of f.conflicts) L.push(`  CONFLICT ${v(c.path)}: ${v(c.reason)}`);
  for (const c of f.failed) L.push(`  FAILED ${v(c.path)}: ${v(c.reason)}`);
  if (f.keptReasons.length) {
    L.push(`  Not restored, kept as ${r.node} has it (${f.keptReasons.length}; --include-dotfiles PATH restores one):`);
    for (const k of f.keptReasons.slice(0, 30)) L.push(`    ${v(k.path)}: ${v(k.reason)}`);
    if (f.keptReasons.length > 30) L.push(`    … and ${f.keptReasons.length - 30} more (--json lists them all)`);
  }
  for (const g of f.git) L.push(`  git ${v(g.path)}: ${g.state} — ${v(g.reason)}`);
  if (r.launch) {
    L.push(`Launch: ${r.launch.outcome}`);
    for (const n of r.launch.notes) L.push(`  ${n}`);
    for (const x of r.launch.refusals) L.push(`  REFUSED: ${x}`);
    for (const x of r.launch.warnings) L.push(`  warning: ${x}`);
    for (const s of r.launch.servers)
      L.push(`  port ${s.port} GPU ${s.gpus.join(',')}${s.state ? ` ${s.state}` : ''}${s.error ? `: ${s.error}` : ''}`);
    if (r.launch.outcome === 'dry-run')
      L.push('--- launch script (dry run: nothing started) ---', r.launch.script.replace(/\n$/, ''), '---');
  }
  if (r.client) {
    L.push(
      r.client.started
        ? `Generation client started (pid ${r.client.pid}), log ${r.client.log}:`
        : 'Resume the generation client on the new node with:',
    );
    L.push(`  ${r.client.command}`);
    if (r.client.secretEnv.length) L.push(`  (it had ${r.client.secretEnv.join(', ')} set: set them on ${r.node} first)`);
    if (r.client.error) L.push(`  ${r.client.error}`);
    else if (!r.client.started) L.push('  (--resume-client starts it)');
  }
  for (const m of r.messages) L.push(m);
  if (r.exitCode === 9)
    L.push(`${r.files.conflicts.length} conflict(s) left as they are: resolve them, or rerun with --force to replace them.`);
  return L.join('\n') + '\n';
}
