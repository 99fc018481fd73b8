/**
 * The machine's own facts — hostname, OS, kernel, uptime, CPU model and count, memory — as the probe and the
 * environment snapshot both read them: one shell fragment per fact and one parser, so the two never drift.
 */
import { firstLine } from '../remote/sections';
import { nodeScript } from '../util/nodeScripts';

/** Shell lines printing the facts' sections (`sec NAME` comes from the caller's section prologue). */
export function hostFactsScript(boundBytes = 65536): string {
  return `gs_hf_bound=${boundBytes}\n${nodeScript('node/hostFacts.sh')}`;
}

export interface HostFacts {
  hostname: string | null;
  os: string | null;
  kernel: string | null;
  uptimeS: number | null;
  cpuModel: string | null;
  cpuCores: number | null;
  memTotalKiB: number | null;
  memAvailableKiB: number | null;
  swapTotalKiB: number | null;
}

/**
 * The facts from their sections' text. The CPU model line is x86's `model name`, or `Model` / `Hardware` on
 * ARM (Grace); the core count is the last bare number (nproc). Memory counts are KiB, as /proc/meminfo says.
 */
export function parseHostFacts(get: (section: string) => string | undefined): HostFacts {
  const osRel = get('os') ?? '';
  const pretty = /^PRETTY_NAME="?([^"\n]*)"?/m.exec(osRel);
  const cpu = get('cpu') ?? '';
  const model = /^(?:model name|Model|Hardware)\s*:\s*(.*)$/m.exec(cpu)?.[1]?.trim();
  const cores = cpu
    .split('\n')
    .map((x) => x.trim())
    .filter((x) => /^\d+$/.test(x));
  const mem = get('mem') ?? '';
  const kib = (k: string) => {
    const m = new RegExp(`^${k}:\\s*(\\d+)`, 'm').exec(mem);
    return m ? Number(m[1]) : null;
  };
  const upText = (get('uptime') ?? '').trim().split(/\s+/)[0];
  const up = upText ? Number(upText) : NaN;
  return {
    hostname: firstLine(get('hostname')),
    os: pretty?.[1] ?? null,
    kernel: firstLine(get('kernel')),
    uptimeS: Number.isFinite(up) ? Math.round(up) : null,
    cpuModel: model || null,
    cpuCores: cores.length ? Number(cores[cores.length - 1]) : null,
    memTotalKiB: kib('MemTotal'),
    memAvailableKiB: kib('MemAvailable'),
    swapTotalKiB: kib('SwapTotal'),
  };
}
