/**
 * Launch profile validation: every error names its field and suggests the closest known word.
 */
import { isSecretFlag, resolveFlag } from '../sglang/flags';
import { isSecretName } from '../util/redact';
import {
  ArgValue,
  DEFAULT_BASE_PORT,
  FLAG_BY_NAME,
  GROUP_FIELDS,
  LaunchProfile,
  Layout,
  PROFILE_FIELDS,
  RESERVED_FLAGS,
  SPECULATIVE_ALGORITHMS,
  SPECULATIVE_FIELDS,
  SecretRef,
  SpeculativeAlgorithm,
  SpeculativeConfig,
  isSecretRef,
  secretName,
} from './profileModel';

// ------------------------------------------------------------------------------------ validation

interface ValidationResult {
  /** The first (for an old single-group file: the only) server group. */
  profile?: LaunchProfile;
  /** Every server group, each carrying the profile's name and description. */
  groups?: LaunchProfile[];
  errors: string[];
}

export function isObject(x: unknown): x is Record<string, unknown> {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function show(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === undefined) return 'nothing';
  try {
    const s = JSON.stringify(v);
    return s.length > 80 ? s.slice(0, 77) + '...' : s;
  } catch {
    return String(v);
  }
}

/** Levenshtein distance, for "did you mean" hints. */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

function closest(word: string, choices: readonly string[]): string | null {
  const lw = word.toLowerCase().replace(/[-_]/g, '');
  for (const c of choices) if (c.toLowerCase().replace(/[-_]/g, '') === lw) return c;
  let best: string | null = null;
  let bestD = Infinity;
  for (const c of choices) {
    const dd = distance(word.toLowerCase(), c.toLowerCase());
    if (dd < bestD) {
      bestD = dd;
      best = c;
    }
  }
  return best !== null && bestD <= Math.max(2, Math.floor(word.length / 3)) ? best : null;
}

/** Characters a value may not contain: NUL cannot be in an argv; CR/LF would make the script unreadable. */
function badChars(s: string): string | null {
  if (s.includes('\0')) return 'a NUL character';
  if (/[\r\n]/.test(s)) return 'a line break';
  return null;
}

class Checker {
  errors: string[] = [];

  err(field: string, msg: string): void {
    this.errors.push(`${field}: ${msg}`);
  }

  string(
    obj: Record<string, unknown>,
    key: string,
    field: string,
    opts: { required?: boolean; nonEmpty?: boolean } = {},
  ): string | undefined {
    const v = obj[key];
    if (v === undefined || v === null) {
      if (opts.required) this.err(field, 'is required');
      return undefined;
    }
    if (typeof v !== 'string') {
      this.err(field, `must be a string (got ${show(v)})`);
      return undefined;
    }
    if ((opts.nonEmpty ?? true) && v.trim() === '') {
      this.err(field, 'must not be empty');
      return undefined;
    }
    const bad = badChars(v);
    if (bad) {
      this.err(field, `must not contain ${bad}`);
      return undefined;
    }
    return v;
  }

  int(obj: Record<string, unknown>, key: string, field: string, min: number, max = Number.MAX_SAFE_INTEGER, note = ''): number | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      this.err(
        field,
        `must be an integer ${max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `from ${min} to ${max}`}${note} (got ${show(v)})`,
      );
      return undefined;
    }
    return v;
  }

  bool(obj: Record<string, unknown>, key: string, field: string): boolean | undefined {
    const v = obj[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') {
      this.err(field, `must be true or false (got ${show(v)})`);
      return undefined;
    }
    return v;
  }

  unknownKeys(obj: Record<string, unknown>, known: readonly string[], prefix: string): void {
    for (const k of Object.keys(obj)) {
      if (known.includes(k)) continue;
      const hint = closest(k, known);
      this.err(`${prefix}${k}`, `unknown field${hint ? ` (did you mean "${hint}"?)` : ''}`);
    }
  }
}

/** A path field: absolute, `~`, `~/x`, or (where allowed) relative. */
function checkPath(c: Checker, v: string | undefined, field: string, allowRelative: boolean): void {
  if (v === undefined) return;
  if (/^~[^/]/.test(v)) c.err(field, `"${v}": only "~" and "~/..." (the remote home) are expanded; "~user" is not supported`);
  else if (!allowRelative && !v.startsWith('/') && !v.startsWith('~')) c.err(field, `"${v}" must be an absolute path or start with "~/"`);
}

/**
 * Check a parsed profile file. Errors name the field: `speculative.algorithm: "MTP" is not one of ...`.
 * The returned profile has its defaults filled in (layout per-gpu, basePort 30000, gpus all, extraArgs
 * [], env {}).
 */
export function validateProfile(x: unknown): ValidationResult {
  if (!isObject(x)) return { errors: [`(profile): must be a JSON object (got ${Array.isArray(x) ? 'an array' : show(x)})`] };
  if (x.groups === undefined) {
    const one = validateOne(
      x,
      PROFILE_FIELDS.filter((f) => f !== 'groups'),
    );
    return one.profile ? { ...one, groups: [one.profile] } : one;
  }
  // Several server groups: { name?, description?, groups: [ {group}, ... ] }
  const errors: string[] = [];
  const top = ['$schema', 'name', 'description', 'groups'];
  for (const k of Object.keys(x))
    if (!top.includes(k)) {
      const hint = closest(k, top);
      errors.push(
        `${k}: ${GROUP_FIELDS.includes(k as never) ? 'belongs inside each entry of "groups"' : `unknown field${hint ? ` (did you mean "${hint}"?)` : ''}`}`,
      );
    }
  const head = validateOne({ modelPath: '-', name: x.name, description: x.description }, ['modelPath', 'name', 'description']);
  errors.push(...head.errors);
  if (x.$schema !== undefined && typeof x.$schema !== 'string') errors.push('$schema: must be a string');
  if (!Array.isArray(x.groups) || x.groups.length === 0) {
    errors.push(
      `groups: must be a non-empty list of server groups, each like {"modelPath": "...", "gpus": [0], ...} (got ${show(x.groups)})`,
    );
    return { errors };
  }
  const groups: LaunchProfile[] = [];
  x.groups.forEach((g, i) => {
    if (!isObject(g)) return errors.push(`groups[${i}]: must be an object (got ${show(g)})`);
    const r = validateOne(g, GROUP_FIELDS);
    errors.push(...r.errors.map((e) => `groups[${i}].${e}`));
    if (r.profile)
      groups.push(
        stripUndef({
          ...r.profile,
          $schema: typeof x.$schema === 'string' ? x.$schema : undefined,
          name: head.profile?.name,
          description: head.profile?.description,
        }),
      );
  });
  // Two groups must not listen on the same port.
  const taken: Array<{ i: number; ports: number[] }> = [];
  groups.forEach((g, i) => {
    const n = g.layout === 'single' ? 1 : Array.isArray(g.gpus) ? g.gpus.length : 1;
    const ports = Array.from({ length: n }, (_, k) => g.basePort + k);
    const clash = taken.find((t) => t.ports.some((q) => ports.includes(q)));
    if (clash) errors.push(`groups[${i}].basePort: port ${ports.find((q) => clash.ports.includes(q))} is also used by groups[${clash.i}]`);
    taken.push({ i, ports });
  });
  if (errors.length) return { errors };
  return { profile: groups[0], groups, errors: [] };
}

/** GPUs one server uses on this node: tp × pp × dp (dp not counted with --enable-dp-attention), shared over nnodes. */
export function gpusPerServer(o: { tp?: number; dp?: number; pp?: number; nnodes?: number; enableDpAttention?: boolean }): number {
  const total = (o.tp ?? 1) * (o.enableDpAttention ? 1 : (o.dp ?? 1)) * (o.pp ?? 1);
  return Math.max(1, Math.floor(total / Math.max(1, o.nnodes ?? 1)));
}

function validateOne(x: Record<string, unknown>, known: readonly string[]): ValidationResult {
  const c = new Checker();
  c.unknownKeys(x, known, '');

  const name = c.string(x, 'name', 'name');
  if (name !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._ -]{0,79}$/.test(name))
    c.err('name', `"${name}" must be 1-80 letters, digits, ".", "_", "-" or spaces, starting with a letter or digit`);
  const description = c.string(x, 'description', 'description', { nonEmpty: false });
  const modelPath = c.string(x, 'modelPath', 'modelPath', { required: true });
  checkPath(c, modelPath, 'modelPath', true);
  const servedModelName = c.string(x, 'servedModelName', 'servedModelName');

  const gpus = checkGpus(c, x);
  const layout = checkLayout(c, x);
  const basePort = c.int(x, 'basePort', 'basePort', 1, 65535) ?? (x.basePort === undefined ? DEFAULT_BASE_PORT : undefined);
  if (Array.isArray(gpus) && basePort !== undefined && layout === 'per-gpu' && basePort + gpus.length - 1 > 65535) {
    c.err('basePort', `${basePort} + ${gpus.length} instances runs past port 65535`);
  }
  const host = c.string(x, 'host', 'host');
  if (host !== undefined && /\s/.test(host)) c.err('host', `"${host}" must not contain spaces`);
  const { tp, dp, pp, ep, nnodes, enableDpAttention } = checkParallelism(c, x, layout, gpus);
  const {
    memFractionStatic,
    contextLength,
    maxRunningRequests,
    chunkedPrefillSize,
    cudaGraphMaxBs,
    quantization,
    kvCacheDtype,
    reasoningParser,
    attentionBackend,
    decodeLogInterval,
    enableHierarchicalCache,
    enableMetrics,
    trustRemoteCode,
  } = checkTuning(c, x);
  const speculative = checkSpeculative(c, x);
  const extraArgs = checkExtraArgs(c, x);
  const apiKey = x.apiKey === undefined || x.apiKey === null ? undefined : checkRef(c, x.apiKey, 'apiKey');
  checkFlagsGivenTwice(c, extraArgs, apiKey, { ...x, speculative });
  const env = checkEnv(c, x);
  const { python, venv, workDir, logDir, logFile, argOrder } = checkPlaces(c, x);
  const schema = typeof x.$schema === 'string' ? x.$schema : undefined;
  if (x.$schema !== undefined && typeof x.$schema !== 'string') c.err('$schema', 'must be a string');

  if (c.errors.length || modelPath === undefined || basePort === undefined)
    return { errors: c.errors.length ? c.errors : ['modelPath: is required'] };
  const profile: LaunchProfile = stripUndef({
    $schema: schema,
    name,
    description,
    modelPath,
    servedModelName,
    gpus,
    layout,
    basePort,
    host,
    tp,
    dp,
    memFractionStatic,
    contextLength,
    maxRunningRequests,
    chunkedPrefillSize,
    cudaGraphMaxBs,
    quantization,
    kvCacheDtype,
    speculative,
    reasoningParser,
    enableHierarchicalCache,
    enableMetrics,
    attentionBackend,
    decodeLogInterval,
    trustRemoteCode,
    pp,
    ep,
    nnodes,
    enableDpAttention,
    apiKey,
    extraArgs,
    env,
    python,
    venv,
    workDir,
    logDir,
    logFile,
    argOrder,
  }) as LaunchProfile;
  return { profile, errors: [] };
}

/** `gpus`: "all" or distinct GPU indices. */
function checkGpus(c: Checker, x: Record<string, unknown>): number[] | 'all' {
  let gpus: number[] | 'all' = 'all';
  if (x.gpus !== undefined) {
    if (x.gpus === 'all') gpus = 'all';
    else if (Array.isArray(x.gpus)) {
      const list: number[] = [];
      x.gpus.forEach((g, i) => {
        if (typeof g !== 'number' || !Number.isInteger(g) || g < 0 || g > 1023)
          c.err(`gpus[${i}]`, `must be a GPU index (an integer >= 0) (got ${show(g)})`);
        else if (list.includes(g)) c.err(`gpus[${i}]`, `GPU ${g} is listed twice`);
        else list.push(g);
      });
      if (x.gpus.length === 0) c.err('gpus', 'must list at least one GPU index, or be "all"');
      gpus = list;
    } else c.err('gpus', `must be "all" or a list of GPU indices like [0, 1, 2, 3] (got ${show(x.gpus)})`);
  }

  return gpus;
}

/** `layout`: per-gpu (the default) or single. */
function checkLayout(c: Checker, x: Record<string, unknown>): Layout {
  let layout: Layout = 'per-gpu';
  if (x.layout !== undefined) {
    if (x.layout === 'per-gpu' || x.layout === 'single') layout = x.layout;
    else
      c.err(
        'layout',
        `${show(x.layout)} is not one of per-gpu, single${typeof x.layout === 'string' ? hintOf(x.layout, ['per-gpu', 'single']) : ''}`,
      );
  }
  return layout;
}

/** tp, dp, pp, ep, nnodes and enableDpAttention, against the layout and the GPUs listed. */
function checkParallelism(c: Checker, x: Record<string, unknown>, layout: Layout, gpus: number[] | 'all') {
  const tp = c.int(x, 'tp', 'tp', 1, 1024);
  const dp = c.int(x, 'dp', 'dp', 1, 1024);
  if (layout === 'per-gpu') {
    if (tp !== undefined && tp > 1)
      c.err('tp', `is ${tp}, but layout "per-gpu" runs one single-GPU server per GPU; use layout "single" for tensor parallelism`);
    if (dp !== undefined && dp > 1)
      c.err('dp', `is ${dp}, but layout "per-gpu" already is data parallelism by hand; use layout "single" for --dp-size`);
  }
  const pp = c.int(x, 'pp', 'pp', 1, 1024);
  const ep = c.int(x, 'ep', 'ep', 1, 1024);
  const nnodes = c.int(x, 'nnodes', 'nnodes', 1, 1024);
  const enableDpAttention = c.bool(x, 'enableDpAttention', 'enableDpAttention');
  if (layout === 'per-gpu') {
    for (const [k, v] of [
      ['pp', pp],
      ['nnodes', nnodes],
    ] as const)
      if (v !== undefined && v > 1) c.err(k, `is ${v}, but layout "per-gpu" runs one single-GPU server per GPU; use layout "single"`);
  }
  if (layout === 'single' && Array.isArray(gpus) && gpus.length && (tp !== undefined || dp !== undefined)) {
    const o = { tp, dp, pp, nnodes, enableDpAttention };
    const need = gpusPerServer(o);
    const formula = `tp ${tp ?? 1}${enableDpAttention ? '' : ` × dp ${dp ?? 1}`}${pp ? ` × pp ${pp}` : ''}${nnodes ? ` / nnodes ${nnodes}` : ''}`;
    if (tp !== undefined && (dp !== undefined || enableDpAttention) && need !== gpus.length)
      c.err(
        'tp',
        `${formula} = ${need} GPUs, but gpus lists ${gpus.length}${enableDpAttention ? ' (with enableDpAttention the DP ranks share the TP GPUs)' : ''}`,
      );
    else if (gpus.length % need !== 0)
      c.err(tp !== undefined ? 'tp' : 'dp', `${need} does not divide the ${gpus.length} GPUs listed in gpus`);
  }

  return { tp, dp, pp, ep, nnodes, enableDpAttention };
}

/** The memory, batch, quantization, backend and logging settings. */
function checkTuning(c: Checker, x: Record<string, unknown>) {
  let memFractionStatic: number | undefined;
  if (x.memFractionStatic !== undefined && x.memFractionStatic !== null) {
    const v = x.memFractionStatic;
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > 1)
      c.err('memFractionStatic', `must be a number greater than 0 and at most 1, e.g. 0.88 (got ${show(v)})`);
    else memFractionStatic = v;
  }
  const contextLength = c.int(x, 'contextLength', 'contextLength', 1);
  const maxRunningRequests = c.int(x, 'maxRunningRequests', 'maxRunningRequests', 1);
  let chunkedPrefillSize = c.int(
    x,
    'chunkedPrefillSize',
    'chunkedPrefillSize',
    -1,
    Number.MAX_SAFE_INTEGER,
    ' (-1 disables chunked prefill)',
  );
  if (chunkedPrefillSize === 0) {
    c.err('chunkedPrefillSize', 'must not be 0 (use -1 to disable chunked prefill)');
    chunkedPrefillSize = undefined;
  }
  const cudaGraphMaxBs = c.int(x, 'cudaGraphMaxBs', 'cudaGraphMaxBs', 1);
  const quantization = c.string(x, 'quantization', 'quantization');
  const kvCacheDtype = c.string(x, 'kvCacheDtype', 'kvCacheDtype');
  const reasoningParser = c.string(x, 'reasoningParser', 'reasoningParser');
  const attentionBackend = c.string(x, 'attentionBackend', 'attentionBackend');
  const decodeLogInterval = c.int(x, 'decodeLogInterval', 'decodeLogInterval', 1);
  const enableHierarchicalCache = c.bool(x, 'enableHierarchicalCache', 'enableHierarchicalCache');
  const enableMetrics = c.bool(x, 'enableMetrics', 'enableMetrics');
  const trustRemoteCode = c.bool(x, 'trustRemoteCode', 'trustRemoteCode');

  return {
    memFractionStatic,
    contextLength,
    maxRunningRequests,
    chunkedPrefillSize,
    cudaGraphMaxBs,
    quantization,
    kvCacheDtype,
    reasoningParser,
    attentionBackend,
    decodeLogInterval,
    enableHierarchicalCache,
    enableMetrics,
    trustRemoteCode,
  };
}

/** `speculative`: an algorithm SGLang knows, and its numbers and draft model. */
function checkSpeculative(c: Checker, x: Record<string, unknown>): SpeculativeConfig | undefined {
  let speculative: SpeculativeConfig | undefined;
  if (x.speculative !== undefined && x.speculative !== null) {
    const s = x.speculative;
    if (!isObject(s)) c.err('speculative', `must be an object like {"algorithm": "NEXTN", "numSteps": 3} (got ${show(s)})`);
    else {
      c.unknownKeys(s, SPECULATIVE_FIELDS, 'speculative.');
      const alg = s.algorithm;
      let algorithm: SpeculativeAlgorithm | undefined;
      if (alg === undefined || alg === null) c.err('speculative.algorithm', `is required (one of ${SPECULATIVE_ALGORITHMS.join(', ')})`);
      else if (typeof alg !== 'string' || !(SPECULATIVE_ALGORITHMS as readonly string[]).includes(alg)) {
        const isMtp = typeof alg === 'string' && /mtp/i.test(alg);
        const hint = typeof alg === 'string' && !isMtp ? hintOf(alg, SPECULATIVE_ALGORITHMS) : '';
        c.err(
          'speculative.algorithm',
          `${show(alg)} is not one of ${SPECULATIVE_ALGORITHMS.join(', ')}${isMtp ? ' (MTP models run through NEXTN or EAGLE)' : hint}`,
        );
      } else algorithm = alg as SpeculativeAlgorithm;
      const numSteps = c.int(s, 'numSteps', 'speculative.numSteps', 1, 64);
      const eagleTopk = c.int(s, 'eagleTopk', 'speculative.eagleTopk', 1, 64);
      const numDraftTokens = c.int(s, 'numDraftTokens', 'speculative.numDraftTokens', 1, 1024);
      const draftModelPath = c.string(s, 'draftModelPath', 'speculative.draftModelPath');
      checkPath(c, draftModelPath, 'speculative.draftModelPath', true);
      if (algorithm) speculative = stripUndef({ algorithm, numSteps, eagleTopk, numDraftTokens, draftModelPath });
    }
  }

  return speculative;
}

/** `extraArgs`: strings (no secret value in clear) and secret references. */
function checkExtraArgs(c: Checker, x: Record<string, unknown>): ArgValue[] {
  const extraArgs: ArgValue[] = [];
  if (x.extraArgs !== undefined && x.extraArgs !== null) {
    if (!Array.isArray(x.extraArgs))
      c.err('extraArgs', `must be a list of strings like ["--log-level", "info"] (got ${show(x.extraArgs)})`);
    else {
      x.extraArgs.forEach((a, i) => {
        if (isObject(a)) {
          const r = checkRef(c, a, `extraArgs[${i}]`);
          if (r) extraArgs.push(r);
          return;
        }
        if (typeof a !== 'string') return c.err(`extraArgs[${i}]`, `must be a string (got ${show(a)})`);
        const bad = badChars(a);
        if (bad) return c.err(`extraArgs[${i}]`, `must not contain ${bad}`);
        const prev = (x.extraArgs as unknown[])[i - 1];
        const eq = a.startsWith('--') ? a.indexOf('=') : -1;
        if (eq > 2 && isSecretFlag(a.slice(0, eq)) && a.slice(eq + 1) !== '') return c.err(`extraArgs[${i}]`, clearSecret(a.slice(0, eq)));
        if (typeof prev === 'string' && prev.startsWith('--') && !prev.includes('=') && isSecretFlag(prev) && !a.startsWith('--'))
          return c.err(`extraArgs[${i}]`, clearSecret(prev));
        extraArgs.push(a);
      });
    }
  }
  return extraArgs;
}

/** A flag of extraArgs that a field of the profile (or apiKey, basePort, modelPath) already sets. */
function checkFlagsGivenTwice(
  c: Checker,
  extraArgs: ArgValue[],
  apiKey: SecretRef | undefined,
  profileSoFar: Record<string, unknown>,
): void {
  extraArgs.forEach((a, i) => {
    if (typeof a !== 'string' || !a.startsWith('--')) return;
    if (apiKey && resolveFlag(a.split('=')[0]) === '--api-key')
      return c.err(`extraArgs[${i}]`, '--api-key is already set by apiKey; give it only once');
    const flag = a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
    if (RESERVED_FLAGS.includes(flag)) {
      c.err(
        `extraArgs[${i}]`,
        `${flag} is set by ${flag === '--port' ? 'basePort (instance k listens on basePort + k)' : 'modelPath'}; remove it from extraArgs`,
      );
      return;
    }
    const spec = FLAG_BY_NAME.get(flag);
    if (spec && getField(profileSoFar, spec.field) !== undefined)
      c.err(`extraArgs[${i}]`, `${flag} is already set by ${spec.field}; give it only once`);
  });
}

/** `env`: variable names and values (a secret only as a reference; never CUDA_VISIBLE_DEVICES). */
function checkEnv(c: Checker, x: Record<string, unknown>): Record<string, ArgValue> {
  const env: Record<string, ArgValue> = {};
  if (x.env !== undefined && x.env !== null) {
    if (!isObject(x.env)) c.err('env', `must be an object of NAME: "value" (got ${show(x.env)})`);
    else {
      for (const [k, v] of Object.entries(x.env)) {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
          c.err(`env.${k}`, 'is not a valid environment variable name (letters, digits and "_", not starting with a digit)');
        else if (k === 'CUDA_VISIBLE_DEVICES') c.err(`env.${k}`, 'is set per instance from gpus and layout; use "gpus" instead');
        else if (isObject(v)) {
          const r = checkRef(c, v, `env.${k}`);
          if (r) env[k] = r;
        } else if (typeof v !== 'string') c.err(`env.${k}`, `must be a string (got ${show(v)}); write numbers in quotes`);
        else if (v.includes('\0')) c.err(`env.${k}`, 'must not contain a NUL character');
        else if (isSecretName(k) && v !== '')
          c.err(
            `env.${k}`,
            `is a secret; the profile must not hold it: write {"env": "${k}"} (or {"secret": "${k}"}) and supply the value at launch`,
          );
        else env[k] = v;
      }
    }
  }

  return env;
}

/** The interpreter, venv, folders and log file, and argOrder. */
function checkPlaces(c: Checker, x: Record<string, unknown>) {
  const python = c.string(x, 'python', 'python');
  if (python !== undefined && /^~[^/]/.test(python)) c.err('python', `"${python}": only "~/..." is expanded`);
  const venv = c.string(x, 'venv', 'venv');
  checkPath(c, venv, 'venv', true);
  const workDir = c.string(x, 'workDir', 'workDir');
  checkPath(c, workDir, 'workDir', false);
  const logDir = c.string(x, 'logDir', 'logDir');
  checkPath(c, logDir, 'logDir', true);
  const logFile = c.string(x, 'logFile', 'logFile');
  checkPath(c, logFile, 'logFile', true);
  let argOrder: string[] | undefined;
  if (x.argOrder !== undefined && x.argOrder !== null) {
    if (!Array.isArray(x.argOrder) || x.argOrder.some((a) => typeof a !== 'string' || !/^--[A-Za-z0-9][A-Za-z0-9_.-]*=?$/.test(a)))
      c.err('argOrder', `must be a list of flags like ["--model-path", "--tp", "--port"] (got ${show(x.argOrder)})`);
    else argOrder = x.argOrder as string[];
  }
  return { python, venv, workDir, logDir, logFile, argOrder };
}

function clearSecret(flag: string): string {
  return (
    `the value of ${flag} is a secret; the profile must not hold it: write a reference {"env": "NAME"} or ` +
    `{"secret": "NAME"} in its place and supply the value at launch`
  );
}

/** A secret reference {"env": "NAME"} / {"secret": "NAME"}, or an error naming the field. */
function checkRef(c: Checker, v: unknown, field: string): SecretRef | undefined {
  if (!isSecretRef(v)) {
    c.err(field, `must be a secret reference like {"env": "SGLANG_API_KEY"} or {"secret": "my-key"} (got ${show(v)})`);
    return undefined;
  }
  const n = secretName(v);
  if ('env' in v ? !/^[A-Za-z_][A-Za-z0-9_]{0,127}$/.test(n) : !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(n)) {
    c.err(
      field,
      `${JSON.stringify(n)} is not a valid ${'env' in v ? 'environment variable' : 'secret'} name (letters, digits, "_"${'env' in v ? '' : ', "." and "-"'})`,
    );
    return undefined;
  }
  return v;
}

function hintOf(word: string, choices: readonly string[]): string {
  const h = closest(word, choices);
  return h ? ` (did you mean "${h}"?)` : '';
}

export function stripUndef<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
}

export function getField(p: Record<string, unknown>, field: string): unknown {
  if (field.startsWith('speculative.')) {
    const s = p.speculative;
    return isObject(s) ? s[field.slice('speculative.'.length)] : undefined;
  }
  return p[field];
}

/** Parse and validate the text of a profile file; JSON syntax errors name line and column. */
export function parseProfileText(text: string): ValidationResult {
  let data: unknown;
  try {
    data = JSON.parse(text.replace(/^\uFEFF/, ''));
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    const m = /position (\d+)/.exec(msg);
    if (m) {
      const pos = Number(m[1]);
      const before = text.slice(0, pos);
      const line = before.split('\n').length;
      const col = pos - before.lastIndexOf('\n');
      return { errors: [`(json): ${msg.replace(/ in JSON at position \d+.*$/, '')} at line ${line}, column ${col}`] };
    }
    return { errors: [`(json): ${msg}`] };
  }
  return validateProfile(data);
}

/** The profile's name for file names: the name field, else the given fallback (a file's base name). */
export function profileName(p: LaunchProfile, fallback = 'profile'): string {
  const n = (p.name ?? fallback)
    .replace(/[^A-Za-z0-9._-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 60);
  return n || 'profile';
}
