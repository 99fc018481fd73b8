/** Human-readable output of the CLI. */
import { formatBytes } from '../core/util/format';
import type { ProbeResult } from '../core/node/probe';
import { visible } from '../core/util/terminal';
import { gatewayLines } from '../core/gateway/discover';
import { rankPhrase } from '../core/gateway/multinode';
import { type RentalTerms, priceWithSource } from '../core/node/rental';

export const bytes = formatBytes;

export function gib(mib: number | null): string {
  return mib === null ? '?' : `${(mib / 1024).toFixed(1)} GiB`;
}

const na = (v: number | null, unit: string) => (v === null ? '—' : `${v}${unit}`);

/** One line per fact: node strings have their newlines and controls made visible (the CLI sink escapes the rest). */
export function formatProbe(p: ProbeResult): string {
  const L: string[] = [];
  const v = (x: string | null | undefined, dflt: string) => (x === null || x === undefined ? dflt : visible(x));
  L.push(`${v(p.node, '?')} (${v(p.hostname, '?')}) — ${v(p.os, 'unknown OS')}, ${v(p.kernel, '')}`);
  L.push(`  CPU: ${v(p.cpuModel, '?')} × ${p.cpuCores ?? '?'} cores · RAM ${p.memTotalKiB ? gib(p.memTotalKiB / 1024) : '?'}`);
  if (p.gpuState !== 'ok') {
    L.push(`  GPUs: none — ${v(p.gpuMessage, '')}`);
  } else {
    L.push(`  GPUs: ${p.gpus.length} · driver ${p.driverVersion ?? '?'} · CUDA ${p.cudaVersion ?? '?'}`);
    for (const g of p.gpus) {
      L.push(
        `    [${g.index}] ${v(g.name, '?')}  ${g.memoryUsedMiB ?? '?'} / ${g.memoryTotalMiB ?? '?'} MiB  util ${na(g.utilizationPct, '%')} ` +
          ` ${na(g.temperatureC, '°C')}  ${na(g.powerW, ' W')}`,
      );
    }
  }
  L.push(`  SGLang servers: ${p.servers.length}`);
  for (const s of p.servers) {
    const par = [
      s.tp > 1 ? `TP${s.tp}` : '',
      s.dp > 1 ? `DP${s.dp}${s.enableDpAttention ? '(attn)' : ''}` : '',
      (s.pp ?? 1) > 1 ? `PP${s.pp}` : '',
      (s.ep ?? 1) > 1 ? `EP${s.ep}` : '',
      rankPhrase(s) ?? '',
      s.statLines === false ? `no stat lines (--log-level ${s.logLevel})` : '',
    ]
      .filter(Boolean)
      .join(' ');
    const spec = s.speculativeAlgorithm ? '  spec ' + visible(s.speculativeAlgorithm) : '';
    const gpus = s.gpus.length ? '  gpu ' + s.gpus.join(',') : '';
    const log = s.logFile ? '  log ' + visible(s.logFile) : '';
    L.push(`    :${s.port}  pid ${s.pid}  ${v(s.modelPath, '?')}${par ? '  ' + par : ''}${spec}${gpus}${log}`);
  }
  for (const line of gatewayLines(p.gateways ?? [])) L.push(line);
  L.push(`  Artifacts: ${p.artifacts.length}${p.artifactsTruncated ? ' (truncated; raise the limit to see all)' : ''}`);
  const kinds = new Map<string, number>();
  for (const a of p.artifacts) kinds.set(a.kind, (kinds.get(a.kind) ?? 0) + 1);
  for (const [k, n] of kinds) L.push(`    ${k}: ${n}`);
  L.push(`  (probed in ${p.durationMs} ms, one round trip)`);
  return L.join('\n') + '\n';
}

/** The rental's terms under the probe: "  Rental: $41.93/h from runpodctl · ends 2026-12-07 18:00 UTC (from vastai)". */
export function formatRental(t: RentalTerms): string {
  const price = priceWithSource(t);
  const end = t.deadline ? `ends ${t.deadline.toISOString().slice(0, 16).replace('T', ' ')} UTC (from ${t.deadlineSource})` : null;
  if (!price && !end) return '';
  return `  Rental: ${[price, end].filter(Boolean).join(' · ')}\n`;
}
