/**
 * SGLang servers from the process table: `python -m sglang.launch_server ...`, `python3 -m ...`,
 * `sglang serve ...` (2026 builds), or `.../sglang/launch_server.py`. Flags are parsed in both
 * `--flag value` and `--flag=value` forms. Children that renamed themselves (`sglang::scheduler_TP0`)
 * are not servers; they are mapped to their server through the parent chain.
 *
 * Secrets: the values of secret flags (`--api-key`, `--admin-api-key`, any flag named key/token/secret/
 * password, abbreviations included) are redacted in `args` and `flags` right here, where argv enters the
 * process, so every consumer (probe JSON, tree, logs, capture) only ever sees `<redacted>`. The values
 * stay in memory (`serverSecrets`, `serverApiKey`) to talk to a server that enforces its key, or to
 * relaunch it with the same key; they are never written.
 */
import { REDACTED, redactArgv, rememberSecret, secretFlagValues } from '../util/redact';
import { canonicalFlag, isBoolFlag, isSecretFlag, resolveFlag } from './flags';

interface PsEntry {
  pid: number;
  ppid: number | null;
  /** Exact argv when read from /proc/PID/cmdline, else the ps args split on whitespace. */
  argv: string[];
  exact: boolean;
  cwd?: string | null;
  fd1?: string | null;
  fd2?: string | null;
  cudaVisibleDevices?: string | null;
  /** SGLang's /health settings from the process environment (strings as set), when set. */
  healthCheckTimeout?: string | null;
  healthGeneration?: string | null;
  /** The text of its `--config FILE.yaml`, read on the node (bounded), when it has one. */
  configText?: string | null;
}

export interface SglangServer {
  pid: number;
  port: number;
  host: string;
  modelPath: string | null;
  servedModelName: string | null;
  tp: number;
  dp: number;
  speculativeAlgorithm: string | null;
  reasoningParser: string | null;
  enableMetrics: boolean;
  logFile: string | null;
  cwd: string | null;
  cudaVisibleDevices: string | null;
  /** GPU indices holding this server's memory (from nvidia-smi), else from CUDA_VISIBLE_DEVICES. */
  gpus: number[];
  /** Full argv, secret values redacted (`--api-key <redacted>`). */
  args: string[];
  /** Every flag: `--tp 2` → {tp: '2'}, bare `--trust-remote-code` → {'trust-remote-code': true}; abbreviations resolved. */
  flags: Record<string, string | boolean>;
  /** The server was started with --api-key (its value is redacted everywhere). */
  hasApiKey?: boolean;
  /** Flags (as written) whose values were redacted. */
  secretFlags?: string[];
  /** `--grpc-mode`: gRPC on `port`; health and metrics on the HTTP sidecar (`--metrics-http-port`). */
  grpcMode?: boolean;
  /** --pp-size, --ep-size, --nnodes (1 when not given). */
  pp?: number;
  ep?: number;
  nnodes?: number;
  /** --enable-dp-attention: the DP ranks share the TP GPUs. */
  enableDpAttention?: boolean;
  /** GPUs this server uses on this node: tp × pp (× dp without --enable-dp-attention) / nnodes. */
  gpuCount?: number;
  /** --log-level (default info). */
  logLevel?: string;
  /** False when the log level hides SGLang's stat lines (warning and above): no throughput from the log. */
  statLines?: boolean;
  /** The --config file (as written), whose values apply where the command line does not set them. */
  configFile?: string | null;
  /** SGLANG_HEALTH_CHECK_TIMEOUT of its environment, in seconds (SGLang's default 20 when unset or unreadable). */
  healthTimeoutS?: number;
  /** SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION (default on): off, /health answers 200 at once and proves nothing
   *  about the scheduler; /health_generate still generates. */
  healthGeneration?: boolean;
}

/** SGLang's own /health limit (http_server.py HEALTH_CHECK_TIMEOUT, `SGLANG_HEALTH_CHECK_TIMEOUT`), seconds. */
const DEFAULT_HEALTH_TIMEOUT_S = 20;

/** How long SGLang itself lets this server's /health run before answering 503 (ms). */
export function healthLimitMs(s: { healthTimeoutS?: number }): number {
  return Math.round((s.healthTimeoutS ?? DEFAULT_HEALTH_TIMEOUT_S) * 1000);
}

function healthTimeoutOf(v: string | null | undefined): number {
  const n = v ? Number(v.trim()) : NaN;
  return Number.isFinite(n) && n > 0 && n <= 24 * 3600 ? n : DEFAULT_HEALTH_TIMEOUT_S;
}

/** SGLang's env booleans (get_bool_env_var): "true"/"1" on, "false"/"0" off; unset → the default (on). */
function envBool(v: string | null | undefined, def: boolean): boolean {
  if (v === null || v === undefined) return def;
  const t = v.trim().toLowerCase();
  return t === '' ? def : t === 'true' || t === '1';
}

/**
 * A SGLang `--config` YAML file → flags, as `ConfigArgumentMerger` (server_args_config_parser.py) reads it:
 * `model-path: /m` → {'model-path': '/m'}; `true` → a bare flag, `false` → absent; a list (inline
 * `[1, 2, 4, 8]` or a block of `- item` lines) → its items space-separated, as SGLang passes `--key v1 v2`.
 * Keys are used verbatim as `--{key}` (argparse abbreviations resolved): SGLang does not turn `_` into `-`, so
 * `mem_fraction_static:` is the unknown flag `--mem_fraction_static` (SGLang refuses it) and stays as written,
 * applied to nothing. Flat keys only (a nested mapping is skipped).
 */
export function parseConfigYaml(text: string): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  let listKey: string | null = null;
  let items: string[] = [];
  const unquote = (v: string) => (/^(["']).*\1$/.test(v) ? v.slice(1, -1) : v);
  const endList = () => {
    if (listKey !== null && items.length) out[listKey] = items.join(' ');
    listKey = null;
    items = [];
  };
  for (const raw of text.split('\n')) {
    const line = raw.replace(/\s+#.*$/, '').replace(/\r$/, '');
    const item = /^\s+-\s+(.*?)\s*$/.exec(line) ?? /^-\s+(.*?)\s*$/.exec(line);
    if (listKey !== null && item) {
      items.push(unquote(item[1]));
      continue;
    }
    if (/^\s/.test(line) && line.trim()) continue; // nested mapping lines
    endList();
    const m = /^([A-Za-z][A-Za-z0-9_-]*)\s*:\s*(.*?)\s*$/.exec(line);
    if (!m) continue;
    const key = resolveFlag('--' + m[1]).slice(2);
    let v = m[2];
    if (v === '') {
      listKey = key; // a block list (or a nested mapping) may follow
      continue;
    }
    if (v === 'null' || v === '~') continue;
    const inline = /^\[(.*)\]$/.exec(v);
    if (inline) {
      const list = inline[1]
        .split(',')
        .map((x) => unquote(x.trim()))
        .filter((x) => x.length > 0);
      if (list.length) out[key] = list.join(' ');
      continue;
    }
    v = unquote(v);
    if (/^(true|True|yes)$/.test(v)) out[key] = true;
    else if (/^(false|False|no)$/.test(v)) continue;
    else out[key] = v;
  }
  endList();
  return out;
}

/** The file of the exact token `--config FILE` (SGLang's `if arg == "--config"`: `--config=FILE` is not read). */
function configFileOf(args: readonly string[]): string | null {
  const i = args.indexOf('--config');
  return i >= 0 && i + 1 < args.length ? args[i + 1] : null;
}

/** In-memory only: the secret flag values of the servers seen, by pid and redacted argv. Bounded. */
const secretStore = new Map<string, Map<string, string>>();
const storeKey = (s: { pid: number; args: readonly string[] }) => `${s.pid}\0${s.args.join('\0')}`;

/** The secret flag values of a server (flag as written → value). Empty when it has none. */
export function serverSecrets(s: { pid: number; args: readonly string[] }): ReadonlyMap<string, string> {
  return secretStore.get(storeKey(s)) ?? new Map();
}

/** The server's --api-key (in memory only: for `Authorization: Bearer` on /metrics and friends). */
export function serverApiKey(s: { pid: number; args: readonly string[] }): string | undefined {
  for (const [flag, v] of serverSecrets(s)) if (resolveFlag(flag) === '--api-key') return v;
  return undefined;
}

/** Index of the first flag after the launcher, or -1 when argv is not an SGLang server launch. */
export function sglangLaunchIndex(argv: readonly string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-m' && (argv[i + 1] === 'sglang.launch_server' || argv[i + 1] === 'sglang.launch_server.py')) return i + 2;
    if (a === '-msglang.launch_server') return i + 1;
    if (/(^|\/)sglang\/launch_server\.py$/.test(a) && i <= 2) return i + 1;
    if (i <= 2 && /(^|\/)sglang$/.test(a) && argv[i + 1] === 'serve') return i + 2;
  }
  return -1;
}

/** Flags of an argv (after the launcher); abbreviations resolved as argparse does; known boolean flags take no value. */
export function parseFlags(args: readonly string[]): Record<string, string | boolean> {
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (!a.startsWith('--') || a === '--') continue;
    const eq = a.indexOf('=');
    if (eq > 2) {
      flags[resolveFlag(a.slice(0, eq)).slice(2)] = a.slice(eq + 1);
      continue;
    }
    const name = resolveFlag(a).slice(2);
    const next = args[i + 1];
    if (isBoolFlag(a)) flags[name] = true;
    else if (next !== undefined && !next.startsWith('--')) {
      flags[name] = next;
      i++;
    } else {
      flags[name] = true;
    }
  }
  return flags;
}

function flagStr(flags: Record<string, string | boolean>, ...names: string[]): string | null {
  for (const n of names) {
    const v = flags[n];
    if (typeof v === 'string') return v;
  }
  return null;
}

function flagInt(flags: Record<string, string | boolean>, def: number, ...names: string[]): number {
  const v = flagStr(flags, ...names);
  if (v === null) return def;
  const n = Number.parseInt(v, 10);
  return Number.isFinite(n) ? n : def;
}

/** A log file path from /proc/PID/fd/N, or null for pipes, sockets, terminals and /dev/null. */
function logFileFromFd(link: string | null | undefined): string | null {
  if (!link || !link.startsWith('/')) return null;
  if (link.startsWith('/dev/')) return null;
  return link.replace(/ \(deleted\)$/, '');
}

/**
 * The port that answers HTTP (`/health`, `/metrics`, `/v1/loads`): the server's own, or in gRPC mode its HTTP
 * sidecar's (`--metrics-http-port`); null when a gRPC-mode server has none (polling its gRPC port with HTTP only
 * ever reads "Expected HTTP/").
 */
export function httpPortOf(s: Pick<SglangServer, 'port' | 'grpcMode' | 'flags'>): number | null {
  if (!s.grpcMode) return s.port;
  const v = s.flags['metrics-http-port'];
  const n = typeof v === 'string' ? Number.parseInt(v, 10) : NaN;
  return Number.isInteger(n) && n > 0 && n < 65536 ? n : null;
}

/** Why a server has no HTTP to poll, for the health detail. */
export const NO_HTTP_PORT =
  'gRPC mode (--grpc-mode) without --metrics-http-port: no HTTP health or metrics to poll; the state comes from its log';

export function serverFromArgv(e: PsEntry): SglangServer | null {
  const at = sglangLaunchIndex(e.argv);
  if (at < 0) return null;
  const secrets = secretFlagValues(e.argv.slice(at), isSecretFlag);
  for (const v of secrets.values()) rememberSecret(v);
  const args = redactArgv(e.argv, isSecretFlag);
  const rest = args.slice(at);
  // `--config FILE.yaml`: its values apply where the command line does not set them (command line wins).
  const configFile = configFileOf(rest);
  const fromConfig = e.configText && configFile !== null ? parseConfigYaml(e.configText) : {};
  for (const [k, v] of Object.entries(fromConfig)) if (isSecretFlag('--' + k) && typeof v === 'string') rememberSecret(v);
  const cli = parseFlags(rest);
  const cliCanon = new Set(Object.keys(cli).map((k) => canonicalFlag('--' + k)));
  const flags: Record<string, string | boolean> = {};
  for (const [k, v] of Object.entries(fromConfig))
    if (!cliCanon.has(canonicalFlag('--' + k))) flags[k] = isSecretFlag('--' + k) && typeof v === 'string' ? REDACTED : v;
  Object.assign(flags, cli);
  // `sglang serve MODEL` accepts the model path as a positional in some builds.
  const positional = rest[0] && !rest[0].startsWith('-') ? rest[0] : null;
  const logFile = logFileFromFd(e.fd1) ?? logFileFromFd(e.fd2);
  const server: SglangServer = {
    pid: e.pid,
    port: flagInt(flags, 30000, 'port'),
    host: flagStr(flags, 'host') ?? '127.0.0.1',
    modelPath: flagStr(flags, 'model-path', 'model') ?? positional,
    servedModelName: flagStr(flags, 'served-model-name'),
    tp: flagInt(flags, 1, 'tp', 'tp-size', 'tensor-parallel-size'),
    dp: flagInt(flags, 1, 'dp', 'dp-size', 'data-parallel-size'),
    speculativeAlgorithm: flagStr(flags, 'speculative-algorithm', 'speculative-algo'),
    reasoningParser: flagStr(flags, 'reasoning-parser'),
    enableMetrics: flags['enable-metrics'] === true || flags['enable-metrics'] === 'true',
    logFile,
    cwd: e.cwd ?? null,
    cudaVisibleDevices: e.cudaVisibleDevices ?? null,
    gpus: [],
    args,
    flags,
    hasApiKey: [...secrets.keys()].some((f) => resolveFlag(f) === '--api-key') || typeof fromConfig['api-key'] === 'string',
    secretFlags: [...secrets.keys()],
    grpcMode: flags['grpc-mode'] === true,
    pp: flagInt(flags, 1, 'pp-size', 'pipeline-parallel-size'),
    ep: flagInt(flags, 1, 'ep-size', 'expert-parallel-size', 'ep'),
    nnodes: flagInt(flags, 1, 'nnodes'),
    enableDpAttention: flags['enable-dp-attention'] === true,
    logLevel: flagStr(flags, 'log-level') ?? 'info',
    configFile,
    healthTimeoutS: healthTimeoutOf(e.healthCheckTimeout),
    healthGeneration: envBool(e.healthGeneration, true),
  };
  const tp = server.tp;
  const dp = server.dp;
  server.gpuCount = Math.max(1, Math.floor((tp * (server.enableDpAttention ? 1 : dp) * server.pp!) / Math.max(1, server.nnodes!)));
  server.statLines = !/^(warning|warn|error|critical|fatal)$/i.test(server.logLevel!);
  if (secrets.size) {
    if (secretStore.size >= 4096) secretStore.delete(secretStore.keys().next().value as string);
    secretStore.set(storeKey(server), secrets);
  }
  return server;
}

/**
 * `ps -eww -o pid=,ppid=,args=` lines; also `pid args` only, and the common tables with a header
 * (`ps aux`: USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND; `ps -ef`: UID PID PPID C STIME TTY TIME CMD),
 * so a wrapped or different `ps` still yields the process table.
 */
export function parsePsLines(text: string): PsEntry[] {
  const lines = text.split('\n');
  const hi = lines.findIndex((l) => l.trim().length > 0);
  const header = hi >= 0 ? lines[hi].trim().split(/\s+/) : [];
  const upper = header.map((h) => h.toUpperCase());
  const cmdCol = upper.findIndex((h) => h === 'COMMAND' || h === 'CMD' || h === 'ARGS');
  const pidCol = upper.indexOf('PID');
  if (cmdCol > 0 && pidCol >= 0) {
    const ppidCol = upper.indexOf('PPID');
    const out: PsEntry[] = [];
    for (const raw of lines.slice(hi + 1)) {
      const f = raw.trim().split(/\s+/);
      if (f.length <= cmdCol || !/^\d+$/.test(f[pidCol])) continue;
      out.push({
        pid: Number(f[pidCol]),
        ppid: ppidCol >= 0 && /^\d+$/.test(f[ppidCol]) ? Number(f[ppidCol]) : null,
        argv: f.slice(cmdCol),
        exact: false,
      });
    }
    return out;
  }
  const out: PsEntry[] = [];
  for (const raw of lines) {
    const m = /^\s*(\d+)\s+(?:(\d+)\s+)?(.*)$/.exec(raw);
    if (!m) continue;
    const args = m[3].trim();
    if (!args) continue;
    out.push({ pid: Number(m[1]), ppid: m[2] !== undefined ? Number(m[2]) : null, argv: args.split(/\s+/), exact: false });
  }
  return out;
}

/**
 * One hex-encoded field of a /proc record (`od -An -v -tx1` output: hex pairs, spaces, newlines), decoded
 * to its bytes; null when it is not hex (a record we did not print).
 */
export function decodeHexField(s: string): Buffer | null {
  const hex = s.replace(/\s+/g, '');
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) return null;
  return Buffer.from(hex, 'hex');
}

/**
 * The probe's /proc records (procRecordsLoop): `P \x1d hex(pid \0 ppid \0 cwd \0 fd1 \0 fd2 \0 env lines)
 * \x1d hex(cmdline) \x1e`. The fields travel hex-encoded, so separator bytes inside a process's argv, paths
 * or environment cannot forge a record; anything that is not such a record is ignored.
 */
export function parseProcRecords(text: string): PsEntry[] {
  const out: PsEntry[] = [];
  for (const rec of text.split('\x1e')) {
    const f = rec.replace(/^\s+/, '').split('\x1d');
    if (f[0] !== 'P' || (f.length !== 3 && f.length !== 4)) continue;
    const head = decodeHexField(f[1]);
    const cmdline = decodeHexField(f[2]);
    if (!head || !cmdline) continue;
    const h = head.toString('utf8').split('\0');
    if (h.length < 6 || !/^\d+$/.test(h[0])) continue;
    const pid = Number(h[0]);
    const ppid = /^\d+$/.test(h[1]) ? Number(h[1]) : null;
    const argv = cmdline.toString('utf8').split('\0');
    if (argv.length && argv[argv.length - 1] === '') argv.pop();
    const cvd = /(?:^|\n)CUDA_VISIBLE_DEVICES=([^\n]*)/.exec(h[5]);
    const hto = /(?:^|\n)SGLANG_HEALTH_CHECK_TIMEOUT=([^\n]*)/.exec(h[5]);
    const hgen = /(?:^|\n)SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION=([^\n]*)/.exec(h[5]);
    out.push({
      pid,
      ppid,
      cwd: h[2] || null,
      fd1: h[3] || null,
      fd2: h[4] || null,
      cudaVisibleDevices: cvd ? cvd[1] : null,
      healthCheckTimeout: hto ? hto[1] : null,
      healthGeneration: hgen ? hgen[1] : null,
      configText: f.length === 4 ? (decodeHexField(f[3])?.toString('utf8') ?? null) : null,
      argv,
      exact: true,
    });
  }
  return out;
}

/** Merge ps and /proc views (exact argv wins), find servers, attach GPUs through the parent chain. */
export function findServers(
  ps: PsEntry[],
  proc: PsEntry[],
  gpuPids: Array<{ pid: number | null; gpuIndex: number | null }>,
): SglangServer[] {
  const byPid = new Map<number, PsEntry>();
  for (const p of ps) byPid.set(p.pid, p);
  for (const p of proc) {
    const prev = byPid.get(p.pid);
    byPid.set(p.pid, { ...p, ppid: p.ppid ?? prev?.ppid ?? null });
  }
  const servers: SglangServer[] = [];
  for (const e of byPid.values()) {
    const s = serverFromArgv(e);
    if (!s) continue;
    // An SGLang launcher whose parent is also a launcher (multiprocessing spawn) is not a separate server.
    const parent = e.ppid !== null ? byPid.get(e.ppid) : undefined;
    if (parent && sglangLaunchIndex(parent.argv) >= 0 && parent.argv.join(' ') === e.argv.join(' ')) continue;
    servers.push(s);
  }
  const serverPids = new Set(servers.map((s) => s.pid));
  const ownerOf = (pid: number): number | null => {
    let cur: number | null = pid;
    for (let hops = 0; cur !== null && hops < 16; hops++) {
      if (serverPids.has(cur)) return cur;
      cur = byPid.get(cur)?.ppid ?? null;
    }
    return null;
  };
  for (const g of gpuPids) {
    if (g.pid === null || g.gpuIndex === null) continue;
    const owner = ownerOf(g.pid);
    const s = servers.find((x) => x.pid === owner);
    if (s && !s.gpus.includes(g.gpuIndex)) s.gpus.push(g.gpuIndex);
  }
  for (const s of servers) {
    if (s.gpus.length === 0 && s.cudaVisibleDevices) {
      s.gpus = s.cudaVisibleDevices
        .split(',')
        .map((x) => Number.parseInt(x, 10))
        .filter((n) => Number.isInteger(n) && n >= 0);
    }
    s.gpus.sort((a, b) => a - b);
  }
  return servers.sort((a, b) => a.port - b.port || a.pid - b.pid);
}
