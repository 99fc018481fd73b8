/**
 * What salvage records so that `restore` can carry the job to the next node: the launch profile of the running
 * servers (secrets as references, never values), the generation client's command line, working folder and
 * environment variable NAMES (values never leave the node), the old home, and each file's mode.
 * Called by the salvage flow before its final pass (the servers are still running); it never fails a salvage.
 */
import { runOperation, RemoteOperation } from '../../remote/operation';
import type { AbortLike, Transport } from '../../ssh/transport';
import type { ListedProcess, SalvageListing } from '../plan/listing';
import type { LaunchProfile } from '../../launch/profile';
import { errorMessage } from '../../util/errors';
import { shq } from '../../util/quote';
import { redactArgv } from '../../util/redact';
import type { Logger } from '../../util/logger';

interface RestoreClient {
  pid: number;
  /** Command line, secret values redacted. */
  argv: string[];
  cwd: string | null;
  /** Names of its environment variables (values never recorded). */
  envNames: string[];
}

export interface RestoreCapture {
  version: 1;
  capturedAt: string;
  /** The old node's home (mapped to the new node's home by default). */
  home: string | null;
  /** Launch profile groups reproducing the servers that ran at salvage time (null: none ran). */
  profile: LaunchProfile[] | null;
  /** What the captured profile needs edited (from the profile validator). */
  profileErrors: string[];
  /** The servers as they ran: port, GPUs, model path. */
  servers: Array<{ port: number; gpus: number[]; modelPath: string | null }>;
  /** The generation client (a process that talked to the servers), when one ran. */
  client: RestoreClient | null;
  /** Octal mode of each file by remote path (exec bits kept on restore). */
  modes: Record<string, string>;
  /** What could not be recorded. */
  problems: string[];
}

/** One octal mode per path, in order ("-" when the file is gone); paths travel NUL-separated on stdin. */
export function modesOperation(paths: string[]): RemoteOperation<Array<string | null>> {
  return {
    name: 'file-modes',
    // One `stat` per xargs batch (a `stat` per file cost ~2 ms each: 60 s of a 30,000-file salvage), each answer
    // `mode NUL name NUL`, matched back by name: a file gone since the listing has no answer.
    // GPU_SESSIONS_OP: ours (the final pass's listing runs beside it and never takes it for a process of the work)
    command: `GPU_SESSIONS_OP=1 xargs -0 -r stat --printf '%a\\0%n\\0' -- 2>/dev/null`,
    stdin: Buffer.from(paths.map((p) => p + '\0').join('')),
    timeoutMs: 120_000,
    maxOutputBytes: 16 * 1024 * 1024,
    idempotent: true,
    parse: (r) => {
      const f = r.stdout.toString('utf8').split('\0');
      const byName = new Map<string, string>();
      for (let i = 0; i + 1 < f.length; i += 2) if (/^[0-7]{3,4}$/.test(f[i])) byName.set(f[i + 1], f[i]);
      return paths.map((p) => byName.get(p) ?? null);
    },
  };
}

/** Names of a process's environment variables (the values stay on the node). */
function envNamesOperation(pid: number): RemoteOperation<string[]> {
  if (!Number.isInteger(pid) || pid <= 0) throw new Error(`bad pid ${pid}`);
  return {
    name: 'env-names',
    // ours, with its pipe (GPU_SESSIONS_OP: the final pass's listing runs beside it)
    command: `GPU_SESSIONS_OP=1 sh -c ${shq(
      `tr '\\000' '\\n' < /proc/${pid}/environ 2>/dev/null | sed -n 's/^\\([A-Za-z_][A-Za-z0-9_]*\\)=.*/\\1/p' | sort -u`,
    )}`,
    timeoutMs: 30_000,
    maxOutputBytes: 1024 * 1024,
    idempotent: true,
    parse: (r) => r.stdout.toString('utf8').split('\n').filter(Boolean),
  };
}

const SHELLS = /^(-?(ba|z|da|k|fi)?sh|tmux.*|screen|sshd.*|sudo|su|nohup|setsid|tail|less|top|htop|watch|sleep)$/;

/** The generation client: a process (not a server, not a shell) that talks to a server port; else one writing under the folders. */
export function findClient(L: Pick<SalvageListing, 'processes' | 'servers' | 'writers'>): ListedProcess | null {
  const serverPids = new Set(L.servers.map((s) => s.pid));
  const base = (p: ListedProcess) => (p.argv[0] ?? '').split('/').pop() ?? '';
  const usable = L.processes.filter(
    (p) => !serverPids.has(p.pid) && p.argv.length > 0 && !SHELLS.test(base(p)) && !p.argv.some((a) => a === 'sglang.launch_server'),
  );
  const talks = usable.filter((p) => p.evidence.includes('n'));
  if (talks.length) return talks.sort((a, b) => a.pid - b.pid)[0];
  const writerPids = new Set(L.writers.filter((w) => !w.server).map((w) => w.pid));
  return usable.filter((p) => writerPids.has(p.pid)).sort((a, b) => a.pid - b.pid)[0] ?? null;
}

interface CaptureForRestoreOptions {
  signal?: AbortLike;
  log?: Logger;
}

/** Everything restore needs from the old node; each part that fails is named in `problems`, nothing throws. */
export async function captureForRestore(
  t: Transport,
  L: SalvageListing,
  filePaths: string[],
  o: CaptureForRestoreOptions = {},
): Promise<RestoreCapture> {
  const cap: RestoreCapture = {
    version: 1,
    capturedAt: new Date().toISOString(),
    home: L.home || null,
    profile: null,
    profileErrors: [],
    servers: [],
    client: null,
    modes: {},
    problems: [],
  };
  const fail = (what: string, e: unknown) => {
    cap.problems.push(`${what}: ${errorMessage(e)}`);
    o.log?.warn(`restore capture: ${what}: ${errorMessage(e)}`);
  };
  if (L.servers.length) {
    try {
      const { captureCandidates, captureServersAsProfile } = await import('../../launch/capture');
      // Exactly the salvage's servers (the node's, as its tree lists them): another SGLang-looking process on the
      // machine (outside a simulated node's folder, another job's) is not this job's and would ask for its GPUs too.
      const c = await captureCandidates(
        t,
        L.servers.map((s) => s.port),
        o.signal,
        true,
      );
      if (c.servers.length) {
        const p = captureServersAsProfile(c.servers, 'restore');
        const { parseProfileText } = await import('../../launch/profile');
        cap.profile = parseProfileText(p.json).groups ?? (JSON.parse(JSON.stringify(p.groups)) as LaunchProfile[]);
        cap.profileErrors = p.errors;
        cap.servers = c.servers.map((s) => ({ port: s.port, gpus: s.gpus ?? [], modelPath: s.modelPath ?? null }));
      }
    } catch (e) {
      fail('the launch profile of the running servers', e);
    }
  }
  const client = findClient(L);
  if (client) {
    let envNames: string[] = [];
    try {
      envNames = await runOperation(t, envNamesOperation(client.pid), o.signal);
    } catch (e) {
      fail(`the environment names of pid ${client.pid}`, e);
    }
    cap.client = { pid: client.pid, argv: redactArgv(client.argv), cwd: client.cwd, envNames: envNames.filter((n) => n.length < 200) };
  }
  try {
    const CHUNK = 20_000;
    for (let i = 0; i < filePaths.length; i += CHUNK) {
      const part = filePaths.slice(i, i + CHUNK);
      const modes = await runOperation(t, modesOperation(part), o.signal);
      part.forEach((p, k) => {
        if (modes[k]) cap.modes[p] = modes[k]!;
      });
    }
  } catch (e) {
    fail('file modes', e);
  }
  return cap;
}
