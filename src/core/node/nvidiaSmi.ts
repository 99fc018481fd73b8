/**
 * nvidia-smi output parsers. Formats: ../shared/reference/sglang-and-nvidia-smi.md.
 * Parse by field, keep `[N/A]`-style values as unknown (null), never throw.
 */

export interface GpuInfo {
  index: number;
  name: string;
  uuid: string | null;
  memoryTotalMiB: number | null;
  memoryUsedMiB: number | null;
  utilizationPct: number | null;
  temperatureC: number | null;
  powerW: number | null;
}

export interface GpuProcess {
  pid: number | null;
  processName: string;
  usedMemoryMiB: number | null;
  /** GPU index, known only from the banner's process table. */
  gpuIndex: number | null;
}

const GPU_QUERY_FIELDS = 'index,name,uuid,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw';
export const GPU_QUERY_ARGS = [`--query-gpu=${GPU_QUERY_FIELDS}`, '--format=csv,noheader,nounits'];
export const COMPUTE_APPS_ARGS = ['--query-compute-apps=pid,process_name,used_memory', '--format=csv'];

/** `[N/A]`, `[Not Supported]`, `N/A`, `[Unknown Error]`, `[GPU is lost]`, `` → null; `612.45 W`, `87 %`, `1234 MiB` → number. */
export function smiNumber(v: string | undefined): number | null {
  if (v === undefined) return null;
  const s = v.trim();
  if (!s || s.startsWith('[') || /^n\/?a$/i.test(s)) return null;
  const m = /^(-?\d+(?:\.\d+)?)/.exec(s);
  if (!m) return null;
  const n = Number(m[1]);
  return Number.isFinite(n) ? n : null;
}

function smiString(v: string | undefined): string | null {
  if (v === undefined) return null;
  const s = v.trim();
  if (!s || s.startsWith('[') || /^n\/?a$/i.test(s)) return null;
  return s;
}

/**
 * Lines of `--query-gpu=index,name,uuid,memory.total,memory.used,utilization.gpu,temperature.gpu,power.draw
 * --format=csv,noheader,nounits`.
 */
export function parseGpuQuery(text: string): GpuInfo[] {
  const gpus: GpuInfo[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line) continue;
    let f = line.split(',').map((x) => x.trim());
    if (f.length < 8) continue;
    if (f.length > 8) {
      // A name containing a comma: index first, the six last fields are fixed.
      f = [f[0], f.slice(1, f.length - 6).join(', '), ...f.slice(f.length - 6)];
    }
    const index = smiNumber(f[0]);
    if (index === null || !/^\d+$/.test(f[0])) continue;
    gpus.push({
      index,
      name: smiString(f[1]) ?? 'Unknown GPU',
      uuid: smiString(f[2]),
      memoryTotalMiB: smiNumber(f[3]),
      memoryUsedMiB: smiNumber(f[4]),
      utilizationPct: smiNumber(f[5]),
      temperatureC: smiNumber(f[6]),
      powerW: smiNumber(f[7]),
    });
  }
  return gpus;
}

interface SmiBanner {
  smiVersion: string | null;
  driverVersion: string | null;
  cudaVersion: string | null;
  processes: GpuProcess[];
  /** GPUs from the banner's table (names may be cut with "..."; no UUID): a fallback for the query. */
  gpus: GpuInfo[];
}

/** GPU rows of the banner: `|   0  NVIDIA B200   On  |   00000000:63:00.0 Off |` then the figures line. */
export function parseBannerGpus(text: string): GpuInfo[] {
  const lines = text.split(/\r?\n/);
  const gpus: GpuInfo[] = [];
  for (let i = 0; i < lines.length - 1; i++) {
    const m = /^\|\s+(\d+)\s+(.+?)\s+(On|Off|N\/A)\s*\|\s*[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d/.exec(lines[i]);
    if (!m) continue;
    const f = lines[i + 1];
    const mem = /(\d+)MiB\s*\/\s*(\d+)MiB/.exec(f);
    const temp = /\s(\d+)C\s/.exec(f);
    const pw = /(\d+(?:\.\d+)?)W\s*\/\s*(?:\d+(?:\.\d+)?W|N\/A)/.exec(f);
    const util = /\|\s*(\d+)%\s/.exec(f);
    gpus.push({
      index: Number(m[1]),
      name: m[2].trim(),
      uuid: null,
      memoryTotalMiB: mem ? Number(mem[2]) : null,
      memoryUsedMiB: mem ? Number(mem[1]) : null,
      utilizationPct: util ? Number(util[1]) : null,
      temperatureC: temp ? Number(temp[1]) : null,
      powerW: pw ? Number(pw[1]) : null,
    });
  }
  return gpus;
}

/**
 * The banner of plain `nvidia-smi`. Labels differ by driver generation ("Driver Version",
 * "CUDA Version", "CUDA Driver Version", "CUDA UMD Version", "KMD Version", `:` with or without spaces),
 * so match the family. Also reads the Processes table (GPU index, PID, type, name, memory).
 */
export function parseSmiBanner(text: string): SmiBanner {
  const smi = /NVIDIA-SMI\s+(?:version\s*:\s*)?([0-9][\w.-]*)/i.exec(text);
  const driver = /(?<!CUDA\s)(?:Driver|KMD)\s+Version\s*:\s*([0-9][\w.-]*)/i.exec(text);
  const cuda = /CUDA(?:\s+(?:UMD|Driver|Runtime|Toolkit))?\s+Version\s*:\s*([0-9][\d.]*)/i.exec(text);
  const processes: GpuProcess[] = [];
  const lines = text.split(/\r?\n/);
  const start = lines.findIndex((l) => /\|\s*Processes\s*:/i.test(l));
  if (start >= 0) {
    for (const l of lines.slice(start + 1)) {
      const inner = l
        .replace(/^\s*\|/, '')
        .replace(/\|\s*$/, '')
        .trim();
      if (
        !inner ||
        /^[=+-]+$/.test(inner) ||
        /^GPU\s/.test(inner) ||
        /^ID\s/.test(inner) ||
        (/Usage\s*$/.test(inner) && !/\d+MiB/.test(inner))
      )
        continue;
      if (/No running processes found/i.test(inner)) break;
      const tok = inner.split(/\s+/);
      const gpu = Number(tok[0]);
      if (!/^\d+$/.test(tok[0])) continue;
      // Find the Type token (C, G, C+G, M, M+C); the PID precedes it.
      const ti = tok.findIndex((t, i) => i >= 2 && /^(C|G|C\+G|M|M\+C|M\+G)$/.test(t) && /^\d+$/.test(tok[i - 1]));
      if (ti < 0) continue;
      const pid = Number(tok[ti - 1]);
      const memTok = tok[tok.length - 1];
      const mem = /MiB$/i.test(memTok) ? smiNumber(memTok) : null;
      const name = tok.slice(ti + 1, mem === null && !/^N\/A$/i.test(memTok) ? tok.length : tok.length - 1).join(' ');
      processes.push({ gpuIndex: gpu, pid, processName: name, usedMemoryMiB: mem });
    }
  }
  // Before the label changed, NVIDIA-SMI's own version always equalled the driver's: use it as a fallback.
  return {
    smiVersion: smi?.[1] ?? null,
    driverVersion: driver?.[1] ?? smi?.[1] ?? null,
    cudaVersion: cuda?.[1] ?? null,
    processes,
    gpus: parseBannerGpus(text),
  };
}

/** `--query-compute-apps=pid,process_name,used_memory --format=csv` (header line first; header only when none). */
export function parseComputeApps(text: string): GpuProcess[] {
  const out: GpuProcess[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || /^pid\s*,/i.test(line)) continue;
    const f = line.split(',').map((x) => x.trim());
    if (f.length < 3) continue;
    const pid = smiNumber(f[0]);
    if (f[0] && !/^\d+$/.test(f[0]) && !f[0].startsWith('[')) continue;
    out.push({
      pid: pid === null ? null : Math.trunc(pid),
      processName: f.slice(1, f.length - 1).join(', '),
      usedMemoryMiB: smiNumber(f[f.length - 1]),
      gpuIndex: null,
    });
  }
  return out;
}

export interface LostGpu {
  /** GPU index when known (inferred from the gap in the indices the other GPUs report), else null. */
  index: number | null;
  /** PCI bus id as nvidia-smi names it ("00000000:61:00.0"), or null. */
  busId: string | null;
  /** nvidia-smi's line for it, e.g. "Unable to determine the device handle for GPU00000000:61:00.0: Unknown Error". */
  message: string;
}

/**
 * Lines nvidia-smi prints for GPUs it cannot read while the others still report ("Unable to determine the
 * device handle for GPU<bus-id>: Unknown Error", "... GPU is lost ..."). `reported` are the indices the
 * query did return: a lost GPU's index is inferred when the gaps in 0..n-1 match the lost lines one to one.
 */
export function parseLostGpus(text: string, reported: number[]): LostGpu[] {
  const out: LostGpu[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.length > 1000) continue;
    if (!/Unable to determine the device handle|GPU is lost|has fallen off the bus/i.test(line)) continue;
    const bus = /GPU\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d)/.exec(line);
    out.push({ index: null, busId: bus ? bus[1] : null, message: line });
    if (out.length >= 64) break;
  }
  if (out.length) {
    const have = new Set(reported);
    const n = reported.length + out.length;
    const gaps: number[] = [];
    for (let i = 0; i < n; i++) if (!have.has(i)) gaps.push(i);
    if (gaps.length === out.length) gaps.forEach((g, k) => (out[k].index = g));
  }
  return out;
}

export type GpuState = 'ok' | 'no-nvidia-smi' | 'no-driver' | 'no-gpu' | 'error';

/** Decide what a failing nvidia-smi means: missing binary, no driver, no device — states, not crashes. */
export function classifySmiFailure(rc: number | null, output: string): { state: GpuState; message: string } {
  const text = output.trim();
  if (rc === 0) return { state: 'ok', message: '' };
  if (rc === 127 || /not found|No such file/i.test(text))
    return { state: 'no-nvidia-smi', message: 'nvidia-smi is not installed (no NVIDIA driver on this node).' };
  if (/couldn't communicate with the NVIDIA driver|NVIDIA driver is not loaded|Driver\/library version mismatch/i.test(text)) {
    return { state: 'no-driver', message: text.split('\n')[0] };
  }
  if (/No devices were found/i.test(text)) return { state: 'no-gpu', message: 'No NVIDIA GPU was found on this node.' };
  return { state: 'error', message: `nvidia-smi failed (exit ${rc}): ${text.split('\n').slice(0, 2).join(' ')}` };
}
