/**
 * Launching, waiting for, capturing and stopping SGLang servers on a node.
 *
 * - `preflight`: ONE exec that checks ports, GPUs, model path and `import sglang` → refusals and warnings.
 * - `launch`: preflight, render, upload the script through stdin (`~/.gpu-sessions/launch/<stamp>-<name>.sh`),
 *   run it (instances start detached), then wait until every instance is ready — readiness line in its log
 *   or /health 200 — with ONE exec per polling round for all logs, bounded by a timeout.
 *   `~/.gpu-sessions/launch/last.sh` keeps the last launched script; the previous one is returned for a diff.
 * - `scanServers`: the node's SGLang servers with pgid, owner and launch-relevant environment (capture, stop).
 * - `stopServer`: find the server by port, optionally drain (running requests → 0 from /metrics, /get_load or
 *   its log), then SIGTERM its process group, wait, SIGKILL after a timeout.
 *
 * Every remote command is a fixed text or built from shq-quoted values; scripts travel on stdin.
 * No `vscode` import.
 */
import { GpuSessionsError, errorMessage } from '../util/errors';
import { authHeaders, checkHealth, httpGet, metricsSummary, parseMetrics } from '../sglang/endpoints';
import { classifyLine } from '../sglang/logLines';
import { procRecordsLoop } from '../node/probe';
import { RemoteOperation, incomplete, runOperation } from '../remote/operation';
import { newNonce, sectionPrologue, sectionsComplete, splitSections } from '../remote/sections';
import { shq } from '../remote/quote';
import { SglangServer, decodeHexField, findServers, parseProcRecords } from '../sglang/serverArgv';
import type { AbortLike, ExecResult, Transport } from '../ssh/transport';
import {
  DEFAULT_PYTHON,
  LaunchProfile,
  RenderedInstance,
  SECRETS_DIR,
  profileName,
  remotePathExpr,
  renderPreamble,
  renderProfileScript,
  planInstances,
} from './profile';
import { isSecretName, rememberSecret } from '../util/redact';

export const LAUNCH_DIR = '.gpu-sessions/launch';
const READY_TEXT = 'The server is fired up and ready to roll';

const sleep = (ms: number, signal?: AbortLike) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new GpuSessionsError('cancelled', 'Cancelled.'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new GpuSessionsError('cancelled', 'Cancelled.'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

const nonce = newNonce;

// ------------------------------------------------------------------------------------ preflight

export type PreflightCheck = 'port' | 'gpu' | 'model' | 'python' | 'workdir' | 'secret';

export interface PreflightIssue {
  check: PreflightCheck;
  message: string;
  /** A refusal that `override` turns into a warning (GPUs in use, nvidia-smi unavailable). */
  overridable?: boolean;
}

export interface PreflightResult {
  ok: boolean;
  refusals: PreflightIssue[];
  warnings: PreflightIssue[];
  /** GPUs the launch uses (the profile's list, or every GPU of the node for "all"). */
  gpus: number[];
  /** GPUs nvidia-smi lists; null when it could not be asked. */
  nodeGpus: Array<{ index: number; uuid: string | null }> | null;
  /** Ports the instances would listen on. */
  ports: number[];
  /** `sglang.__version__` as the interpreter imports it; null when the import failed. */
  sglangVersion: string | null;
}

export interface PreflightOptions {
  /** Launch on GPUs that have compute processes anyway (and when nvidia-smi cannot be asked). */
  override?: boolean;
  signal?: AbortLike;
  timeoutMs?: number;
}

/** Looks like a Hugging Face repo id ("org/name"), not a local path. */
export function looksLikeHfRepo(p: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/.test(p) && !p.includes('..');
}

export function buildPreflightScript(n: string, profile: LaunchProfile): string {
  const model = remotePathExpr(profile.modelPath);
  const draft = profile.speculative?.draftModelPath;
  const py = profile.python ?? DEFAULT_PYTHON;
  const pyExpr = py.startsWith('~/') ? remotePathExpr(py) : shq(py);
  const pathCheck = (expr: string) =>
    `p=${expr}; if [ -d "$p" ]; then if [ -f "$p/config.json" ]; then echo dir-config; else echo dir; fi; elif [ -e "$p" ]; then echo not-dir; else echo missing; fi`;
  return `${sectionPrologue(n)}
export LC_ALL=C
sec listen; awk 'FNR > 1 && $4 == "0A" { print $2 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
sec ss; if command -v ss >/dev/null 2>&1; then ss -Hltnp 2>/dev/null | head -n 2000; fi
sec gpus; nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>&1; echo "rc=$?"
sec apps; nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits 2>&1 | head -n 1024
sec workdir; if [ -d ${remotePathExpr(profile.workDir ?? '~')} ]; then echo ok; else echo missing; fi
sec model; ( cd ${remotePathExpr(profile.workDir ?? '~')} 2>/dev/null; ${pathCheck(model)} )
sec draft; ${draft !== undefined ? `( cd ${remotePathExpr(profile.workDir ?? '~')} 2>/dev/null; ${pathCheck(remotePathExpr(draft))} )` : 'echo none'}
sec python; (
${renderPreamble(profile, 'GS-ERROR', { secrets: false })
  .map((l) => '  ' + l)
  .join('\n')}
  T=; if command -v timeout >/dev/null 2>&1; then T="timeout 90"; fi
  $T ${pyExpr} -c 'import sys, sglang; sys.stdout.write("GS-SGLANG %s\\n" % getattr(sglang, "__version__", "unknown"))' 2>&1
  echo "GS-RC $?"
) 2>&1 | tail -n 25
sec end
`;
}

/** Local ports of listening sockets from /proc/net/tcp{,6} `local_address` fields ("0100007F:7530"). */
export function parseListenPorts(text: string): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const raw of text.split('\n')) {
    const m = /^([0-9A-Fa-f]+):([0-9A-Fa-f]{4})$/.exec(raw.trim());
    if (!m) continue;
    const port = parseInt(m[2], 16);
    const addr = hexAddr(m[1]);
    const l = out.get(port) ?? [];
    if (!l.includes(addr)) l.push(addr);
    out.set(port, l);
  }
  return out;
}

function hexAddr(h: string): string {
  if (h.length === 8) {
    const b = h
      .match(/../g)!
      .map((x) => parseInt(x, 16))
      .reverse();
    return b.join('.');
  }
  if (h.length === 32) {
    if (/^0+$/.test(h)) return '::';
    if (h === '00000000000000000000000001000000') return '::1';
    return `[ipv6 ${h.toLowerCase()}]`;
  }
  return h;
}

/** `ss -Hltnp` → port → "python3 pid 1234" (only for sockets of processes we may see). */
function parseSsOwners(text: string): Map<number, string> {
  const out = new Map<number, string>();
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    const local = f[3];
    const pm = /:(\d+)$/.exec(local);
    if (!pm) continue;
    const um = /users:\(\("([^"]*)",pid=(\d+)/.exec(line);
    if (um && !out.has(Number(pm[1]))) out.set(Number(pm[1]), `${um[1]} pid ${um[2]}`);
  }
  return out;
}

export function parsePreflightOutput(
  text: string,
  n: string,
  profile: LaunchProfile,
  requested: number[] | 'all',
  nodeLabel: string,
  override: boolean,
): PreflightResult {
  const s = splitSections(text, n);
  const refusals: PreflightIssue[] = [];
  const warnings: PreflightIssue[] = [];
  const refuseOrWarn = (check: PreflightCheck, msg: string, overridable: boolean) => {
    if (overridable && override) warnings.push({ check, message: `${msg} (overridden)` });
    else refusals.push(overridable ? { check, message: msg, overridable } : { check, message: msg });
  };

  // GPUs
  const gtext = s.get('gpus') ?? '';
  const rcm = /(?:^|\n)rc=(\d+)\s*$/.exec(gtext);
  const body = rcm ? gtext.slice(0, rcm.index) : gtext;
  let nodeGpus: Array<{ index: number; uuid: string | null }> | null = null;
  const parsedGpus: Array<{ index: number; uuid: string | null }> = [];
  for (const line of body.split('\n')) {
    const m = /^\s*(\d+)\s*,\s*(\S*)\s*$/.exec(line);
    if (m) parsedGpus.push({ index: Number(m[1]), uuid: m[2] && !m[2].startsWith('[') ? m[2] : null });
  }
  if (parsedGpus.length) nodeGpus = parsedGpus;
  const smiProblem = nodeGpus ? null : body.trim().split('\n').slice(-2).join(' ').trim() || 'no output';
  let gpus: number[] = [];
  if (requested === 'all') {
    if (nodeGpus) gpus = nodeGpus.map((g) => g.index);
    else refusals.push({ check: 'gpu', message: `gpus is "all", but nvidia-smi on ${nodeLabel} lists no GPU (${smiProblem}).` });
  } else {
    gpus = [...requested];
    if (!nodeGpus)
      refuseOrWarn('gpu', `nvidia-smi on ${nodeLabel} could not list GPUs (${smiProblem}); cannot check GPUs ${gpus.join(',')}.`, true);
    else {
      const have = new Set(nodeGpus.map((g) => g.index));
      const missing = gpus.filter((g) => !have.has(g));
      if (missing.length)
        refusals.push({
          check: 'gpu',
          message: `GPU${missing.length > 1 ? 's' : ''} ${missing.join(', ')} ${missing.length > 1 ? 'do' : 'does'} not exist on ${nodeLabel} (it has GPU${nodeGpus.length === 1 ? '' : 's'} ${nodeGpus.map((g) => g.index).join(', ')}).`,
        });
    }
  }
  if (nodeGpus) {
    const byUuid = new Map(nodeGpus.filter((g) => g.uuid).map((g) => [g.uuid!, g.index]));
    const busy = new Map<number, string[]>();
    for (const line of (s.get('apps') ?? '').split('\n')) {
      const f = line.split(',').map((x) => x.trim());
      if (f.length < 4 || !/^\d+$/.test(f[0])) continue;
      const uuid = f[f.length - 1];
      const mem = f[f.length - 2];
      const name = f.slice(1, f.length - 2).join(',');
      const idx = byUuid.get(uuid);
      if (idx === undefined) continue;
      const l = busy.get(idx) ?? [];
      l.push(`pid ${f[0]} ${name}${/^\d+$/.test(mem) ? ` (${mem} MiB)` : ''}`);
      busy.set(idx, l);
    }
    for (const g of gpus) {
      const procs = busy.get(g);
      if (procs)
        refuseOrWarn(
          'gpu',
          `GPU ${g} is in use on ${nodeLabel}: ${procs.slice(0, 3).join(', ')}${procs.length > 3 ? `, and ${procs.length - 3} more` : ''}. Stop it first, choose other gpus, or override.`,
          true,
        );
    }
  }

  // Ports
  let ports: number[] = [];
  if (gpus.length) {
    try {
      ports = planInstances(profile, gpus).map((p) => p.port);
    } catch (e) {
      refusals.push({ check: 'gpu', message: errorMessage(e) });
    }
  }
  const listening = parseListenPorts(s.get('listen') ?? '');
  const owners = parseSsOwners(s.get('ss') ?? '');
  for (const [k, port] of ports.entries()) {
    const addrs = listening.get(port);
    if (!addrs) continue;
    const who = owners.get(port);
    refusals.push({
      check: 'port',
      message: `Port ${port}${profile.layout === 'per-gpu' ? ` (GPU ${gpus[k]})` : ''} is already in use on ${nodeLabel}: something listens on ${addrs.map((a) => `${a}:${port}`).join(', ')}${who ? ` (${who})` : ''}. Stop it or choose another basePort.`,
    });
  }

  // Working directory, model
  if ((s.get('workdir') ?? '').trim() !== 'ok')
    refusals.push({ check: 'workdir', message: `workDir ${profile.workDir ?? '~'} does not exist on ${nodeLabel}.` });
  const modelCheck = (what: string, field: string, p: string, state: string) => {
    if (state === 'dir-config') return;
    if (state === 'dir')
      warnings.push({ check: 'model', message: `${field}: ${p} on ${nodeLabel} has no config.json; SGLang may not load it.` });
    else if (state === 'not-dir') refusals.push({ check: 'model', message: `${field}: ${p} on ${nodeLabel} is not a directory.` });
    else if (looksLikeHfRepo(p))
      warnings.push({
        check: 'model',
        message: `${field}: "${p}" is not a directory on ${nodeLabel}; it looks like a Hugging Face repo id, which SGLang downloads on start (into HF_HOME).`,
      });
    else refusals.push({ check: 'model', message: `${field}: the ${what} ${p} does not exist on ${nodeLabel}.` });
  };
  modelCheck('model', 'modelPath', profile.modelPath, (s.get('model') ?? '').trim());
  const draft = profile.speculative?.draftModelPath;
  if (draft !== undefined) modelCheck('draft model', 'speculative.draftModelPath', draft, (s.get('draft') ?? '').trim());

  // Interpreter
  const pyOut = (s.get('python') ?? '').replace(/\s+$/, '');
  const ver = /GS-SGLANG (\S+)/.exec(pyOut);
  const rc = /GS-RC (\d+)/.exec(pyOut);
  const py = profile.python ?? DEFAULT_PYTHON;
  if (!ver || (rc && rc[1] !== '0')) {
    const lines = pyOut.split('\n').filter((l) => l && !/^GS-RC /.test(l));
    const gsErr = lines.find((l) => l.startsWith('GS-ERROR '));
    const why = gsErr ? gsErr.slice('GS-ERROR '.length) : (errorSummary(lines) ?? `exit ${rc?.[1] ?? '?'}`);
    refusals.push({
      check: 'python',
      message: `${py}${profile.venv ? ` (venv ${profile.venv})` : ''} cannot import sglang on ${nodeLabel}: ${why}`,
    });
  }
  if (!sectionsComplete(text, n)) refusals.push({ check: 'python', message: `The preflight did not complete on ${nodeLabel}.` });
  return { ok: refusals.length === 0, refusals, warnings, gpus, nodeGpus, ports, sglangVersion: ver ? ver[1] : null };
}

/**
 * The preflight as a described operation. Output cut at its bound lacks the end marker, which the parser
 * turns into a refusal ("did not complete") like any other cut-off run.
 */
export function preflightOperation(
  profile: LaunchProfile,
  gpus: number[] | 'all',
  nodeLabel: string,
  opts: { override?: boolean; timeoutMs?: number } = {},
): RemoteOperation<PreflightResult> {
  const n = nonce();
  return {
    name: 'preflight',
    command: 'sh -s',
    stdin: buildPreflightScript(n, profile),
    timeoutMs: opts.timeoutMs ?? 150_000,
    maxOutputBytes: 8 * 1024 * 1024,
    acceptTruncated: true,
    idempotent: true,
    parse: (r) => parsePreflightOutput(r.stdout.toString('utf8'), n, profile, gpus, nodeLabel, Boolean(opts.override)),
  };
}

/**
 * Checks before a launch, in ONE exec: the instances' ports are free, the GPUs exist and hold no compute
 * process (unless `override`), the model path is present (an HF repo id only warns), workDir exists, and the
 * interpreter (after venv and env) can `import sglang`.
 */
export async function preflight(
  t: Transport,
  profile: LaunchProfile,
  gpus: number[] | 'all' = profile.gpus,
  opts: PreflightOptions = {},
): Promise<PreflightResult> {
  return runOperation(t, preflightOperation(profile, gpus, t.label, opts), opts.signal);
}

// ------------------------------------------------------------------------------------ scripts on the node

/** `~/.gpu-sessions/launch/last.sh` (shown as a diff only: a script cut at 4 MiB is shown as far as it came). */
export function lastScriptOperation(): RemoteOperation<string | null> {
  return {
    name: 'last-script',
    command: `cat "$HOME"/${shq(LAUNCH_DIR + '/last.sh')} 2>/dev/null`,
    timeoutMs: 30_000,
    maxOutputBytes: 4 * 1024 * 1024,
    acceptTruncated: true,
    idempotent: true,
    parse: (r) => (r.code === 0 ? r.stdout.toString('utf8') : null),
  };
}

/** The node's last launched script (`~/.gpu-sessions/launch/last.sh`), or null. */
export async function readLastScript(t: Transport, signal?: AbortLike): Promise<string | null> {
  return runOperation(t, lastScriptOperation(), signal);
}

export function scriptFileName(profile: LaunchProfile, fallbackName: string | undefined, now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${profileName(profile, fallbackName)}.sh`;
}

/** A remote write that failed: "<node>: could not <what>: <stderr or exit N>". */
function writeFailed(nodeLabel: string, what: string, r: ExecResult): GpuSessionsError {
  return new GpuSessionsError('remote-failed', `${nodeLabel}: could not ${what}: ${r.stderr.toString('utf8').trim() || `exit ${r.code}`}`);
}

/** `GS-PATH <path>` then, when there was one, `GS-PREV` and the previous last.sh. */
export function parseUploadOutput(r: ExecResult, nodeLabel: string, fileName: string): { path: string; previous: string | null } {
  const out = r.stdout.toString('utf8');
  const m = /^GS-PATH (.*)\n/.exec(out);
  if (r.code !== 0 || !m) throw writeFailed(nodeLabel, `write the launch script to ~/${LAUNCH_DIR}/${fileName}`, r);
  const rest = out.slice(m[0].length);
  return { path: m[1], previous: rest.startsWith('GS-PREV\n') ? rest.slice('GS-PREV\n'.length) : null };
}

/** Writes the script (on stdin, never on a command line) to `~/.gpu-sessions/launch/<fileName>`. */
export function uploadScriptOperation(
  fileName: string,
  script: string,
  nodeLabel: string,
): RemoteOperation<{ path: string; previous: string | null }> {
  if (!/^[A-Za-z0-9._-]+$/.test(fileName)) throw new GpuSessionsError('usage', `Bad script file name ${JSON.stringify(fileName)}.`);
  const body =
    'umask 022; d="$HOME/' +
    LAUNCH_DIR +
    '"; mkdir -p "$d" || exit 3; f="$d/$1"; ' +
    'cat > "$f.tmp" && mv -f "$f.tmp" "$f" && chmod 755 "$f" || exit 3; ' +
    'printf "GS-PATH %s\\n" "$f"; if [ -f "$d/last.sh" ]; then printf "GS-PREV\\n"; cat "$d/last.sh"; fi';
  return {
    name: 'upload-script',
    command: `sh -c ${shq(body)} sh ${shq(fileName)}`,
    stdin: script,
    timeoutMs: 60_000,
    maxOutputBytes: 64 * 1024 * 1024,
    parse: (r) => parseUploadOutput(r, nodeLabel, fileName),
  };
}

/** Upload through stdin (never on a command line); returns the remote path and the previous last.sh. */
export async function uploadScript(
  t: Transport,
  fileName: string,
  script: string,
  signal?: AbortLike,
): Promise<{ path: string; previous: string | null }> {
  return runOperation(t, uploadScriptOperation(fileName, script, t.label), signal);
}

export interface ScriptRun {
  /** port → pid, from the script's `GS-STARTED <port> <pid>` lines. */
  started: Map<number, number>;
  errors: string[];
  code: number | null;
  output: string;
}

/** What a launch script printed: `GS-STARTED <port> <pid>` per instance, `GS-ERROR <why>` lines. */
export function parseRunOutput(r: ExecResult): ScriptRun {
  const out = r.stdout.toString('utf8');
  const err = r.stderr.toString('utf8');
  const started = new Map<number, number>();
  for (const m of out.matchAll(/^GS-STARTED (\d+) (\d+)$/gm)) started.set(Number(m[1]), Number(m[2]));
  const errors = [...(out + '\n' + err).matchAll(/^GS-ERROR (.*)$/gm)].map((m) => m[1]);
  return { started, errors, code: r.code, output: (out + err).trim() };
}

/**
 * Runs an uploaded script and copies it to last.sh. The servers are detached by then, so output past the
 * bound is read as far as it came (the GS-STARTED lines come first) rather than losing their pids.
 */
export function runScriptOperation(fileName: string): RemoteOperation<ScriptRun> {
  const body =
    'd="$HOME/' +
    LAUNCH_DIR +
    '"; f="$d/$1"; sh "$f" </dev/null; rc=$?; ' +
    'cp -f "$f" "$d/last.sh.tmp" && mv -f "$d/last.sh.tmp" "$d/last.sh"; exit $rc';
  return {
    name: 'run-script',
    command: `sh -c ${shq(body)} sh ${shq(fileName)}`,
    timeoutMs: 120_000,
    maxOutputBytes: 64 * 1024 * 1024,
    acceptTruncated: true,
    parse: parseRunOutput,
  };
}

/** Run an uploaded script; it prints GS-STARTED lines and returns at once (the servers are detached). Copies it to last.sh. */
export async function runScript(t: Transport, fileName: string, signal?: AbortLike): Promise<ScriptRun> {
  return runOperation(t, runScriptOperation(fileName), signal);
}

// ------------------------------------------------------------------------------------ waiting

export type InstanceState = 'starting' | 'ready' | 'failed' | 'timeout' | 'not-started';

export interface LaunchedInstance extends RenderedInstance {
  pid: number | null;
  state: InstanceState;
  ready: boolean;
  readyVia: 'log' | 'health' | null;
  readyAfterMs: number | null;
  /** One line: why it failed or is not ready. */
  error: string | null;
  /** The last lines of its log (failed or not ready instances; empty when ready). */
  lastLines: string[];
}

/** Fatal markers: the instance is failing even if its process has not exited yet. */
const FATAL_MARKS = [
  'unrecognized arguments',
  ': error: ',
  'Received sigquit',
  'CUDA out of memory',
  'OutOfMemoryError',
  'address already in use',
  'NCCL error',
  'Fatal Python error',
];

/** The one line that says why an instance failed, from the last lines of its log. */
export function errorSummary(lines: string[]): string | null {
  // argparse: "launch_server.py: error: unrecognized arguments: --bogus-flag"
  for (let i = lines.length - 1; i >= 0; i--) if (/^\S+: error: /.test(lines[i].trim())) return lines[i].trim();
  for (let i = lines.length - 1; i >= 0; i--) {
    const c = classifyLine(lines[i]);
    if (c.kind === 'error') return c.message.trim();
  }
  for (let i = lines.length - 1; i >= 0; i--) {
    if (classifyLine(lines[i]).kind === 'traceback') {
      const after = lines
        .slice(i + 1)
        .map((l) => l.trim())
        .filter(Boolean);
      return after.length ? after[after.length - 1] : lines[i].trim();
    }
  }
  const last = [...lines].reverse().find((l) => l.trim());
  return last ? last.trim() : null;
}

/**
 * The lines worth showing for a failure: from the last traceback / usage line to the end, at most `max`
 * (a longer block keeps its first lines, e.g. "usage: ...", and its end); else the tail.
 */
export function errorLines(lines: string[], max = 30): string[] {
  let from = -1;
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i];
    if (classifyLine(l).kind === 'traceback' || /^usage: /.test(l)) {
      from = i;
      break;
    }
  }
  if (from < 0) return lines.slice(-max);
  const block = lines.slice(from);
  if (block.length <= max) return block;
  const head = 2;
  return [...block.slice(0, head), `… (${block.length - max + 1} lines left out) …`, ...block.slice(block.length - (max - head - 1))];
}

function hasFatal(lines: string[]): boolean {
  return lines.some((l) => FATAL_MARKS.some((m) => l.includes(m)));
}

export interface WaitOptions {
  timeoutMs: number;
  pollMs?: number;
  signal?: AbortLike;
  onProgress?: (p: LaunchProgress) => void;
  /** Host the servers listen on (for /health). */
  host?: string;
  /** An instance whose log shows a fatal error while its process lives on counts as failed after this long. Default 10 s. */
  fatalGraceMs?: number;
}

export interface PollState {
  alive: boolean;
  readyLine: string;
  tail: string[];
}

export function buildPollScript(n: string, items: Array<{ pid: number; logFile: string }>): string {
  const L = [sectionPrologue(n), 'export LC_ALL=C'];
  items.forEach((it, i) => {
    const log = remotePathExpr(it.logFile);
    L.push(
      `sec s${i}; st=dead; if [ -r /proc/${it.pid}/stat ]; then z=$(sed 's/.*) //' /proc/${it.pid}/stat 2>/dev/null | cut -c1); [ "$z" != Z ] && [ -n "$z" ] && st=alive; fi; echo "$st"`,
    );
    L.push(`sec r${i}; grep -a -F -m1 -e ${shq(READY_TEXT)} ${log} 2>/dev/null | head -c 4096`);
    L.push(`sec t${i}; tail -c 16384 ${log} 2>/dev/null | tail -n 60`);
  });
  L.push('sec end', '');
  return L.join('\n');
}

export function parsePollOutput(text: string, n: string, count: number): PollState[] | null {
  if (!sectionsComplete(text, n)) return null;
  const s = splitSections(text, n);
  const out: PollState[] = [];
  for (let i = 0; i < count; i++) {
    const tail = (s.get(`t${i}`) ?? '').replace(/\n+$/, '');
    out.push({
      alive: (s.get(`s${i}`) ?? '').trim() === 'alive',
      readyLine: (s.get(`r${i}`) ?? '').trim(),
      tail: tail ? tail.split('\n') : [],
    });
  }
  return out;
}

/** One polling round for all instances; a round cut short (no end marker) parses to null: try the next one. */
export function pollOperation(items: Array<{ pid: number; logFile: string }>): RemoteOperation<PollState[] | null> {
  const n = nonce();
  return {
    name: 'launch-poll',
    command: 'sh -s',
    stdin: buildPollScript(n, items),
    timeoutMs: 30_000,
    maxOutputBytes: 4 * 1024 * 1024,
    acceptTruncated: true,
    idempotent: true,
    parse: (r) => parsePollOutput(r.stdout.toString('utf8'), n, items.length),
  };
}

export interface LaunchProgress {
  phase: 'preflight' | 'upload' | 'start' | 'wait' | 'done';
  message: string;
  ready?: number;
  failed?: number;
  total?: number;
}

/**
 * Poll until every started instance is ready or has failed, or the timeout passes: ONE exec per round for
 * all instances (process state, readiness line, log tail), plus /health for the ones that are up but whose
 * log does not say ready yet.
 */
export async function waitForInstances(t: Transport, instances: LaunchedInstance[], opts: WaitOptions): Promise<LaunchedInstance[]> {
  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  let pollMs = opts.pollMs ?? 1000;
  const fatalSince = new Map<number, number>();
  const pending = () => instances.filter((i) => i.state === 'starting' && i.pid !== null);
  const report = () => {
    const ready = instances.filter((i) => i.state === 'ready').length;
    const failed = instances.filter((i) => i.state === 'failed' || i.state === 'not-started').length;
    opts.onProgress?.({
      phase: 'wait',
      message: `${ready}/${instances.length} ready${failed ? `, ${failed} failed` : ''} (${Math.round((Date.now() - started) / 1000)} s)`,
      ready,
      failed,
      total: instances.length,
    });
  };
  let lastTails = new Map<number, string[]>();
  while (pending().length) {
    const list = pending();
    let states: PollState[] | null = null;
    try {
      states = await runOperation(t, pollOperation(list.map((i) => ({ pid: i.pid!, logFile: i.logFile }))), opts.signal);
    } catch (e) {
      if (e instanceof GpuSessionsError && e.code === 'cancelled') throw e;
      if (Date.now() > deadline) break;
      // a dropped connection: try again next round
    }
    const now = Date.now();
    if (states) {
      lastTails = new Map(list.map((inst, k) => [inst.port, states![k].tail]));
      const needHealth: LaunchedInstance[] = [];
      list.forEach((inst, k) => {
        const st = states![k];
        const readyLine = Boolean(st.readyLine) && classifyLine(st.readyLine).kind === 'ready';
        if (!st.alive) {
          const why = errorSummary(st.tail) ?? 'no output in its log';
          Object.assign(inst, {
            state: 'failed',
            error: `exited ${readyLine ? 'right after it was ready' : 'before it was ready'}: ${why}`,
            lastLines: errorLines(st.tail),
          });
          return;
        }
        if (readyLine) {
          Object.assign(inst, { state: 'ready', ready: true, readyVia: 'log', readyAfterMs: now - started, error: null, lastLines: [] });
          return;
        }
        if (hasFatal(st.tail)) {
          const since = fatalSince.get(inst.port) ?? now;
          fatalSince.set(inst.port, since);
          if (now - since >= (opts.fatalGraceMs ?? 10_000)) {
            Object.assign(inst, {
              state: 'failed',
              error: `error in its log (process ${inst.pid} still running): ${errorSummary(st.tail) ?? ''}`,
              lastLines: errorLines(st.tail),
            });
            return;
          }
        }
        needHealth.push(inst);
      });
      await Promise.all(
        needHealth.map(async (inst) => {
          try {
            const h = await checkHealth(t, inst.host ?? opts.host ?? '127.0.0.1', inst.port, 3000);
            if (h.health === 'healthy')
              Object.assign(inst, {
                state: 'ready',
                ready: true,
                readyVia: 'health',
                readyAfterMs: Date.now() - started,
                error: null,
                lastLines: [],
              });
          } catch {
            /* the SSH connection itself: next round */
          }
        }),
      );
    }
    report();
    if (!pending().length) break;
    if (Date.now() + pollMs > deadline) {
      if (Date.now() >= deadline) break;
      await sleep(Math.max(0, deadline - Date.now()), opts.signal);
      continue;
    }
    await sleep(pollMs, opts.signal);
    if (Date.now() - started > 30_000) pollMs = Math.max(pollMs, Math.min(3000, (opts.pollMs ?? 1000) * 2));
  }
  for (const inst of pending()) {
    const tail = lastTails.get(inst.port) ?? [];
    Object.assign(inst, {
      state: 'timeout',
      error: `not ready after ${Math.round(opts.timeoutMs / 1000)} s (still starting; process ${inst.pid} left running)${tail.length ? `; last line: ${tail[tail.length - 1].trim()}` : ''}`,
      lastLines: tail.slice(-30),
    });
  }
  return instances;
}

// ------------------------------------------------------------------------------------ launch

export interface LaunchOptions {
  /** GPUs to use instead of the profile's. */
  gpus?: number[];
  /** Render and preflight only: start nothing. */
  dryRun?: boolean;
  /** How long to wait for readiness. Default 15 min (large models load for minutes). */
  timeoutMs?: number;
  pollMs?: number;
  onProgress?: (p: LaunchProgress) => void;
  signal?: AbortLike;
  /** Launch on GPUs that already have compute processes. */
  override?: boolean;
  /** Name for the script file when the profile has none (e.g. the profile file's base name). */
  fallbackName?: string;
  /** The script the user reviewed: refuse if the node's state now renders another one. */
  expectScript?: string;
  fatalGraceMs?: number;
  /** Values of the secrets the profile refers to (by name); a launch that lacks one is refused. */
  secrets?: SecretSource;
}

export type LaunchOutcome = 'dry-run' | 'refused' | 'ready' | 'failed';

export interface LaunchResult {
  outcome: LaunchOutcome;
  script: string;
  instances: LaunchedInstance[];
  preflight: PreflightResult;
  /** Where the script was written on the node (null for a dry run or a refusal). */
  scriptPath: string | null;
  /** The node's previous last.sh (for a diff), or null. */
  previousScript: string | null;
  /** Secrets the script reads, and those no source supplied (a dry run only warns about them). */
  secrets: string[];
  missingSecrets: string[];
  durationMs: number;
}

export interface PreparedLaunch {
  preflight: PreflightResult;
  script: string | null;
  instances: RenderedInstance[];
  previousScript: string | null;
  /** Why no script could be rendered (no GPU resolved, tp/dp do not fit). */
  renderError: string | null;
  /** Secrets the script reads on the node (their values are written there before it runs). */
  secrets: string[];
}

/** Preflight + render + the node's last.sh: what a review shows before launching. Starts nothing. */
export async function prepareLaunch(
  t: Transport,
  profile: LaunchProfile | LaunchProfile[],
  opts: { gpus?: number[]; override?: boolean; signal?: AbortLike } = {},
): Promise<PreparedLaunch> {
  const groups = Array.isArray(profile) ? profile : [profile];
  const [pfs, previousScript] = await Promise.all([
    Promise.all(
      groups.map((g, i) =>
        preflight(t, g, (groups.length === 1 ? opts.gpus : undefined) ?? g.gpus, { override: opts.override, signal: opts.signal }).then(
          (r) => (groups.length > 1 ? labelGroup(r, i) : r),
        ),
      ),
    ),
    readLastScript(t, opts.signal),
  ]);
  const pf = mergePreflights(pfs);
  let script: string | null = null;
  let instances: RenderedInstance[] = [];
  let secrets: string[] = [];
  let renderError: string | null = null;
  if (pfs.every((x) => x.gpus.length)) {
    try {
      const r = renderProfileScript(
        groups,
        pfs.map((x) => x.gpus),
      );
      script = r.script;
      instances = r.instances;
      secrets = r.secrets;
    } catch (e) {
      renderError = errorMessage(e);
    }
  } else renderError = 'no GPU to launch on';
  return { preflight: pf, script, instances, previousScript, renderError, secrets };
}

function labelGroup(r: PreflightResult, i: number): PreflightResult {
  const tag = (x: PreflightIssue) => ({ ...x, message: `group ${i + 1}: ${x.message}` });
  return { ...r, refusals: r.refusals.map(tag), warnings: r.warnings.map(tag) };
}

/** One preflight result for several groups (ports and GPUs of all of them). */
function mergePreflights(list: PreflightResult[]): PreflightResult {
  if (list.length === 1) return list[0];
  const refusals = list.flatMap((x) => x.refusals);
  return {
    ok: refusals.length === 0,
    refusals,
    warnings: list.flatMap((x) => x.warnings),
    gpus: list.flatMap((x) => x.gpus),
    nodeGpus: list.find((x) => x.nodeGpus)?.nodeGpus ?? null,
    ports: list.flatMap((x) => x.ports),
    sglangVersion: list.find((x) => x.sglangVersion)?.sglangVersion ?? null,
  };
}

/** Supplies a secret's value by name (environment, --secret NAME=@FILE, SecretStorage); undefined when it has none. */
export type SecretSource = (name: string) => string | undefined | Promise<string | undefined>;

/** Stores one secret in `~/.gpu-sessions/secrets/<name>` (directory 0700, file 0600); the value travels on stdin. */
export function writeSecretOperation(name: string, value: string, nodeLabel: string): RemoteOperation<void> {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/.test(name)) throw new GpuSessionsError('usage', `Bad secret name ${JSON.stringify(name)}.`);
  const body =
    'umask 077; d="$HOME/' +
    SECRETS_DIR +
    '"; mkdir -p "$d" && chmod 700 "$d" && cat > "$d/$1.tmp" && chmod 600 "$d/$1.tmp" && mv -f "$d/$1.tmp" "$d/$1" || exit 3';
  return {
    name: 'write-secret',
    command: `sh -c ${shq(body)} sh ${shq(name)}`,
    stdin: value,
    timeoutMs: 30_000,
    maxOutputBytes: 1024 * 1024,
    parse: (r) => {
      if (r.code !== 0) throw writeFailed(nodeLabel, `store the secret ${name} in ~/${SECRETS_DIR}/`, r);
    },
  };
}

/**
 * Write the secrets a launch script reads into `~/.gpu-sessions/secrets/<name>` (directory 0700, files 0600),
 * each value over stdin: never on a command line, never in the script.
 */
export async function writeSecrets(t: Transport, values: Map<string, string>, signal?: AbortLike): Promise<void> {
  for (const [name, value] of values) await runOperation(t, writeSecretOperation(name, value, t.label), signal);
}

/** How to supply a secret, for messages (redactOutput keeps `NAME=…` and `NAME=@FILE`: placeholders, not values). */
export function supplyHint(names: string[]): string {
  return names.map((n) => `export ${n}=… (or --secret ${n}=@FILE)`).join('; ');
}

function toLaunched(r: RenderedInstance[]): LaunchedInstance[] {
  return r.map((i) => ({
    ...i,
    pid: null,
    state: 'starting' as InstanceState,
    ready: false,
    readyVia: null,
    readyAfterMs: null,
    error: null,
    lastLines: [],
  }));
}

/**
 * Launch a profile: preflight (refusals stop here), render, upload the script (kept on the node; last.sh
 * updated), run it, and wait until every instance is ready or failed or the timeout passes. Servers that
 * are slow or failed are left as they are (nothing is killed); the result says what happened.
 */
export async function launch(
  t: Transport,
  profileOrGroups: LaunchProfile | LaunchProfile[],
  opts: LaunchOptions = {},
): Promise<LaunchResult> {
  const started = Date.now();
  const groups = Array.isArray(profileOrGroups) ? profileOrGroups : [profileOrGroups];
  const profile = groups[0];
  const progress = (phase: LaunchProgress['phase'], message: string) => opts.onProgress?.({ phase, message });
  progress('preflight', `checking ${t.label}…`);
  const prep = await prepareLaunch(t, groups, { gpus: opts.gpus, override: opts.override, signal: opts.signal });
  const pf = prep.preflight;
  // Secrets: resolved in memory, never written anywhere but the node's 0600 files.
  const secretValues = new Map<string, string>();
  const missingSecrets: string[] = [];
  for (const name of prep.secrets) {
    const v = opts.secrets ? await opts.secrets(name) : undefined;
    if (v === undefined || v === '') missingSecrets.push(name);
    else {
      rememberSecret(v);
      secretValues.set(name, v);
    }
  }
  const base = { preflight: pf, previousScript: prep.previousScript, scriptPath: null, secrets: prep.secrets, missingSecrets };
  if (prep.script === null) {
    const refusals = pf.refusals.length
      ? pf
      : { ...pf, ok: false, refusals: [...pf.refusals, { check: 'gpu' as const, message: prep.renderError ?? 'nothing to launch' }] };
    return { ...base, preflight: refusals, outcome: 'refused', script: '', instances: [], durationMs: Date.now() - started };
  }
  const instances = toLaunched(prep.instances);
  if (opts.dryRun)
    return {
      ...base,
      outcome: 'dry-run',
      script: prep.script,
      instances: instances.map((i) => ({ ...i, state: 'not-started' })),
      durationMs: Date.now() - started,
    };
  if (missingSecrets.length) {
    pf.refusals.push({
      check: 'secret',
      message: `The profile refers to secret${missingSecrets.length > 1 ? 's' : ''} ${missingSecrets.join(', ')}, which ${missingSecrets.length > 1 ? 'were' : 'was'} not supplied: ${supplyHint(missingSecrets)}.`,
    });
    pf.ok = false;
  }
  if (opts.expectScript !== undefined && opts.expectScript !== prep.script) {
    pf.refusals.push({
      check: 'gpu',
      message: `The launch script for ${t.label} changed since it was reviewed (the node's GPUs changed?); review it again.`,
    });
    pf.ok = false;
  }
  if (!pf.ok)
    return {
      ...base,
      outcome: 'refused',
      script: prep.script,
      instances: instances.map((i) => ({ ...i, state: 'not-started' })),
      durationMs: Date.now() - started,
    };

  progress('upload', `uploading the launch script to ~/${LAUNCH_DIR}/…`);
  const fileName = scriptFileName(profile, opts.fallbackName);
  const up = await uploadScript(t, fileName, prep.script, opts.signal);
  if (secretValues.size) {
    progress('upload', `storing ${secretValues.size} secret${secretValues.size > 1 ? 's' : ''} in ~/${SECRETS_DIR}/ (mode 0600)…`);
    await writeSecrets(t, secretValues, opts.signal);
  }
  progress('start', `starting ${instances.length} instance${instances.length > 1 ? 's' : ''}…`);
  const run = await runScript(t, fileName, opts.signal);
  for (const inst of instances) {
    const pid = run.started.get(inst.port);
    if (pid !== undefined) inst.pid = pid;
    else
      Object.assign(inst, {
        state: 'not-started',
        error: run.errors.length
          ? run.errors.join('; ')
          : `the script did not start it (exit ${run.code}): ${run.output.split('\n').slice(-3).join(' | ')}`,
      });
  }
  await waitForInstances(t, instances, {
    timeoutMs: opts.timeoutMs ?? 15 * 60_000,
    pollMs: opts.pollMs,
    signal: opts.signal,
    onProgress: opts.onProgress,
    host: profile.host,
    fatalGraceMs: opts.fatalGraceMs,
  });
  const ok = instances.every((i) => i.state === 'ready');
  progress(
    'done',
    ok
      ? `${instances.length}/${instances.length} ready`
      : `${instances.filter((i) => i.state === 'ready').length}/${instances.length} ready`,
  );
  return {
    ...base,
    scriptPath: up.path,
    previousScript: up.previous,
    outcome: ok ? 'ready' : 'failed',
    script: prep.script,
    instances,
    durationMs: Date.now() - started,
  };
}

// ------------------------------------------------------------------------------------ scanning servers

export interface ScannedServer extends SglangServer {
  uid: number | null;
  pgid: number | null;
  /** VIRTUAL_ENV of the process when `<it>/bin/activate` exists. */
  virtualEnv: string | null;
  /** Launch-relevant variables (SGLANG_*, NCCL_*, CUDA_*, HF_HOME, ...) that differ from a login shell's; secrets never. */
  env: Record<string, string>;
  /** Names of its secret variables (HF_TOKEN, SGLANG_API_KEY, ...); values in memory only (serverSecretEnv). */
  secretEnv: string[];
}

export interface ServerScan {
  servers: ScannedServer[];
  ownUid: number | null;
  /** pid → ppid / pgid / uid, for every process (descendants of a server). */
  procs: Map<number, { ppid: number; pgid: number; uid: number }>;
}

/** Variables that change how SGLang runs and are worth keeping in a captured profile. */
const ENV_KEEP =
  /^(SGLANG_[A-Z0-9_]*|NCCL_[A-Z0-9_]*|CUDA_[A-Z0-9_]*|TORCH_[A-Z0-9_]*|PYTORCH_[A-Z0-9_]*|HF_HOME|HF_HUB_OFFLINE|HF_HUB_ENABLE_HF_TRANSFER|HF_HUB_CACHE|TRANSFORMERS_OFFLINE|TRANSFORMERS_CACHE|FLASHINFER_[A-Z0-9_]*|TRITON_[A-Z0-9_]*|OMP_NUM_THREADS|TOKENIZERS_PARALLELISM|NVIDIA_[A-Z0-9_]*|VIRTUAL_ENV)=/;
const ENV_SECRET = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)/i;
const ENV_GREP =
  "'^(SGLANG_|NCCL_|CUDA_|TORCH_|PYTORCH_|HF_|TRANSFORMERS_|FLASHINFER_|TRITON_|OMP_NUM_THREADS=|TOKENIZERS_PARALLELISM=|NVIDIA_|VIRTUAL_ENV=)'";

export function buildScanScript(n: string): string {
  return `${sectionPrologue(n)}
export LC_ALL=C
sec me; id -u
sec login; env 2>/dev/null | grep -E ${ENV_GREP}
sec ps; ps -e -o pid= -o ppid= -o pgid= -o uid= 2>/dev/null
sec proc
${procRecordsLoop(`
  printf 'E\\035'
  { printf '%s\\000' "\${d#/proc/}"
    v=$(tr '\\000' '\\n' < "$d/environ" 2>/dev/null | sed -n 's/^VIRTUAL_ENV=//p' | head -n 1)
    if [ -n "$v" ] && [ -f "$v/bin/activate" ]; then printf 'A'; fi
    printf '\\000%s %s\\000' "$(sed 's/.*) //' "$d/stat" 2>/dev/null | cut -d' ' -f3)" "$(awk '/^Uid:/{print $2}' "$d/status" 2>/dev/null)"
    tr '\\000' '\\n' < "$d/environ" 2>/dev/null | grep -E ${ENV_GREP}; } | od -An -v -tx1
  printf '\\036'
`)}
sec end
`;
}

/** Launch-relevant variables; secret ones go to `secrets` (kept in memory only, remembered for redaction). */
function envLines(text: string, secrets?: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const l of text.split('\n')) {
    const eq = l.indexOf('=');
    if (eq <= 0) continue;
    const k = l.slice(0, eq);
    if (ENV_SECRET.test(k) || isSecretName(k)) {
      rememberSecret(l.slice(eq + 1));
      if (secrets) secrets[k] = l.slice(eq + 1);
      continue;
    }
    if (!ENV_KEEP.test(l)) continue;
    out[k] = l.slice(eq + 1);
  }
  return out;
}

/** In memory only: the secret variables of scanned servers, by pid (to relaunch them with the same values). */
const scannedSecretEnv = new Map<number, Record<string, string>>();

/** A scanned server's secret environment variables (name → value), in memory only. */
export function serverSecretEnv(pid: number): Record<string, string> {
  return scannedSecretEnv.get(pid) ?? {};
}

export function parseScanOutput(text: string, n: string): ServerScan {
  if (!sectionsComplete(text, n)) throw incomplete('The server scan did not complete.');
  const s = splitSections(text, n);
  const me = (s.get('me') ?? '').trim();
  const login = envLines(s.get('login') ?? '');
  const procs = new Map<number, { ppid: number; pgid: number; uid: number }>();
  for (const l of (s.get('ps') ?? '').split('\n')) {
    const f = l.trim().split(/\s+/);
    if (f.length === 4 && f.every((x) => /^\d+$/.test(x)))
      procs.set(Number(f[0]), { ppid: Number(f[1]), pgid: Number(f[2]), uid: Number(f[3]) });
  }
  const procText = s.get('proc') ?? '';
  const records = parseProcRecords(procText);
  const extras = new Map<number, { activate: boolean; env: Record<string, string>; secretEnv: string[] }>();
  for (const rec of procText.split('\x1e')) {
    // E \x1d hex(pid \0 A? \0 pgid uid \0 env lines): hex-encoded like the P records (see procRecordsLoop)
    const r = rec.replace(/^\s+/, '').split('\x1d');
    const body = r[0] === 'E' && r.length === 2 ? decodeHexField(r[1]) : null;
    const f = body ? ['E', ...body.toString('utf8').split('\0')] : [];
    if (f.length < 5 || !/^\d+$/.test(f[1])) continue;
    const pid = Number(f[1]);
    const sec: Record<string, string> = {};
    extras.set(pid, { activate: f[2] === 'A', env: envLines(f[4], sec), secretEnv: Object.keys(sec) });
    if (Object.keys(sec).length) {
      if (scannedSecretEnv.size >= 4096) scannedSecretEnv.delete(scannedSecretEnv.keys().next().value as number);
      scannedSecretEnv.set(pid, sec);
    }
    // ps may be missing (busybox): the group and owner of the server from /proc
    const [pg, uid] = f[3].trim().split(/\s+/).map(Number);
    if (!procs.has(pid) && Number.isInteger(pg) && Number.isInteger(uid)) procs.set(pid, { ppid: -1, pgid: pg, uid });
  }
  const servers = findServers([], records, []).map((srv): ScannedServer => {
    const p = procs.get(srv.pid);
    const ex = extras.get(srv.pid);
    const env: Record<string, string> = {};
    let virtualEnv: string | null = null;
    for (const [k, v] of Object.entries(ex?.env ?? {})) {
      if (k === 'VIRTUAL_ENV') {
        if (ex?.activate) virtualEnv = v;
        continue;
      }
      if (k === 'CUDA_VISIBLE_DEVICES') continue;
      if (login[k] !== v) env[k] = v;
    }
    return { ...srv, uid: p?.uid ?? null, pgid: p?.pgid ?? null, virtualEnv, env, secretEnv: ex?.secretEnv ?? [] };
  });
  return { servers, ownUid: /^\d+$/.test(me) ? Number(me) : null, procs };
}

/** The server scan; the parser refuses output without its end marker (a run cut short or cut at the bound). */
export function scanOperation(): RemoteOperation<ServerScan> {
  const n = nonce();
  return {
    name: 'server-scan',
    command: 'sh -s',
    stdin: buildScanScript(n),
    timeoutMs: 60_000,
    maxOutputBytes: 16 * 1024 * 1024,
    acceptTruncated: true,
    idempotent: true,
    parse: (r) => parseScanOutput(r.stdout.toString('utf8'), n),
  };
}

/** The node's SGLang servers with owner, process group and environment, in ONE exec. */
export async function scanServers(t: Transport, signal?: AbortLike): Promise<ServerScan> {
  return runOperation(t, scanOperation(), signal);
}

// ------------------------------------------------------------------------------------ stop

export interface StopOptions {
  port: number;
  /** Stop only if the server on the port has this pid. */
  pid?: number;
  /** Wait for running requests to reach 0 first. */
  drain?: boolean;
  /** Give up draining after this long (the server is then NOT stopped). Default 10 min. */
  drainTimeoutMs?: number;
  /** SIGKILL when SIGTERM has not ended the process after this long. Default 30 s. */
  termTimeoutMs?: number;
  /** Drain from the log: no new decode line for this long counts as idle (an idle server prints none). Default 15 s. */
  quietMs?: number;
  pollMs?: number;
  signal?: AbortLike;
  onProgress?: (message: string) => void;
}

export type DrainSource = 'metrics' | 'get_load' | 'log';

export interface StopResult {
  port: number;
  pid: number | null;
  found: boolean;
  /** The process is gone. */
  stopped: boolean;
  /** The last signal sent. */
  signal: 'SIGTERM' | 'SIGKILL' | null;
  /** The whole process group was signalled (the server leads its own group). */
  group: boolean;
  drain: { source: DrainSource | null; waitedMs: number; drained: boolean; lastRunning: number | null } | null;
  durationMs: number;
  message: string;
}

export interface LogDrainState {
  lastDecode: string | null;
  quietSince: number;
}

/**
 * Running requests from the latest decode line of a log: its `#running-req`, or 0 once no new decode line
 * has appeared for quietMs (an idle scheduler prints none, so the last line keeps its last non-zero count).
 */
export function logDrainReading(line: string, state: LogDrainState, now: number, quietMs: number): number | null {
  if (line !== state.lastDecode) {
    state.lastDecode = line;
    state.quietSince = now;
  }
  const running = line ? (classifyLine(line).stat?.runningReqs ?? null) : null;
  if (running === 0) return 0;
  if (now - state.quietSince >= quietMs) return 0;
  return running ?? (line ? null : 1);
}

/** The latest decode line (with `#running-req`) in the last 2 MiB of a server's log; '' when there is none. */
export function lastDecodeLineOperation(logFile: string): RemoteOperation<string> {
  return {
    name: 'last-decode-line',
    command: `tail -c 2097152 ${shq(logFile)} 2>/dev/null | grep -a -F -e '#running-req' | grep -a -F -e 'Decode' | tail -n 1`,
    timeoutMs: 20_000,
    maxOutputBytes: 4 * 1024 * 1024,
    idempotent: true,
    parse: (r) => r.stdout.toString('utf8').trim(),
  };
}

/** Running + queued requests now, from the first source that answers; null when none does. */
async function loadNow(
  t: Transport,
  srv: ScannedServer,
  state: { source: DrainSource | null; lastDecode: string | null; quietSince: number },
  quietMs: number,
): Promise<number | null> {
  const tryMetrics = async (): Promise<number | null> => {
    const r = await httpGet(t, srv.host, srv.port, '/metrics', { timeoutMs: 5000, maxBytes: 4 * 1024 * 1024, headers: authHeaders(srv) });
    if (r.status !== 200) return null;
    const m = metricsSummary(parseMetrics(r.body));
    if (m.runningReqs === null) return null;
    return m.runningReqs + (m.queueReqs ?? 0);
  };
  const tryLoad = async (): Promise<number | null> => {
    const r = await httpGet(t, srv.host, srv.port, '/get_load', { timeoutMs: 5000, maxBytes: 1024 * 1024, headers: authHeaders(srv) });
    if (r.status !== 200) return null;
    const v = JSON.parse(r.body) as unknown;
    const ranks = Array.isArray(v) ? v : [v];
    let sum = 0;
    let any = false;
    for (const x of ranks) {
      if (x && typeof x === 'object') {
        const o = x as Record<string, unknown>;
        for (const k of ['num_reqs', 'num_waiting_reqs'])
          if (typeof o[k] === 'number') {
            sum += o[k] as number;
            any = true;
          }
      }
    }
    return any ? sum : null;
  };
  const tryLog = async (): Promise<number | null> => {
    if (!srv.logFile) return null;
    const line = await runOperation(t, lastDecodeLineOperation(srv.logFile));
    return logDrainReading(line, state, Date.now(), quietMs);
  };
  const order: Array<[DrainSource, () => Promise<number | null>]> = [
    ['metrics', tryMetrics],
    ['get_load', tryLoad],
    ['log', tryLog],
  ];
  const candidates = state.source
    ? order.filter(([s]) => s === state.source)
    : srv.enableMetrics
      ? order
      : order.filter(([s]) => s !== 'metrics');
  for (const [source, fn] of candidates) {
    try {
      const v = await fn();
      if (v !== null) {
        state.source = source;
        return v;
      }
    } catch {
      /* next source */
    }
  }
  return null;
}

export function buildKillScript(pid: number, opts: { group: boolean; descendants: number[]; termTimeoutMs: number }): string {
  // dash's kill takes a process group as "-PGID" (not "-- -PGID").
  const target = opts.group ? `-${pid}` : String(pid);
  const killAll = opts.group ? `-${pid}` : [pid, ...opts.descendants].join(' ');
  const rounds = Math.max(1, Math.ceil(opts.termTimeoutMs / 200));
  return `alive() { [ -r /proc/${pid}/stat ] || return 1; z=$(sed 's/.*) //' /proc/${pid}/stat 2>/dev/null | cut -c1); [ -n "$z" ] && [ "$z" != Z ]; }
if ! alive; then echo GS-GONE-BEFORE; exit 0; fi
if e=$(kill -TERM ${target} 2>&1); then echo GS-TERM; else echo "GS-KILL-FAILED $e"; exit 4; fi
i=0
while alive && [ "$i" -lt ${rounds} ]; do sleep 0.2; i=$((i + 1)); done
if alive; then kill -KILL ${killAll} 2>/dev/null; echo GS-KILLED; j=0; while alive && [ "$j" -lt 25 ]; do sleep 0.2; j=$((j + 1)); done; fi
${!opts.group && opts.descendants.length ? `kill -KILL ${opts.descendants.join(' ')} 2>/dev/null` : ''}
if alive; then echo GS-ALIVE; else echo GS-GONE; fi
`;
}

export interface KillOutcome {
  /** Why kill itself failed (`GS-KILL-FAILED <why>`); null when it could signal. */
  failed: string | null;
  /** The process was gone before anything was sent. */
  goneBefore: boolean;
  /** SIGTERM was not enough: SIGKILL was sent. */
  killed: boolean;
  /** The process is gone now. */
  gone: boolean;
}

/** The markers buildKillScript prints. */
export function parseKillOutput(r: ExecResult): KillOutcome {
  const out = r.stdout.toString('utf8');
  const failed = /GS-KILL-FAILED ?(.*)/.exec(out);
  return {
    failed: failed ? failed[1].trim() || 'kill failed' : null,
    goneBefore: /GS-GONE-BEFORE/.test(out),
    killed: /GS-KILLED/.test(out),
    gone: /GS-GONE/.test(out),
  };
}

/** SIGTERM (the group), wait up to termTimeoutMs, SIGKILL. Not idempotent: never retried on a dropped connection. */
export function killOperation(
  pid: number,
  opts: { group: boolean; descendants: number[]; termTimeoutMs: number },
): RemoteOperation<KillOutcome> {
  return {
    name: 'kill',
    command: 'sh -s',
    stdin: buildKillScript(pid, opts),
    timeoutMs: opts.termTimeoutMs + 30_000,
    maxOutputBytes: 1024 * 1024,
    parse: parseKillOutput,
  };
}

function descendantsOf(pid: number, procs: Map<number, { ppid: number }>): number[] {
  const out: number[] = [];
  const kids = new Map<number, number[]>();
  for (const [p, v] of procs) {
    const l = kids.get(v.ppid) ?? [];
    l.push(p);
    kids.set(v.ppid, l);
  }
  const stack = [...(kids.get(pid) ?? [])];
  while (stack.length && out.length < 4096) {
    const p = stack.pop()!;
    if (out.includes(p)) continue;
    out.push(p);
    stack.push(...(kids.get(p) ?? []));
  }
  return out;
}

/**
 * Stop the SGLang server listening on `port`: optionally drain first (running + queued requests reach 0,
 * read from /metrics when it was launched with --enable-metrics, else /get_load, else its log), then SIGTERM
 * its process group (or the process alone when it shares a group with others), wait, SIGKILL after
 * termTimeoutMs. A drain that times out leaves the server running.
 */
export async function stopServer(t: Transport, opts: StopOptions): Promise<StopResult> {
  const started = Date.now();
  const say = (m: string) => opts.onProgress?.(m);
  say(`looking for the server on port ${opts.port}…`);
  const scan = await scanServers(t, opts.signal);
  const srv = scan.servers.find((s) => s.port === opts.port && (opts.pid === undefined || s.pid === opts.pid));
  const result = (r: Partial<StopResult> & { message: string }): StopResult => ({
    port: opts.port,
    pid: srv?.pid ?? null,
    found: Boolean(srv),
    stopped: false,
    signal: null,
    group: false,
    drain: null,
    durationMs: Date.now() - started,
    ...r,
  });
  if (!srv) {
    const other = scan.servers.find((s) => s.port === opts.port);
    return result({
      message: other
        ? `The server on port ${opts.port} of ${t.label} has pid ${other.pid}, not ${opts.pid}; nothing stopped.`
        : `No SGLang server listens on port ${opts.port} of ${t.label}${scan.servers.length ? ` (servers on ${scan.servers.map((s) => s.port).join(', ')})` : ''}.`,
    });
  }
  if (scan.ownUid !== null && srv.uid !== null && scan.ownUid !== 0 && srv.uid !== scan.ownUid) {
    return result({
      message: `The server on port ${opts.port} (pid ${srv.pid}) belongs to another user (uid ${srv.uid}); it cannot be stopped from this account.`,
    });
  }

  let drain: StopResult['drain'] = null;
  if (opts.drain) {
    const state = { source: null as DrainSource | null, lastDecode: null as string | null, quietSince: Date.now() };
    const dStart = Date.now();
    const deadline = dStart + (opts.drainTimeoutMs ?? 10 * 60_000);
    let zeros = 0;
    let last: number | null = null;
    let drained = false;
    for (;;) {
      last = await loadNow(t, srv, state, opts.quietMs ?? 15_000);
      if (last === 0) zeros++;
      else zeros = 0;
      say(
        `draining port ${opts.port}: ${last === null ? 'load unknown' : `${last} running request${last === 1 ? '' : 's'}`}${state.source ? ` (from ${state.source === 'get_load' ? '/get_load' : state.source === 'metrics' ? '/metrics' : 'its log'})` : ''}`,
      );
      if (zeros >= 2 || (last === 0 && state.source === 'log')) {
        drained = true;
        break;
      }
      if (last === null && state.source === null) {
        // No source at all (no metrics, /get_load, nor log): the process may be gone already.
        const again = await scanServers(t, opts.signal);
        if (!again.servers.some((s) => s.pid === srv.pid)) {
          drained = true;
          break;
        }
      }
      if (Date.now() >= deadline) break;
      await sleep(Math.min(opts.pollMs ?? 1000, Math.max(0, deadline - Date.now())), opts.signal);
    }
    drain = { source: state.source, waitedMs: Date.now() - dStart, drained, lastRunning: last };
    if (!drained) {
      return result({
        drain,
        message: `Port ${opts.port} still had ${last ?? 'an unknown number of'} running request(s) after ${Math.round(drain.waitedMs / 1000)} s of draining; the server was NOT stopped.`,
      });
    }
  }

  const group = srv.pgid === srv.pid;
  const termTimeoutMs = opts.termTimeoutMs ?? 30_000;
  say(`stopping pid ${srv.pid} on port ${opts.port} (SIGTERM${group ? ' to its process group' : ''})…`);
  const k = await runOperation(
    t,
    killOperation(srv.pid, { group, descendants: group ? [] : descendantsOf(srv.pid, scan.procs), termTimeoutMs }),
    opts.signal,
  );
  if (k.failed !== null) return result({ drain, group, message: `Could not signal pid ${srv.pid} on ${t.label}: ${k.failed}` });
  const { gone, killed } = k;
  const sig: StopResult['signal'] = k.goneBefore ? null : killed ? 'SIGKILL' : 'SIGTERM';
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const msg = !gone
    ? `pid ${srv.pid} on port ${opts.port} is still alive after SIGTERM and SIGKILL.`
    : sig === null
      ? `The server on port ${opts.port} (pid ${srv.pid}) had already exited.`
      : `Stopped the server on port ${opts.port} (pid ${srv.pid}${group ? ', its process group' : ''}) with ${sig}${killed ? ` after it ignored SIGTERM for ${Math.round(termTimeoutMs / 1000)} s` : ''}${drain ? ` after draining for ${(drain.waitedMs / 1000).toFixed(1)} s` : ''} (${secs} s in all).`;
  return result({ drain, group, stopped: gone, signal: sig, message: msg, durationMs: Date.now() - started });
}
