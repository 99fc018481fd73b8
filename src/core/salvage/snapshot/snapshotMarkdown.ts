/**
 * The snapshot as Markdown (ENVIRONMENT.md): tables, exact command lines, notable environment.
 */
import { metricsSummary, parseMetrics } from '../../sglang/endpoints';
import { shq } from '../../util/quote';
import { REDACTED, redactText } from '../../util/redact';
import { mdFence, mdText } from '../../util/terminal';
import { EnvSnapshot, KEY_PACKAGES } from './snapshotTypes';

// ------------------------------------------------------------------------------------ markdown

const fence = mdFence;

function cell(v: unknown): string {
  if (v === null || v === undefined || v === '') return '—';
  return mdText(String(v));
}

function table(head: string[], rows: unknown[][]): string {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join(
    '\n',
  );
}

function kib(n: number | null): string | null {
  if (n === null || !Number.isFinite(n)) return null;
  const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 || i === 0 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}

function shWord(a: string): string {
  return shq(a);
}

/** argv as a readable shell command: one `--flag value` per line. */
function renderCommand(argv: string[], envPrefix: Record<string, string> = {}): string {
  const prefix = Object.entries(envPrefix).map(([k, v]) => `${k}=${shWord(v)}`);
  const firstFlag = argv.findIndex((a, i) => i > 0 && a.startsWith('--'));
  const head = (firstFlag < 0 ? argv : argv.slice(0, firstFlag)).map(shWord);
  const lines = [[...prefix, ...head].join(' ')];
  if (firstFlag >= 0) {
    const rest = argv.slice(firstFlag);
    for (let i = 0; i < rest.length; i++) {
      const a = rest[i];
      if (a.startsWith('--') && !a.includes('=') && rest[i + 1] !== undefined && !rest[i + 1].startsWith('--')) {
        lines.push(`  ${shWord(a)} ${shWord(rest[i + 1])}`);
        i++;
      } else lines.push(`  ${shWord(a)}`);
    }
  }
  return lines.join(' \\\n');
}

const NOTABLE_ENV = new RegExp(
  '^(CUDA_|NCCL_|SGLANG_|HF_|HUGGING|TRANSFORMERS_|TORCH|TRITON_|FLASHINFER_|' +
    'VIRTUAL_ENV$|CONDA_PREFIX$|PYTHONPATH$|LD_LIBRARY_PATH$|PATH$|OMP_NUM_THREADS$|' +
    'NVIDIA_|VLLM_|UCX_|GLOO_|MASTER_)',
);

/** A string from the node as Markdown text (`dflt` when absent, as is). */
function t(v: string | null | undefined, dflt: string): string {
  return v === null || v === undefined ? dflt : mdText(v);
}

/** A collapsed block: `<details>` with a summary and a fenced body. */
function details(summary: string, body: string, lang: string): string[] {
  return [`<details><summary>${summary}</summary>`, '', fence(body, lang), '', '</details>', ''];
}

function summarySection(s: EnvSnapshot): string[] {
  const gpuNames = new Map<string, number>();
  for (const g of s.gpus.devices) gpuNames.set(g.name ?? 'unknown GPU', (gpuNames.get(g.name ?? 'unknown GPU') ?? 0) + 1);
  const gpuSummary = [...gpuNames.entries()].map(([n, c]) => `${c}× ${n}`).join(', ') || (s.gpus.gpuMessage ?? 'none');
  const kp = s.keyPackages;
  const cpu = [
    s.cpu.model,
    s.cpu.cores !== null ? `${s.cpu.cores} logical CPUs` : null,
    s.cpu.sockets !== null ? `${s.cpu.sockets} socket(s)` : null,
    s.cpu.numaNodes !== null ? `${s.cpu.numaNodes} NUMA node(s)` : null,
  ]
    .filter(Boolean)
    .join(', ');
  const rows: unknown[][] = [
    ['Hostname', s.hostname],
    ['OS', s.os],
    ['Kernel', s.kernel],
    ['CPU', cpu],
    ['RAM', s.memory.totalKiB !== null ? `${kib(s.memory.totalKiB)} total, ${kib(s.memory.availableKiB) ?? '?'} available` : null],
    ['GPUs', gpuSummary],
    ['NVIDIA driver', s.gpus.driverVersion],
    ['CUDA (driver)', s.gpus.cudaVersion],
    ['CUDA toolkit (nvcc)', s.gpus.nvcc],
    ['Python', s.python.version ? `${s.python.version} (${s.python.executable ?? '?'})` : s.python.executable],
    ['SGLang', kp['sglang']],
    ['PyTorch', kp['torch'] ? `${kp['torch']}${kp['torch.cuda'] ? ` (CUDA ${kp['torch.cuda']})` : ''}` : null],
    ['SGLang servers', s.servers.length ? s.servers.map((x) => x.port).join(', ') : 'none'],
  ];
  return ['## Summary', '', table(['', ''], rows), ''];
}

function gpuSection(s: EnvSnapshot): string[] {
  const out = ['## GPUs', ''];
  if (s.gpus.gpuState !== 'ok') out.push(`**${t(s.gpus.gpuState, '')}**: ${t(s.gpus.gpuMessage, '')}`, '');
  if (s.gpus.devices.length) {
    out.push(
      table(
        ['#', 'Name', 'Memory', 'Bus ID', 'UUID', 'VBIOS', 'Persistence'],
        s.gpus.devices.map((g, i) => [
          i,
          g.name,
          g.memoryTotalMiB !== null ? `${g.memoryTotalMiB} MiB` : null,
          g.busId,
          g.uuid,
          g.vbios,
          g.persistenceMode,
        ]),
      ),
      '',
    );
  }
  out.push(
    `Driver ${t(s.gpus.driverVersion, 'unknown')}, CUDA ${t(s.gpus.cudaVersion, 'unknown')}${s.gpus.nvcc ? `, toolkit ${mdText(s.gpus.nvcc)}` : ''}.`,
    '',
  );
  if (s.gpus.topology) out.push('### Topology (`nvidia-smi topo -m`)', '', fence(s.gpus.topology, 'text'), '');
  return out;
}

function hostSection(s: EnvSnapshot): string[] {
  const out = ['## CPU, memory, disks', ''];
  const sockets = s.cpu.sockets !== null ? `, ${s.cpu.sockets} socket(s)` : '';
  const threads = s.cpu.threadsPerCore !== null ? `, ${s.cpu.threadsPerCore} thread(s) per core` : '';
  const numa = s.cpu.numaNodes !== null ? `, ${s.cpu.numaNodes} NUMA node(s)` : '';
  out.push(`- CPU: ${t(s.cpu.model, 'unknown')}; ${s.cpu.cores ?? '?'} logical CPUs${sockets}${threads}${numa}`);
  const swap = s.memory.swapTotalKiB ? `, swap ${kib(s.memory.swapTotalKiB)}` : '';
  out.push(`- Memory: ${kib(s.memory.totalKiB) ?? 'unknown'} total, ${kib(s.memory.availableKiB) ?? 'unknown'} available${swap}`);
  const uptime =
    s.uptimeS === null ? null : s.uptimeS >= 172_800 ? `${(s.uptimeS / 86400).toFixed(1)} days` : `${(s.uptimeS / 3600).toFixed(1)} hours`;
  out.push(`- OS: ${t(s.os, 'unknown')}; kernel ${t(s.kernel, 'unknown')}${uptime !== null ? `; up ${uptime}` : ''}`, '');
  if (s.disks.length) {
    out.push(
      table(
        ['Mount', 'Filesystem', 'Size', 'Used', 'Available'],
        s.disks.map((d) => [d.mount, d.filesystem, kib(d.sizeKiB), kib(d.usedKiB), kib(d.availKiB)]),
      ),
      '',
    );
  }
  return out;
}

function pythonSection(s: EnvSnapshot): string[] {
  const out = ['## Python', ''];
  out.push(`- Interpreter: ${t(s.python.executable, 'none found')}${s.python.version ? ` (Python ${mdText(s.python.version)})` : ''}`);
  if (s.python.prefix) out.push(`- Prefix: ${mdText(s.python.prefix)}`);
  out.push('');
  const pkgRows = Object.entries(s.keyPackages).filter(([k, v]) => v !== null || KEY_PACKAGES.includes(k));
  if (pkgRows.length)
    out.push(
      table(
        ['Package', 'Version'],
        pkgRows.map(([k, v]) => [k, v ?? 'not installed']),
      ),
      '',
    );
  if (s.pipFreeze.length) {
    const what = s.pipFreezeSource === 'importlib.metadata' ? 'Installed distributions (importlib.metadata; pip is missing)' : 'pip freeze';
    out.push(...details(`${what} — ${s.pipFreeze.length} lines`, s.pipFreeze.join('\n'), 'text'));
  }
  return out;
}

/** What the server said of itself (/server_info, /metrics) at the snapshot. */
function serverFacts(s: EnvSnapshot, port: number): string[] {
  const info = s.serverInfo[String(port)] as Record<string, unknown> | undefined;
  const facts: string[] = [];
  if (info) {
    if (info.version) facts.push(`SGLang ${String(info.version)}`);
    if (info.model_path) facts.push(`model ${String(info.model_path)}`);
    if (info.max_total_num_tokens) facts.push(`${String(info.max_total_num_tokens)} KV tokens`);
  }
  const m = s.metrics[String(port)];
  if (m) {
    const sum = metricsSummary(parseMetrics(m));
    if (sum.genThroughput !== null) facts.push(`${sum.genThroughput.toFixed(1)} tok/s at snapshot`);
    if (sum.runningReqs !== null) facts.push(`${sum.runningReqs} running request(s)`);
  }
  return facts;
}

function serverSection(s: EnvSnapshot, srv: EnvSnapshot['servers'][number]): string[] {
  const out = [`### Port ${srv.port} (pid ${srv.pid}${srv.alive ? '' : ', exited'})`, ''];
  const facts = serverFacts(s, srv.port);
  if (facts.length) out.push(`- ${mdText(facts.join('; '))}`);
  out.push(`- Working directory: ${t(srv.cwd, 'unknown')}`);
  out.push(`- Python: ${t(srv.python ?? srv.exe, 'unknown')}`, '');
  const envPrefix: Record<string, string> = {};
  if (srv.env.CUDA_VISIBLE_DEVICES !== undefined) envPrefix.CUDA_VISIBLE_DEVICES = srv.env.CUDA_VISIBLE_DEVICES;
  const cmd = srv.argv.length ? renderCommand(srv.argv, envPrefix) : '# argv not readable';
  out.push(fence(`${srv.cwd ? `cd ${shq(srv.cwd)}\n` : ''}${cmd}`, 'sh'), '');
  const notable = Object.entries(srv.env)
    .filter(([k]) => NOTABLE_ENV.test(k))
    .sort(([a], [b]) => (a < b ? -1 : 1));
  if (notable.length) out.push('Notable environment:', '', fence(notable.map(([k, v]) => `${k}=${shq(v)}`).join('\n'), 'sh'), '');
  const all = Object.entries(srv.env).sort(([a], [b]) => (a < b ? -1 : 1));
  if (all.length)
    out.push(...details(`Full environment (${all.length} variables)`, all.map(([k, v]) => `${k}=${shq(v)}`).join('\n'), 'sh'));
  return out;
}

function sshSection(s: EnvSnapshot): string[] {
  const rows: unknown[][] = [
    ['Host', s.ssh.host],
    ['Port', s.ssh.port],
    ['User', s.ssh.user],
    ...(s.ssh.proxyJump ? [['ProxyJump', s.ssh.proxyJump]] : []),
    ['Host key', s.ssh.hostKeyFingerprint ? `${s.ssh.hostKeyType ?? ''} ${s.ssh.hostKeyFingerprint}`.trim() : null],
  ];
  const out = ['## SSH', '', table(['', ''], rows), ''];
  if (s.ssh.host) {
    const port = s.ssh.port && s.ssh.port !== 22 ? `-p ${s.ssh.port} ` : '';
    out.push(fence(`ssh ${port}${s.ssh.user ? `${shq(s.ssh.user)}@` : ''}${shq(s.ssh.host)}`, 'sh'), '');
  }
  return out;
}

/** The problems met, then the raw outputs (`nvidia-smi -q`, the servers' info) collapsed. */
function tailSections(s: EnvSnapshot): string[] {
  const out: string[] = [];
  if (s.errors.length) {
    out.push('## Problems while taking the snapshot', '');
    for (const e of s.errors) out.push(`- ${mdText(e)}`);
    out.push('');
  }
  if (s.gpus.smiQ) out.push(...details('<code>nvidia-smi -q</code>', s.gpus.smiQ, 'text'));
  if (Object.keys(s.serverInfo).length) out.push(...details('Server info (JSON, per port)', JSON.stringify(s.serverInfo, null, 2), 'json'));
  return out;
}

export function renderSnapshotMarkdown(s: EnvSnapshot): string {
  // Every string from the node goes through mdText (escaped text), fence() (code) or cell() (table cells).
  const out: string[] = [`# Environment of ${mdText(s.node)}`, ''];
  out.push(`Taken ${s.takenAt} by GPU Sessions. Tokens, keys and passwords are redacted (${REDACTED}).`, '');
  out.push(...summarySection(s), ...gpuSection(s), ...hostSection(s), ...pythonSection(s));
  out.push('## SGLang servers', '');
  if (!s.servers.length) out.push('None running.', '');
  for (const srv of s.servers) out.push(...serverSection(s, srv));
  out.push(...sshSection(s), ...tailSections(s));
  return redactText(out.join('\n'));
}
