/** `gpu-sessions salvage NODE --dest DIR [--s3 s3://bucket/prefix] [--s3-endpoint URL] [--yes] [--json]` */
import { visible } from '../core/util/terminal';
import { GpuSessionsError } from '../core/util/errors';
import { runOperation } from '../core/remote/operation';
import { probeOperation } from '../core/node/probe';
import { parseS3Url } from '../core/salvage/s3';
import { SalvageItem, SalvageManifest, Salvager, STEPS } from '../core/salvage/salvage';
import type { Transport } from '../core/ssh/transport';
import { bytes } from './format';

export interface SalvageCliOptions {
  dest: string;
  s3?: string;
  s3Endpoint?: string;
  yes: boolean;
  json: boolean;
  includeLarge: boolean;
  sizeThreshold?: number;
  roots?: string[];
  keepSecrets: boolean;
}

export interface Io {
  out(s: string): void;
  err(s: string): void;
  isTTY: boolean;
  ask?: (q: string) => Promise<string>;
}

export function salvageJson(m: SalvageManifest): Record<string, unknown> {
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
      ...(i.redacted ? { redacted: true, localSha256: i.localSha256 } : {}),
    })),
  };
}

function summarizePlan(items: SalvageItem[]): string {
  const sel = items.filter((i) => i.selected);
  const notSel = items.filter((i) => !i.selected && i.kind !== 'symlink');
  const L = [`Plan: ${sel.length} item(s) to salvage (${bytes(sel.reduce((a, b) => a + b.size, 0))}).`];
  for (const s of STEPS.slice(0, 4)) {
    const n = sel.filter((i) => i.step === s.id);
    if (n.length) L.push(`  ${s.title}: ${n.length} (${bytes(n.reduce((a, b) => a + b.size, 0))})`);
  }
  if (notSel.length)
    L.push(
      `  Listed but not downloaded (above threshold or model weights): ${notSel.length} (${bytes(notSel.reduce((a, b) => a + b.size, 0))}); use --include-large to take them.`,
    );
  const links = items.filter((i) => i.kind === 'symlink');
  if (links.length) L.push(`  Symlinks not followed: ${links.length}`);
  return L.join('\n') + '\n';
}

export async function cmdSalvage(t: Transport, nodeName: string, o: SalvageCliOptions, io: Io, signal?: AbortSignal): Promise<number> {
  let s3 = null;
  if (o.s3) {
    const u = parseS3Url(o.s3);
    if (!u) throw new GpuSessionsError('usage', `--s3 must look like s3://bucket/prefix (got "${o.s3}").`);
    s3 = { ...u, endpoint: o.s3Endpoint, forcePathStyle: o.s3Endpoint ? true : undefined };
  }
  const probe = await runOperation(t, probeOperation(nodeName, { roots: o.roots }), signal);
  let lastLine = 0;
  const salvager = new Salvager({
    node: nodeName,
    transport: t,
    base: o.dest,
    roots: o.roots,
    servers: probe.servers,
    s3,
    sizeThreshold: o.sizeThreshold,
    keepSecrets: o.keepSecrets,
    signal,
    onProgress: (p) => {
      if (o.json) return;
      const now = Date.now();
      if (now - lastLine < 1000 && p.step !== 'verdict') return;
      lastLine = now;
      io.err(`[${p.step}] ${p.message} — ${p.filesDone}/${p.filesTotal} files, ${bytes(p.bytesDone)}/${bytes(p.bytesTotal)}\n`);
    },
  });
  const items = await salvager.plan();
  if (o.includeLarge) for (const i of items) if (!i.selected && i.localPath && i.kind !== 'symlink') i.selected = true;
  if (!o.json) io.err(summarizePlan(items));
  if (!o.yes && io.isTTY && io.ask) {
    const a = (await io.ask(`Salvage into ${salvager.dir}? [Y/n] `)).trim().toLowerCase();
    if (a === 'n' || a === 'no') {
      io.err('Nothing downloaded.\n');
      return 1;
    }
  }
  const m = await salvager.execute(items.filter((i) => i.selected).map((i) => i.remotePath));
  if (o.json) {
    io.out(JSON.stringify(salvageJson(m), null, 2) + '\n');
  } else {
    for (const s of STEPS)
      io.out(`${m.steps[s.id].status.padEnd(8)} ${s.title}${m.steps[s.id].reason ? ` — ${m.steps[s.id].reason}` : ''}\n`);
    io.out(`\nSalvaged into ${m.dest}\n`);
    if (m.verdict === 'safe') io.out(`VERDICT: safe to shut down ${m.node}.\n`);
    else {
      io.out(`VERDICT: NOT safe to shut down ${m.node}: ${m.lost.length} item(s) would be lost:\n`);
      // one line per item: a name or reason from the node cannot start a line of its own
      for (const l of m.lost.slice(0, 30)) io.out(`  ${visible(l.remotePath)} (${bytes(l.size)}): ${visible(l.why)}\n`);
      if (m.lost.length > 30) io.out(`  … and ${m.lost.length - 30} more (see SALVAGE.md)\n`);
    }
    io.out(`Report: ${m.dest}/SALVAGE.md\n`);
  }
  return m.verdict === 'safe' ? 0 : 5;
}
