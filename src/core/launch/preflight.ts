/**
 * Launch preflight: ONE exec that checks ports, GPUs, model path and import sglang, giving refusals and warnings.
 */
import { errorMessage } from '../util/errors';
import { RemoteOperation, runOperation } from '../remote/operation';
import { sectionPrologue, sectionsComplete, splitSections } from '../remote/sections';
import { nodeScript } from '../util/nodeScripts';
import { shq } from '../util/quote';
import { AbortLike, Transport } from '../ssh/transport';
import { DEFAULT_PYTHON, LaunchProfile, planInstances, remotePathExpr, renderPreamble } from './profile';
import { nonce } from './launchCommon';
import { errorSummary } from './readiness';
import { removedFlags } from '../sglang/removedFlags';

// ------------------------------------------------------------------------------------ preflight

type PreflightCheck = 'port' | 'gpu' | 'model' | 'python' | 'workdir' | 'secret' | 'flags';

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

interface PreflightOptions {
  /** Launch on GPUs that have compute processes anyway (and when nvidia-smi cannot be asked). */
  override?: boolean;
  signal?: AbortLike;
  timeoutMs?: number;
  /** A preview (dry run, plan, review): read only, the node's interpreter and venv are not run. */
  preview?: boolean;
}

/** Looks like a Hugging Face repo id ("org/name"), not a local path. */
export function looksLikeHfRepo(p: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._-]*\/[A-Za-z0-9][A-Za-z0-9._-]*$/.test(p) && !p.includes('..');
}

/**
 * A preview's interpreter check reads, it does not run: the venv's site-packages is looked at for an `sglang`
 * folder, the interpreter for existing. Nothing of the node's (venv activate, interpreter, user-site) runs.
 */
function previewPythonSection(profile: LaunchProfile, pyExpr: string): string {
  const venv = profile.venv ? remotePathExpr(profile.venv) : null;
  const find = venv
    ? `for d in ${venv}/lib/python*/site-packages/sglang; do [ -d "$d" ] && { echo GS-PREVIEW-SGLANG found; break; }; done; echo GS-PREVIEW-SGLANG end`
    : 'echo GS-PREVIEW-SGLANG unknown';
  const py = `p=${pyExpr}; if command -v "$p" >/dev/null 2>&1 || [ -x "$p" ]; then echo GS-PREVIEW-PY found; else echo GS-PREVIEW-PY missing; fi`;
  return `sec python; ( ${py}; ${find} ) 2>/dev/null | head -n 5`;
}

export function buildPreflightScript(n: string, profile: LaunchProfile, preview = false): string {
  const model = remotePathExpr(profile.modelPath);
  const draft = profile.speculative?.draftModelPath;
  const py = profile.python ?? DEFAULT_PYTHON;
  const pyExpr = py.startsWith('~/') ? remotePathExpr(py) : shq(py);
  const workDir = remotePathExpr(profile.workDir ?? '~');
  const header = [
    sectionPrologue(n),
    `gs_workdir=${workDir}`,
    `gs_model=${model}`,
    draft !== undefined ? `gs_has_draft=1; gs_draft=${remotePathExpr(draft)}` : 'gs_has_draft=0; gs_draft=',
    ...(preview ? [] : [`gs_py=${pyExpr}`, `preamble() {\n:\n${renderPreamble(profile, 'GS-ERROR', { secrets: false }).join('\n')}\n}`]),
  ];
  const python = preview ? `${previewPythonSection(profile, pyExpr)}\n` : nodeScript('launch/preflightPython.sh');
  return `${header.join('\n')}\n${nodeScript('launch/preflight.sh')}${python}sec end\n`;
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

/** Where the checks of parsePreflightOutput put what they find, in the order they find it. */
interface Findings {
  refusals: PreflightIssue[];
  warnings: PreflightIssue[];
  /** A refusal, or a warning when the user overrides an overridable one. */
  refuseOrWarn(check: PreflightCheck, msg: string, overridable: boolean): void;
}

type NodeGpu = { index: number; uuid: string | null };

/** The GPUs nvidia-smi listed (null when none), and the GPUs the launch uses: `requested`, or all of the node's. */
function checkGpus(
  gtext: string,
  requested: number[] | 'all',
  nodeLabel: string,
  f: Findings,
): { gpus: number[]; nodeGpus: NodeGpu[] | null } {
  const rcm = /(?:^|\n)rc=(\d+)\s*$/.exec(gtext);
  const body = rcm ? gtext.slice(0, rcm.index) : gtext;
  let nodeGpus: NodeGpu[] | null = null;
  const parsedGpus: NodeGpu[] = [];
  for (const line of body.split('\n')) {
    const m = /^\s*(\d+)\s*,\s*(\S*)\s*$/.exec(line);
    if (m) parsedGpus.push({ index: Number(m[1]), uuid: m[2] && !m[2].startsWith('[') ? m[2] : null });
  }
  if (parsedGpus.length) nodeGpus = parsedGpus;
  const smiProblem = nodeGpus ? null : body.trim().split('\n').slice(-2).join(' ').trim() || 'no output';
  let gpus: number[] = [];
  if (requested === 'all') {
    if (nodeGpus) gpus = nodeGpus.map((g) => g.index);
    else f.refusals.push({ check: 'gpu', message: `gpus is "all", but nvidia-smi on ${nodeLabel} lists no GPU (${smiProblem}).` });
  } else {
    gpus = [...requested];
    if (!nodeGpus)
      f.refuseOrWarn('gpu', `nvidia-smi on ${nodeLabel} could not list GPUs (${smiProblem}); cannot check GPUs ${gpus.join(',')}.`, true);
    else {
      const have = new Set(nodeGpus.map((g) => g.index));
      const missing = gpus.filter((g) => !have.has(g));
      if (missing.length)
        f.refusals.push({
          check: 'gpu',
          message:
            `GPU${missing.length > 1 ? 's' : ''} ${missing.join(', ')} ${missing.length > 1 ? 'do' : 'does'} ` +
            `not exist on ${nodeLabel} (it has GPU${nodeGpus.length === 1 ? '' : 's'} ${nodeGpus.map((g) => g.index).join(', ')}).`,
        });
    }
  }
  return { gpus, nodeGpus };
}

/** Each GPU of the launch that a process already uses (the `apps` section: pid, name, MiB, GPU UUID). */
function checkGpusFree(apps: string, nodeGpus: NodeGpu[], gpus: number[], nodeLabel: string, f: Findings): void {
  const byUuid = new Map(nodeGpus.filter((g) => g.uuid).map((g) => [g.uuid!, g.index]));
  const busy = new Map<number, string[]>();
  for (const line of apps.split('\n')) {
    const fields = line.split(',').map((x) => x.trim());
    if (fields.length < 4 || !/^\d+$/.test(fields[0])) continue;
    const uuid = fields[fields.length - 1];
    const mem = fields[fields.length - 2];
    const name = fields.slice(1, fields.length - 2).join(',');
    const idx = byUuid.get(uuid);
    if (idx === undefined) continue;
    const l = busy.get(idx) ?? [];
    l.push(`pid ${fields[0]} ${name}${/^\d+$/.test(mem) ? ` (${mem} MiB)` : ''}`);
    busy.set(idx, l);
  }
  for (const g of gpus) {
    const procs = busy.get(g);
    if (procs)
      f.refuseOrWarn(
        'gpu',
        `GPU ${g} is in use on ${nodeLabel}: ${procs.slice(0, 3).join(', ')}${procs.length > 3 ? `, and ${procs.length - 3} more` : ''}. ` +
          `Stop it first, choose other gpus, or override.`,
        true,
      );
  }
}

/** The ports the launch's servers take, each refused when something already listens on it. */
function checkPorts(s: Map<string, string>, profile: LaunchProfile, gpus: number[], nodeLabel: string, f: Findings): number[] {
  let ports: number[] = [];
  if (gpus.length) {
    try {
      ports = planInstances(profile, gpus).map((p) => p.port);
    } catch (e) {
      f.refusals.push({ check: 'gpu', message: errorMessage(e) });
    }
  }
  const listening = parseListenPorts(s.get('listen') ?? '');
  const owners = parseSsOwners(s.get('ss') ?? '');
  for (const [k, port] of ports.entries()) {
    const addrs = listening.get(port);
    if (!addrs) continue;
    const who = owners.get(port);
    f.refusals.push({
      check: 'port',
      message:
        `Port ${port}${profile.layout === 'per-gpu' ? ` (GPU ${gpus[k]})` : ''} is already in use on ${nodeLabel}: ` +
        `something listens on ${addrs.map((a) => `${a}:${port}`).join(', ')}${who ? ` (${who})` : ''}. Stop it or choose another basePort.`,
    });
  }
  return ports;
}

/** The working directory, the model and the draft model. */
function checkPaths(s: Map<string, string>, profile: LaunchProfile, nodeLabel: string, f: Findings): void {
  if ((s.get('workdir') ?? '').trim() !== 'ok')
    f.refusals.push({ check: 'workdir', message: `workDir ${profile.workDir ?? '~'} does not exist on ${nodeLabel}.` });
  const modelCheck = (what: string, field: string, p: string, state: string) => {
    if (state === 'dir-config') return;
    if (state === 'dir')
      f.warnings.push({ check: 'model', message: `${field}: ${p} on ${nodeLabel} has no config.json; SGLang may not load it.` });
    else if (state === 'not-dir') f.refusals.push({ check: 'model', message: `${field}: ${p} on ${nodeLabel} is not a directory.` });
    else if (looksLikeHfRepo(p))
      f.warnings.push({
        check: 'model',
        message: `${field}: "${p}" is not a directory on ${nodeLabel}; it looks like a Hugging Face repo id, which SGLang downloads on start (into HF_HOME).`,
      });
    else f.refusals.push({ check: 'model', message: `${field}: the ${what} ${p} does not exist on ${nodeLabel}.` });
  };
  modelCheck('model', 'modelPath', profile.modelPath, (s.get('model') ?? '').trim());
  const draft = profile.speculative?.draftModelPath;
  if (draft !== undefined) modelCheck('draft model', 'speculative.draftModelPath', draft, (s.get('draft') ?? '').trim());
}

/** Whether the interpreter imports sglang (a preview only says what it could see); the version it imports, or null. */
function checkPython(pyOut: string, profile: LaunchProfile, nodeLabel: string, f: Findings): string | null {
  const ver = /GS-SGLANG (\S+)/.exec(pyOut);
  const rc = /GS-RC (\d+)/.exec(pyOut);
  const py = profile.python ?? DEFAULT_PYTHON;
  const previewPy = /GS-PREVIEW-PY (\w+)/.exec(pyOut);
  if (previewPy) {
    const found = /GS-PREVIEW-SGLANG found/.test(pyOut);
    const unknown = /GS-PREVIEW-SGLANG unknown/.test(pyOut);
    const why =
      previewPy[1] !== 'found'
        ? `${py} was not found on ${nodeLabel}`
        : found
          ? ''
          : unknown
            ? `whether ${py} imports sglang is checked when the launch is confirmed`
            : `no sglang package in ${profile.venv}'s site-packages on ${nodeLabel}`;
    if (why)
      f.warnings.push({
        check: 'python',
        message: `${why} (a preview never runs the node's interpreter or sources its venv; the launch checks it first).`,
      });
  } else if (!ver || (rc && rc[1] !== '0')) {
    const lines = pyOut.split('\n').filter((l) => l && !/^GS-RC /.test(l));
    const gsErr = lines.find((l) => l.startsWith('GS-ERROR '));
    const why = gsErr ? gsErr.slice('GS-ERROR '.length) : (errorSummary(lines) ?? `exit ${rc?.[1] ?? '?'}`);
    f.refusals.push({
      check: 'python',
      message: `${py}${profile.venv ? ` (venv ${profile.venv})` : ''} cannot import sglang on ${nodeLabel}: ${why}`,
    });
  }
  return ver ? ver[1] : null;
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
  const f: Findings = {
    refusals,
    warnings,
    refuseOrWarn: (check, msg, overridable) => {
      if (overridable && override) warnings.push({ check, message: `${msg} (overridden)` });
      else refusals.push(overridable ? { check, message: msg, overridable } : { check, message: msg });
    },
  };
  const { gpus, nodeGpus } = checkGpus(s.get('gpus') ?? '', requested, nodeLabel, f);
  if (nodeGpus) checkGpusFree(s.get('apps') ?? '', nodeGpus, gpus, nodeLabel, f);
  const ports = checkPorts(s, profile, gpus, nodeLabel, f);
  checkPaths(s, profile, nodeLabel, f);
  const sglangVersion = checkPython((s.get('python') ?? '').replace(/\s+$/, ''), profile, nodeLabel, f);
  if (!sectionsComplete(text, n)) refusals.push({ check: 'python', message: `The preflight did not complete on ${nodeLabel}.` });
  // 2026 SGLang removed the deprecated MoE switches: argparse would refuse them (the old builds still take them)
  for (const r of removedFlags(profile.extraArgs ?? []))
    warnings.push({ check: 'flags', message: `${r.flag} was removed from SGLang in 2026 (PR #38375); use ${r.use} instead.` });
  return { ok: refusals.length === 0, refusals, warnings, gpus, nodeGpus, ports, sglangVersion };
}

/**
 * The preflight as a described operation. Output cut at its bound lacks the end marker, which the parser
 * turns into a refusal ("did not complete") like any other cut-off run.
 */
export function preflightOperation(
  profile: LaunchProfile,
  gpus: number[] | 'all',
  nodeLabel: string,
  opts: { override?: boolean; timeoutMs?: number; preview?: boolean } = {},
): RemoteOperation<PreflightResult> {
  const n = nonce();
  return {
    name: 'preflight',
    command: 'sh -s',
    stdin: buildPreflightScript(n, profile, Boolean(opts.preview)),
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
