/**
 * Scanning servers: the node SGLang servers with pgid, owner and launch-relevant environment (capture, stop).
 */
import { procRecordsLoop } from '../node/probe';
import { RemoteOperation, incomplete, runOperation } from '../remote/operation';
import { sectionPrologue, sectionsComplete, splitSections } from '../remote/sections';
import { SglangServer, decodeHexField, findServers, parseProcRecords } from '../sglang/serverArgv';
import { AbortLike, Transport } from '../ssh/transport';
import { nodeScript } from '../util/nodeScripts';
import { isSecretName, rememberSecret } from '../util/redact';
import { nonce } from './launchCommon';

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

interface ServerScan {
  servers: ScannedServer[];
  ownUid: number | null;
  /** pid → ppid / pgid / uid, for every process (descendants of a server). */
  procs: Map<number, { ppid: number; pgid: number; uid: number }>;
}

/** Variables that change how SGLang runs and are worth keeping in a captured profile. */
const ENV_KEEP = new RegExp(
  '^(SGLANG_[A-Z0-9_]*|NCCL_[A-Z0-9_]*|CUDA_[A-Z0-9_]*|TORCH_[A-Z0-9_]*|PYTORCH_[A-Z0-9_]*|' +
    'HF_HOME|HF_HUB_OFFLINE|HF_HUB_ENABLE_HF_TRANSFER|HF_HUB_CACHE|TRANSFORMERS_OFFLINE|TRANSFORMERS_CACHE|' +
    'FLASHINFER_[A-Z0-9_]*|TRITON_[A-Z0-9_]*|OMP_NUM_THREADS|TOKENIZERS_PARALLELISM|NVIDIA_[A-Z0-9_]*|VIRTUAL_ENV)=',
);
const ENV_SECRET = /(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)/i;

/** `ownOnly`: another user's processes are skipped on the node before anything is read (a co-tenant's hundreds of
 * processes cost a restore capture 30–50 s). */
export function buildScanScript(n: string, ownOnly = false): string {
  const header = [sectionPrologue(n), `proc_records() {\n:\n${procRecordsLoop('scan_env', { ownOnly })}\n}`];
  return `${header.join('\n')}\n${nodeScript('launch/serverScan.sh')}`;
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
export function scanOperation(ownOnly = false): RemoteOperation<ServerScan> {
  const n = nonce();
  return {
    name: 'server-scan',
    // ours: a salvage listing running beside it (the final pass's, during restore's capture) never takes it for the work's
    command: 'GPU_SESSIONS_OP=1 sh -s',
    stdin: buildScanScript(n, ownOnly),
    timeoutMs: 60_000,
    maxOutputBytes: 16 * 1024 * 1024,
    acceptTruncated: true,
    idempotent: true,
    parse: (r) => parseScanOutput(r.stdout.toString('utf8'), n),
  };
}

/** The node's SGLang servers with owner, process group and environment, in ONE exec. */
export async function scanServers(t: Transport, signal?: AbortLike, ownOnly = false): Promise<ServerScan> {
  return runOperation(t, scanOperation(ownOnly), signal);
}
