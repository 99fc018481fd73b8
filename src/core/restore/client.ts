/**
 * The generation client on the new node: its command line and working folder as salvage recorded them, paths
 * mapped. Printed after a restore; `--resume-client` starts it detached (its own log next to it). A client that
 * keeps its progress (`.done_indices`, a progress file) resumes where the old node stopped, since those files
 * were restored byte-exact.
 */
import { RemoteOperation, stderrTail } from '../remote/operation';
import { shJoin, shq } from '../util/quote';
import { REDACTED, isSecretName } from '../util/redact';
import type { RestoreCapture } from '../salvage/capture/restoreCapture';
import { FolderMap, mapPath } from './mapping';

export interface ClientResume {
  argv: string[];
  cwd: string | null;
  /** The command to run on the new node (cd, venv, the client; its output to `log`). */
  command: string;
  log: string | null;
  envNames: string[];
  /** Secret-named variables the client had: set them on the new node before it runs. */
  secretEnv: string[];
  /** Why it cannot be started for the user (a redacted argument). */
  blocked: string | null;
}

function mapArg(a: string, maps: readonly FolderMap[]): string {
  if (a.startsWith('/')) return mapPath(a, maps) ?? a;
  const eq = /^(--?[A-Za-z0-9_.-]+=)(\/.*)$/.exec(a);
  if (eq) return eq[1] + (mapPath(eq[2], maps) ?? eq[2]);
  return a;
}

export function clientResume(cap: RestoreCapture | null | undefined, maps: readonly FolderMap[]): ClientResume | null {
  const c = cap?.client;
  if (!c || !c.argv.length) return null;
  const argv = c.argv.map((a) => mapArg(a, maps));
  const cwd = c.cwd ? (mapPath(c.cwd, maps) ?? c.cwd) : null;
  const venv = cap?.profile?.[0]?.venv;
  const venvMapped = venv ? (venv.startsWith('/') ? (mapPath(venv, maps) ?? venv) : venv) : null;
  // A new file each start (mktemp: created exclusively, never through a link a restored folder holds).
  const log = cwd ? `${cwd}/gs-client-resume-XXXXXX.log` : null;
  const activate =
    venvMapped && c.envNames.includes('VIRTUAL_ENV')
      ? `. ${venvMapped.startsWith('~/') ? '"$HOME"/' + shq(venvMapped.slice(2)) : shq(venvMapped)}/bin/activate && `
      : '';
  const command = `${cwd ? `cd ${shq(cwd)} && ` : ''}${activate}${shJoin(argv)}`;
  const blocked = argv.some((a) => a.includes(REDACTED))
    ? 'its command line holds a secret (redacted at salvage): start it by hand with the value'
    : null;
  return { argv, cwd, command, log, envNames: c.envNames, secretEnv: c.envNames.filter((n) => isSecretName(n)), blocked };
}

/**
 * Start the client detached (setsid nohup, stdin /dev/null, output to a new log made by mktemp: created with
 * O_EXCL, so a restored `gs-client-resume.log -> ../.ssh/authorized_keys` is never followed or replaced);
 * answers its pid and the log's path.
 */
export function startClientOperation(r: ClientResume): RemoteOperation<{ pid: number | null; log: string | null; error: string | null }> {
  const dir = r.log ? r.log.slice(0, r.log.lastIndexOf('/')) : null;
  const mk = dir
    ? `L=$(mktemp -- ${shq(`${dir}/gs-client-resume-XXXXXX.log`)} 2>/dev/null || mktemp -- ${shq(`${dir}/gs-client-resume.XXXXXX`)}) || ` +
      `{ echo "GS-NOLOG cannot create a log file in ${dir.replace(/[^A-Za-z0-9_./ -]/g, '?')}"; exit 0; }\n`
    : 'L=/dev/null\n';
  const script = `${mk}( ${r.command} ) >> "$L" 2>&1 < /dev/null &\necho "GS-PID $!"\nprintf 'GS-LOG %s\\n' "$L"\n`;
  return {
    name: 'restore-start-client',
    command: `setsid sh -c ${shq(script)}`,
    timeoutMs: 30_000,
    maxOutputBytes: 64 * 1024,
    parse: (res) => {
      const out = res.stdout.toString('utf8');
      const m = /GS-PID (\d+)/.exec(out);
      const log = /GS-LOG (.*)/.exec(out)?.[1] ?? null;
      const nolog = /GS-NOLOG (.*)/.exec(out);
      if (nolog) return { pid: null, log: null, error: `the client was not started: ${nolog[1]}` };
      return m
        ? { pid: Number(m[1]), log: log === '/dev/null' ? null : log, error: null }
        : { pid: null, log: null, error: `the client did not start (exit ${res.code}: ${stderrTail(res)})` };
    },
  };
}
