/**
 * `gpu-sessions salvage NODE --dest DIR [--roots A,B] [--add-root DIR] [--stop-servers] [--drain] [--stop-writers]
 *  [--redact] [--no-gitignore] [--include-large] [--s3 s3://bucket/prefix] [--s3-endpoint URL] [--yes] [--json]`
 */
import { visible } from '../core/util/terminal';
import { GpuSessionsError } from '../core/util/errors';
import { runOperation } from '../core/remote/operation';
import { probeOperation } from '../core/node/probe';
import { parseS3Url } from '../core/salvage/s3/s3';
import { SalvageItem, SalvageManifest, Salvager, STEPS } from '../core/flows/salvage';
import type { Transport } from '../core/ssh/transport';
import { bytes } from './format';
import { keepSalvaged } from '../core/flows/keepSalvaged';
import { PhaseTimer, connectNow, formatTimings } from '../core/salvage/report/timings';
import type { CliIo } from './cliNode';

interface SalvageCliOptions {
  dest: string;
  s3?: string;
  s3Endpoint?: string;
  yes: boolean;
  json: boolean;
  includeLarge: boolean;
  /** Paths on the node whose weights of unknown origin may stay (`--leave`). */
  leave?: string[];
  /** Provider volumes to look at (the demo: none; its node is this machine). */
  volumes?: string[];
  sizeThreshold?: number;
  roots?: string[];
  addRoots?: string[];
  /** @deprecated copies are exact by default now; see redact. */
  keepSecrets?: boolean;
  redact?: boolean;
  gitignore?: boolean;
  stopServers?: boolean;
  drain?: boolean;
  stopWriters?: boolean;
  maxFiles?: number;
  maxDepth?: number;
  /** Keep the node salvaged: sync every intervalS seconds until Ctrl-C or the node vanishes. */
  watch?: boolean;
  intervalS?: number;
  uploadMissing?: boolean;
  /** Download the files the node's guard verified in S3 too (default: they count as saved where they are). */
  downloadGuarded?: boolean;
  partSizeMiB?: number;
  /** How long the node may be unreachable before the last synced state becomes final. */
  graceS?: number;
  /** The rental's end: most valuable per byte first, and what will not make it named before the bulk data. */
  deadline?: Date | null;
  /** `--verbose`: the phase timings on stderr at the end. */
  verbose?: boolean;
}

function salvageJson(m: SalvageManifest): Record<string, unknown> {
  return {
    verdict: m.verdict,
    dest: m.dest,
    node: m.node,
    startedAt: m.startedAt,
    finishedAt: m.finishedAt,
    steps: m.steps,
    s3: m.s3,
    environment: m.environment ?? null,
    lost: m.lost,
    reasons: m.reasons,
    reasonDetails: m.reasonDetails,
    roots: m.roots,
    writers: m.writers.map((w) => ({ pid: w.pid, command: w.command, writes: w.writes, server: w.server })),
    stopped: m.stopped,
    stats: m.stats,
    listing: m.listing,
    uploads: m.uploads ?? [],
    data: m.data ?? null,
    // the node's own guard: its --to folder left out, and how many items its S3 copy counted
    guard: m.guard ?? null,
    deadline: m.deadline ?? null,
    timings: m.timings ?? null,
    items: m.items.map((i) => ({
      remotePath: i.remotePath,
      localPath: i.localPath ? `${m.dest}/${i.localPath}` : null,
      kind: i.kind,
      size: i.size,
      mtime: i.mtime,
      sha256: i.sha256,
      status: i.status === 'pending' ? 'skipped' : i.status,
      reason: i.reason,
      s3: i.s3,
      leftReason: i.leftReason,
      secrets: i.secrets ?? [],
      ...(i.kind === 'cache' ? { files: i.files ?? 0 } : {}),
      ...(i.linkTarget !== undefined ? { linkTarget: i.linkTarget } : {}),
      ...(i.jobWeights ? { jobWeights: true } : {}),
      ...(i.leaveAccepted ? { leaveAccepted: true } : {}),
      ...(i.guardS3 ? { guardS3: i.guardS3 } : {}),
      ...(i.goneFromNode ? { goneFromNode: true } : {}),
      ...(i.changedAfterVerify ? { changedAfterVerify: true } : {}),
      ...(i.redacted ? { redacted: true, localSha256: i.localSha256 } : {}),
    })),
  };
}

function summarizePlan(items: SalvageItem[], m: SalvageManifest): string {
  const sel = items.filter((i) => i.selected);
  const L = [`Folders:`];
  for (const r of m.roots) L.push(`  ${r.path} — ${r.why}`);
  L.push(`Plan: ${sel.length} item(s) to salvage (${bytes(sel.reduce((a, b) => a + b.size, 0))}).`);
  for (const s of STEPS.slice(0, 4)) {
    const n = sel.filter((i) => i.step === s.id);
    if (n.length) L.push(`  ${s.title}: ${n.length} (${bytes(n.reduce((a, b) => a + b.size, 0))})`);
  }
  const by = new Map<string, SalvageItem[]>();
  for (const i of items) if (i.leftReason) by.set(i.leftReason, [...(by.get(i.leftReason) ?? []), i]);
  for (const [r, list] of by)
    L.push(
      `  Left on the node (${r}${r === 'large' || r === 'on-the-hub' || r === 'origin-unknown' ? '; --include-large takes them' : ''}): ` +
        `${list.length} (${bytes(list.reduce((a, b) => a + b.size, 0))})`,
    );
  const g = m.guard;
  if (g?.counted)
    L.push(
      `  The node's guard verified ${g.counted} more file(s) in ${g.s3}` +
        `${g.s3Error ? ' (its journal: S3 could not be read back here)' : ''}: counted as saved, not downloaded (--download-guarded takes them).`,
    );
  if (g?.to) L.push(`  The guard's copy ${g.to} is not listed (it is the guard's, not the work).`);
  const jw = items.filter((i) => i.jobWeights && !i.selected);
  if (jw.length) L.push(`  WARNING: ${jw.length} weight file(s) the job wrote are above the threshold and left on the node.`);
  if (m.writers.length) L.push(`  Still running: ${m.writers.map((w) => `pid ${w.pid}${w.server ? ' (SGLang)' : ''}`).join(', ')}`);
  return L.join('\n') + '\n';
}

export async function cmdSalvage(t: Transport, nodeName: string, o: SalvageCliOptions, io: CliIo, signal?: AbortSignal): Promise<number> {
  let s3 = null;
  if (o.uploadMissing && !o.s3)
    throw new GpuSessionsError('usage', '--upload-missing needs --s3 s3://bucket/prefix (where the node should upload).');
  if (o.s3) {
    const u = parseS3Url(o.s3);
    if (!u) throw new GpuSessionsError('usage', `--s3 must look like s3://bucket/prefix (got "${o.s3}").`);
    s3 = { ...u, endpoint: o.s3Endpoint, forcePathStyle: o.s3Endpoint ? true : undefined };
  }
  // `total` counts from the process's start (what the person typing the command waits); `connect` until SSH is ready.
  const timer = new PhaseTimer(0);
  await connectNow(t);
  timer.add('connect', performance.now());
  // The probe (servers with their GPUs) runs while the node is listed; without it the listing's own scan names them.
  const probe = runOperation(t, probeOperation(nodeName, { roots: o.roots }), signal).then(
    (p) => p.servers,
    () => [],
  );
  let lastLine = 0;
  const salvager = new Salvager({
    node: nodeName,
    transport: t,
    base: o.dest,
    roots: o.roots,
    servers: probe,
    timer,
    s3,
    addRoots: o.addRoots,
    sizeThreshold: o.sizeThreshold,
    redact: o.redact,
    gitignore: o.gitignore,
    stopServers: o.stopServers,
    drain: o.drain,
    stopWriters: o.stopWriters,
    maxFiles: o.maxFiles,
    maxDepth: o.maxDepth,
    uploadMissing: o.uploadMissing,
    downloadGuarded: o.downloadGuarded,
    partSize: o.partSizeMiB ? o.partSizeMiB * 1048576 : undefined,
    deadline: o.deadline,
    includeLarge: o.includeLarge,
    leave: o.leave,
    volumes: o.volumes,
    signal,
    // the CLI's review: the plan on stderr, then one question unless --yes (or not a terminal)
    review: async (items, manifest) => {
      if (!o.json) io.err(summarizePlan(items, manifest));
      if (o.yes || !io.isTTY || !io.ask) return undefined;
      const a = (await io.ask(`Salvage into ${manifest.dest}? [Y/n] `)).trim().toLowerCase();
      if (a !== 'n' && a !== 'no') return undefined;
      io.err('Nothing downloaded.\n');
      return null;
    },
    onProgress: (p) => {
      if (o.json) return;
      const now = Date.now();
      // the deadline plan is said once, before the bulk data, and never dropped by the throttle
      if (now - lastLine < 1000 && p.step !== 'verdict' && !p.message.startsWith('The rental ends')) return;
      lastLine = now;
      io.err(`[${p.step}] ${p.message} — ${p.filesDone}/${p.filesTotal} files, ${bytes(p.bytesDone)}/${bytes(p.bytesTotal)}\n`);
    },
  });
  const m = await salvager.run();
  if (!m) return 1;
  if (o.watch) return watchLoop(salvager, o, io, signal);
  m.timings = timer.result();
  if (o.verbose) io.err(`timings: ${formatTimings(m.timings)}\n`);
  if (o.json) {
    io.out(JSON.stringify(salvageJson(m), null, 2) + '\n');
  } else {
    for (const s of STEPS)
      io.out(`${m.steps[s.id].status.padEnd(8)} ${s.title}${m.steps[s.id].reason ? ` — ${m.steps[s.id].reason}` : ''}\n`);
    io.out(`\nSalvaged into ${m.dest}\n`);
    if (m.deadline) {
      const d = m.deadline;
      const outcome =
        d.fits === true
          ? 'everything fitted in time'
          : d.fits === false
            ? `${d.wontMakeIt.length} file(s) were not expected to make it (see SALVAGE.md)`
            : 'the rate was not known before the bulk data';
      io.out(`Deadline ${d.at}: ${outcome}\n`);
    }
    if (m.verdict === 'safe') io.out(`VERDICT: safe to shut down ${m.node}.\n`);
    else {
      io.out(`VERDICT: NOT safe to shut down ${m.node}: ${m.reasons.join(', ')}\n`);
      // one line per entry: a name or reason from the node cannot start a line of its own
      for (const d of m.reasonDetails) io.out(`  ${d.code}: ${visible(d.message)}\n`);
      for (const w of m.writers.slice(0, 20))
        io.out(`  running: pid ${w.pid} ${visible(w.command.slice(0, 100))}${w.writes.length ? ` → ${visible(w.writes[0])}` : ''}\n`);
      if (m.lost.length) io.out(`${m.lost.length} item(s) would be lost:\n`);
      for (const l of m.lost.slice(0, 30)) io.out(`  ${visible(l.remotePath)} (${bytes(l.size)}): ${visible(l.why)}\n`);
      if (m.lost.length > 30) io.out(`  … and ${m.lost.length - 30} more (see SALVAGE.md)\n`);
    }
    for (const f of m.data?.files.filter((x) => x.verdict !== 'ok') ?? [])
      io.out(`DATA ${f.verdict}: ${visible(f.path)}: ${visible(f.reasons[0] ?? '')}\n`);
    io.out(`Transferred ${m.stats.filesTransferred} file(s), ${bytes(m.stats.bytesTransferred)}.\nReport: ${m.dest}/SALVAGE.md\n`);
  }
  return m.verdict === 'safe' ? 0 : 5;
}

/** `--watch`: the core loop (core/flows/keepSalvaged.ts), its syncs on stderr, the final state on stdout. */
async function watchLoop(salvager: Salvager, o: SalvageCliOptions, io: CliIo, signal?: AbortSignal): Promise<number> {
  const m = salvager.manifest;
  const intervalS = o.intervalS ?? 60;
  if (!o.json) io.err(`[watch] keeping ${m.node} salvaged every ${intervalS} s into ${m.dest} (Ctrl-C stops)\n`);
  const r = await keepSalvaged(salvager, {
    intervalS,
    graceS: o.graceS,
    signal,
    onSync: (s, x) => {
      if (!o.json)
        io.err(
          `[watch] ${s.lastSyncedAt} synced: ${x.fetchedFiles} file(s), ${bytes(x.fetchedBytes)} fetched (${bytes(x.changedBytes)} had changed)\n`,
        );
    },
    onUnreachable: (_s, msg) => {
      if (!o.json) io.err(`[watch] ${m.node} not reachable: ${msg}\n`);
    },
  });
  const vanished = r.outcome === 'vanished';
  if (o.json)
    io.out(
      JSON.stringify(
        {
          ...salvageJson(m),
          lastSyncedAt: r.state.lastSyncedAt,
          atRiskBytes: vanished ? r.atRiskBytes : r.state.unsyncedBytes,
          syncs: r.state.syncs,
          vanished,
          ...(vanished ? {} : { interrupted: true }),
        },
        null,
        2,
      ) + '\n',
    );
  else io.out(`Watch ended: last synced ${r.state.lastSyncedAt ?? 'never'}; report ${m.dest}/SALVAGE.md\n`);
  return vanished ? 5 : 130;
}
